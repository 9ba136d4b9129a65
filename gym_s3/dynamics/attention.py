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

    def _attend(self, q: Tensor, kv: Tensor, bias: Tensor) -> Tensor:
        """Attention of queries ``(B, T, d)`` over keys/values ``(B, S, 2d)`` with ``bias``.

        ``bias`` is ``(heads, T, S)`` (``-inf`` where masked). Returns ``(B, T, d)``.
        """
        b, t, d = q.shape
        s = kv.shape[1]
        q = q.view(b, t, self.heads, self.d_head).transpose(1, 2)
        k, v = kv.view(b, s, 2, self.heads, self.d_head).permute(2, 0, 3, 1, 4)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=bias.to(q.dtype))
        return out.transpose(1, 2).reshape(b, t, d)

    def slopes(self) -> Tensor:
        """Positive ALiBi slope per head ``(heads,)``."""
        return F.softplus(self.slope_raw)

    def forward_all(self, x: Tensor, window: int) -> tuple[Tensor, Tensor]:
        """Process all T tokens ``(B, T, d)`` causally.

        Returns:
            Outputs ``(B, T, d)`` and keys/values ``(B, T, 2d)``.
        """
        t = x.shape[1]
        h = self.norm1(x)
        q, kv = self.qkv(h).split([x.shape[-1], 2 * x.shape[-1]], dim=-1)
        pos = torch.arange(t, device=x.device)
        age = (pos[:, None] - pos[None, :]).to(x.dtype)  # (T, S): query - key
        visible = (age >= 0) & (age < window)
        bias = -self.slopes()[:, None, None].to(x.dtype) * age
        bias = bias.masked_fill(~visible, float("-inf"))
        x = x + self.proj(self._attend(q, kv, bias))
        x = x + self.ff(self.norm2(x))
        return x, kv

    def forward_step(self, x: Tensor, cache: Tensor) -> tuple[Tensor, Tensor]:
        """One new token ``(B, d)`` against cached keys/values ``(B, W-1, 2d)``.

        Returns the output ``(B, d)`` and the shifted cache ``(B, W-1, 2d)``.
        """
        d = x.shape[-1]
        q, kv = self.qkv(self.norm1(x)).split([d, 2 * d], dim=-1)
        keys = torch.cat([cache, kv[:, None]], dim=1)  # (B, W, 2d), newest last
        w = keys.shape[1]
        age = torch.arange(w - 1, -1, -1, device=x.device, dtype=x.dtype)
        bias = (-self.slopes()[:, None].to(x.dtype) * age)[:, None, :]  # (heads, 1, W)
        x = x + self.proj(self._attend(q[:, None], keys, bias)[:, 0])
        x = x + self.ff(self.norm2(x))
        return x, keys[:, 1:]


class SlidingWindowTransformer(nn.Module):
    """Token MLP embedding -> L cached sliding-window attention blocks -> MLP head.

    Args:
        in_features: features per token.
        out_features: outputs of the newest token.
        d_model: width.
        heads: attention heads (must divide ``d_model``).
        layers: attention blocks.
        window: tokens each block attends to (including the newest).
        ff_mult: feed-forward expansion.
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        d_model: int = 48,
        heads: int = 4,
        layers: int = 1,
        window: int = 10,
        ff_mult: int = 2,
    ) -> None:
        super().__init__()
        self.d_model = d_model
        self.window = window
        self.embed = nn.Sequential(
            nn.Linear(in_features, d_model), nn.GELU(), nn.Linear(d_model, d_model)
        )
        self.blocks = nn.ModuleList(_Block(d_model, heads, ff_mult) for _ in range(layers))
        self.head = nn.Sequential(
            nn.LayerNorm(d_model),
            nn.Linear(d_model, d_model),
            nn.GELU(),
            nn.Linear(d_model, out_features),
        )

    @property
    def receptive_field(self) -> int:
        """Tokens the newest output depends on: ``layers * (window - 1) + 1``."""
        return len(self.blocks) * (self.window - 1) + 1

    def cache_keys(self) -> tuple[str, ...]:
        """Names of the per-layer caches in ``BackendState.extra``."""
        return tuple(f"kv{i}" for i in range(len(self.blocks)))

    def forward_window(self, tokens: Tensor) -> tuple[Tensor, dict[str, Tensor]]:
        """Recompute everything over ``(B, T, F)`` tokens (oldest first).

        Returns:
            The newest token's output ``(B, out)`` and the caches ``{kv<l>: (B, W-1, 2d)}`` left
            after the last token (for continuing with :meth:`forward_step`).
        """
        x = self.embed(tokens)
        caches = {}
        keep = self.window - 1
        for key, block in zip(self.cache_keys(), self.blocks, strict=True):
            x, kv = block.forward_all(x, self.window)
            caches[key] = _last(kv, keep)
        return self.head(x[:, -1]), caches

    def forward_step(
        self, token: Tensor, caches: dict[str, Tensor]
    ) -> tuple[Tensor, dict[str, Tensor]]:
        """Process ONE new token ``(B, F)`` with the carried caches.

        Returns:
            The output ``(B, out)`` and the caches shifted by one token.
        """
        x = self.embed(token)
        new = {}
        for key, block in zip(self.cache_keys(), self.blocks, strict=True):
            x, new[key] = block.forward_step(x, caches[key])
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
