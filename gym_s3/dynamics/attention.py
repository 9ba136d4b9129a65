"""A causal sliding-window transformer that carries its keys and values forward.

Every layer lets a token attend to itself and the ``window - 1`` tokens before it, with ALiBi
biases (``-slope_h * age``, age 0 = the token itself, one learnable positive slope per head and
layer). Because the bias depends only on the *relative* age, the keys and values of past tokens
never change as the window slides: a step embeds ONE new token, attends to the cached keys and
values of the last ``window - 1`` tokens per layer, and shifts the caches by one. The result equals
recomputing the whole window (:meth:`SlidingWindowTransformer.forward_window` on the last
``receptive_field`` tokens), which the tests check.

With L layers the newest output depends on ``L * (window - 1) + 1`` tokens (its receptive field);
the backends use that as their history length.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn


def alibi_slopes(heads: int) -> Tensor:
    """Geometric ALiBi slopes ``2^(-8 i / heads)``, i = 1..heads (Press et al., 2022)."""
    return torch.tensor([2.0 ** (-8.0 * (i + 1) / heads) for i in range(heads)])


class _Block(nn.Module):
    """Pre-norm attention + feed-forward block whose keys/values can be cached."""

    def __init__(self, d_model: int, heads: int, ff_mult: int) -> None:
        super().__init__()
        self.heads = heads
        self.d_head = d_model // heads
        self.norm1 = nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.ff = nn.Sequential(
            nn.Linear(d_model, ff_mult * d_model), nn.GELU(), nn.Linear(ff_mult * d_model, d_model)
        )
        # learnable ALiBi slopes (softplus keeps them positive), initialised geometrically
        slopes = alibi_slopes(heads)
        self.slope_raw = nn.Parameter(slopes + torch.log(-torch.expm1(-slopes)))

    def slopes(self) -> Tensor:
        """Positive ALiBi slope per head ``(heads,)``."""
        return F.softplus(self.slope_raw)

    def forward_all(self, x: Tensor, window: int) -> tuple[Tensor, Tensor, Tensor]:
        """Process all T tokens ``(B, T, d)`` causally (each sees the last ``window`` tokens).

        Returns:
            Outputs ``(B, T, d)``, keys ``(B, T, d)`` and values ``(B, T, d)``.
        """
        b, t, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(d, dim=-1)
        pos = torch.arange(t, device=x.device)
        age = (pos[:, None] - pos[None, :]).to(x.dtype)  # (T, S): query - key
        visible = (age >= 0) & (age < window)
        bias = -self.slopes()[:, None, None].to(x.dtype) * age
        bias = bias.masked_fill(~visible, float("-inf"))

        def heads(z: Tensor) -> Tensor:
            return z.view(b, t, self.heads, self.d_head).transpose(1, 2)

        att = F.scaled_dot_product_attention(heads(q), heads(k), heads(v), attn_mask=bias)
        x = x + self.proj(att.transpose(1, 2).reshape(b, t, d))
        x = x + self.ff(self.norm2(x))
        return x, k, v

    def forward_steady(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """A token ``(B, d)`` that every visible token equals: attention returns its own value.

        Returns:
            The output ``(B, d)``, its key ``(B, d)`` and its value ``(B, d)``.
        """
        d = x.shape[-1]
        _, k, v = self.qkv(self.norm1(x)).split(d, dim=-1)
        x = x + self.proj(v)
        x = x + self.ff(self.norm2(x))
        return x, k, v

    def forward_step(
        self, x: Tensor, k_cache: Tensor, v_cache: Tensor
    ) -> tuple[Tensor, Tensor, Tensor]:
        """One new token ``(B, d)`` against cached keys and values ``(B, W-1, d)``.

        Attention of a single query is written as broadcast products and sums (much faster on a
        CPU than batched matrix products of 1 x W matrices).

        Returns:
            The output ``(B, d)`` and the keys and values shifted by one token.
        """
        b, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(d, dim=-1)
        keys = torch.cat([k_cache, k[:, None]], dim=1)  # (B, W, d), newest last
        values = torch.cat([v_cache, v[:, None]], dim=1)
        w = keys.shape[1]
        age = torch.arange(w - 1, -1, -1, device=x.device, dtype=x.dtype)
        bias = -age[:, None] * self.slopes().to(x.dtype)  # (W, heads)
        scores = (keys * (q * self.d_head**-0.5)[:, None, :]).view(b, w, self.heads, -1).sum(-1)
        p = torch.softmax(scores + bias, dim=1)  # (B, W, heads)
        att = (values.view(b, w, self.heads, -1) * p[..., None]).sum(1).reshape(b, d)
        x = x + self.proj(att)
        x = x + self.ff(self.norm2(x))
        return x, keys[:, 1:], values[:, 1:]


class SlidingWindowTransformer(nn.Module):
    """Token MLP embedding -> L cached sliding-window attention blocks -> MLP head.

    The per-token MLPs (embedding, feed-forward, head) are ``ff_mult * d_model`` wide; only
    ``d_model`` sets the size of the caches (and the cost of attending to them).

    Args:
        in_features: features per token.
        out_features: outputs of the newest token.
        d_model: width.
        heads: attention heads (must divide ``d_model``).
        layers: attention blocks.
        window: tokens each block attends to (including the newest).
        ff_mult: width of the per-token MLPs over ``d_model``.
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        d_model: int = 32,
        heads: int = 2,
        layers: int = 1,
        window: int = 10,
        ff_mult: int = 2,
    ) -> None:
        super().__init__()
        self.d_model = d_model
        self.window = window
        hidden = ff_mult * d_model
        self.embed = nn.Sequential(
            nn.Linear(in_features, hidden), nn.GELU(), nn.Linear(hidden, d_model)
        )
        self.blocks = nn.ModuleList(_Block(d_model, heads, ff_mult) for _ in range(layers))
        self.head = nn.Sequential(
            nn.LayerNorm(d_model),
            nn.Linear(d_model, hidden),
            nn.GELU(),
            nn.Linear(hidden, out_features),
        )

    @property
    def receptive_field(self) -> int:
        """Tokens the newest output depends on: ``layers * (window - 1) + 1``."""
        return len(self.blocks) * (self.window - 1) + 1

    def cache_keys(self) -> tuple[str, ...]:
        """Names of the caches in ``BackendState.extra``: ``k<l>``, ``v<l>`` per layer."""
        return tuple(f"{kind}{i}" for i in range(len(self.blocks)) for kind in ("k", "v"))

    def forward_window(self, tokens: Tensor) -> tuple[Tensor, dict[str, Tensor]]:
        """Recompute everything over ``(B, T, F)`` tokens (oldest first).

        Returns:
            The newest token's output ``(B, out)`` and the caches ``{k<l>, v<l>: (B, W-1, d)}``
            left after the last token (for continuing with :meth:`forward_step`).
        """
        x = self.embed(tokens)
        caches = {}
        keep = self.window - 1
        for i, block in enumerate(self.blocks):
            x, k, v = block.forward_all(x, self.window)
            caches[f"k{i}"], caches[f"v{i}"] = _last(k, keep), _last(v, keep)
        return self.head(x[:, -1]), caches

    def steady_caches(self, token: Tensor) -> dict[str, Tensor]:
        """The caches ``{k<l>, v<l>: (B, W-1, d)}`` after a long run of one token ``(B, F)``.

        Attention averages values. When every token a query sees is the same, the average is that
        token's value whatever the weights, so every position of every layer holds the same
        output, key and value: one token's pass gives what :meth:`forward_window` gives on
        ``receptive_field - 1`` copies (equal to float rounding) at a fraction of its cost. Fresh
        cars in steady motion start from such a history.
        """
        x = self.embed(token)
        keep = self.window - 1
        caches = {}
        for i, block in enumerate(self.blocks):
            x, k, v = block.forward_steady(x)
            caches[f"k{i}"] = k[:, None].expand(-1, keep, -1).contiguous()
            caches[f"v{i}"] = v[:, None].expand(-1, keep, -1).contiguous()
        return caches

    def forward_step(
        self, token: Tensor, caches: dict[str, Tensor]
    ) -> tuple[Tensor, dict[str, Tensor]]:
        """Process ONE new token ``(B, F)`` with the carried caches.

        Returns:
            The output ``(B, out)`` and the caches shifted by one token.
        """
        x = self.embed(token)
        new = {}
        for i, block in enumerate(self.blocks):
            x, new[f"k{i}"], new[f"v{i}"] = block.forward_step(x, caches[f"k{i}"], caches[f"v{i}"])
        return self.head(x), new

    def zero_head_(self) -> None:
        """Make the output exactly zero at initialisation (for residual models)."""
        with torch.no_grad():
            self.head[-1].weight.zero_()
            self.head[-1].bias.zero_()


def _last(kv: Tensor, keep: int) -> Tensor:
    """The last ``keep`` rows of ``(B, T, C)``, front-padded by repeating row 0 if ``T < keep``."""
    t = kv.shape[1]
    if t >= keep:
        return kv[:, t - keep :]
    return torch.cat([kv[:, :1].expand(-1, keep - t, -1), kv], dim=1)


def param_count(module: nn.Module) -> int:
    """Number of trainable scalars of ``module``."""
    return sum(p.numel() for p in module.parameters())
