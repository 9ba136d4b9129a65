"""Networks of the PPO policy: a running observation normaliser, a Gaussian actor and a critic.

The actor outputs the pre-squash mean and a state-independent scale of a ``TanhNormal`` over the
action box ``[-1, 1]^2``; its deterministic action is ``tanh(loc)``. The normaliser is shared by
actor and critic (a privileged critic has its own, over the longer observation), updated from
collected batches (not inside ``forward``); the actor's is saved with the checkpoint, so a policy
evaluated in ``S3BeamNG-v0`` sees observations scaled exactly as in training.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor, nn

from policies.config import LOG_STD_RANGE


class RunningNorm(nn.Module):
    """Running mean/variance of observations, ``(x - mean) / sqrt(var + eps)`` clipped to ±clip.

    Args:
        size: feature count F.
        clip: clip of the normalised value.
        eps: variance floor.
    """

    def __init__(self, size: int, clip: float = 10.0, eps: float = 1e-6) -> None:
        super().__init__()
        self.clip = clip
        self.eps = eps
        self.register_buffer("mean", torch.zeros(size, dtype=torch.float64))
        self.register_buffer("var", torch.ones(size, dtype=torch.float64))
        self.register_buffer("count", torch.zeros((), dtype=torch.float64))

    @torch.no_grad()
    def update(self, x: Tensor) -> None:
        """Merge the statistics of a batch ``(..., F)`` (non-finite rows are ignored)."""
        flat = x.reshape(-1, x.shape[-1]).to(torch.float64)
        flat = flat[torch.isfinite(flat).all(dim=-1)]
        if flat.shape[0] == 0:
            return
        self.merge(flat.shape[0], flat.mean(dim=0), flat.var(dim=0, unbiased=False))

    @torch.no_grad()
    def merge(self, count: float, mean: Tensor, var: Tensor) -> None:
        """Merge the moments of another sample: Chan et al.'s parallel update.

        Args:
            count: its number of rows.
            mean: ``(F,)`` its mean.
            var: ``(F,)`` its population variance.
        """
        if count <= 0:
            return
        mean = mean.to(self.mean)
        total = self.count + count
        delta = mean - self.mean
        self.mean += delta * count / total
        self.var.copy_((self.var * self.count + var.to(self.var) * count
                        + delta.square() * self.count * count / total) / total)  # fmt: skip
        self.count.copy_(total)

    def forward(self, x: Tensor) -> Tensor:
        """Normalise ``(..., F)`` observations (same dtype as the input)."""
        mean = self.mean.to(x.dtype)
        std = torch.sqrt(self.var.to(x.dtype) + self.eps)
        return ((x - mean) / std).clamp(-self.clip, self.clip)


class _SigmoidTanh(torch.autograd.Function):
    """``tanh(x)`` computed as ``2 sigmoid(2x) - 1``; backward ``grad (1 - y^2)`` as tanh's."""

    generate_vmap_rule = True

    @staticmethod
    def forward(x: Tensor) -> Tensor:
        return torch.sigmoid(x * 2.0).mul_(2.0).sub_(1.0)

    @staticmethod
    def setup_context(ctx, inputs, output) -> None:
        ctx.save_for_backward(output)

    @staticmethod
    def backward(ctx, grad: Tensor) -> Tensor:
        (y,) = ctx.saved_tensors
        return torch.ops.aten.tanh_backward(grad, y)


class FastTanh(nn.Module):
    """The hyperbolic tangent, written so that it is fast on the CPU (same values to ~2e-7).

    torch's CPU ``tanh`` of float32 runs about 3.5x slower than ``sigmoid`` (1M elements, one
    thread: 2.7 ms against 0.75 ms for ``2 sigmoid(2x) - 1``), and the hidden activations are
    the largest elementwise cost of a PPO update. The gradient is tanh's own,
    ``grad (1 - y^2)``. On other devices it is ``torch.tanh``. Holds no parameters, so checkpoints
    are those of ``nn.Tanh``.
    """

    def forward(self, x: Tensor) -> Tensor:
        """``tanh(x)``, elementwise (``torch.tanh`` off the CPU, where it is one fused kernel)."""
        return _SigmoidTanh.apply(x) if x.is_cpu else torch.tanh(x)


class OutputLinear(nn.Linear):
    """A network's output layer: always float32, also inside a ``torch.autocast`` region.

    Under ``PPOConfig.update_dtype="bfloat16"`` the hidden layers' products run in bfloat16
    (8 significant bits), but the actor's pre-squash mean and the value come out of this layer
    in float32, so the PPO ratio and the value loss compare float32 numbers with the float32
    ones of the collection and GAE. Same parameters and checkpoint keys as ``nn.Linear``.
    """

    def forward(self, x: Tensor) -> Tensor:
        """``x W^T + b`` in the weights' dtype (float32) whatever the autocast state."""
        if not torch.is_autocast_enabled(x.device.type):  # collection, evaluation: plain Linear
            return super().forward(x)
        with torch.autocast(x.device.type, enabled=False):
            return super().forward(x.to(self.weight.dtype))


def mlp(
    sizes: Sequence[int], activation: type[nn.Module] = FastTanh, out_gain: float = 1.0
) -> nn.Sequential:
    """MLP with orthogonal initialisation (gain sqrt(2) inside, ``out_gain`` on the last layer)."""
    layers: list[nn.Module] = []
    for i in range(len(sizes) - 1):
        last = i == len(sizes) - 2
        lin = (OutputLinear if last else nn.Linear)(sizes[i], sizes[i + 1])
        nn.init.orthogonal_(lin.weight, gain=out_gain if last else math.sqrt(2))
        nn.init.zeros_(lin.bias)
        layers.append(lin)
        if not last:
            layers.append(activation())
    return nn.Sequential(*layers)


class ActorNet(nn.Module):
    """``obs (..., F') -> (loc (..., 2), scale (..., 2))`` of a TanhNormal policy.

    The actor reads the first ``obs_size`` features of its input and ignores any after them: a
    privileged critic's observation (``PPOConfig.privileged_critic``) is the actor's with the
    friction under the wheels appended (:mod:`gym_s3.spec`), so one batch feeds both.

    Args:
        norm: the observation normaliser of the actor's ``obs_size`` features.
        obs_size: F, the features the actor reads (``F' >= F``).
        hidden: hidden layer widths.
        action_size: action dimension (2).
        init_log_std: initial log standard deviation of the pre-squash Gaussian.
    """

    def __init__(self, norm: RunningNorm, obs_size: int, hidden: Sequence[int],
                 action_size: int = 2, init_log_std: float = -0.5) -> None:  # fmt: skip
        super().__init__()
        self.norm = norm
        self.obs_size = int(obs_size)
        self.body = mlp([obs_size, *hidden, action_size], out_gain=0.01)
        self.log_std = nn.Parameter(torch.full((action_size,), float(init_log_std)))

    def forward(self, obs: Tensor) -> tuple[Tensor, Tensor]:
        """Pre-squash mean and scale."""
        loc = self.body(self.norm(obs[..., : self.obs_size]))
        scale = torch.exp(self.log_std.clamp(*LOG_STD_RANGE)).expand_as(loc)
        return loc, scale

    def act(self, obs: Tensor) -> Tensor:
        """Deterministic action ``tanh(loc)`` in ``[-1, 1]`` (evaluation)."""
        return torch.tanh(self.forward(obs)[0])

    @torch.no_grad()
    def cap_log_std(self, log_cap: Tensor) -> None:
        """Lower each action's log standard deviation that exceeds ``log_cap`` ``(2,)`` to it."""
        self.log_std.copy_(torch.minimum(self.log_std, log_cap.to(self.log_std)))


class CriticNet(nn.Module):
    """``obs (..., F) -> value (..., 1)``."""

    def __init__(self, norm: RunningNorm, obs_size: int, hidden: Sequence[int]) -> None:
        super().__init__()
        self.norm = norm
        self.body = mlp([obs_size, *hidden, 1], out_gain=1.0)

    def forward(self, obs: Tensor) -> Tensor:
        """State value."""
        return self.body(self.norm(obs))


class ActorEnsemble(nn.Module):
    """Mean-action ensemble of K actors: ``obs (..., F') -> (loc (..., 2), scale (..., 2))``.

    Its pre-squash mean is the mean of the members' pre-squash means, so its deterministic action
    is ``tanh(mean_k loc_k)``; ``scale`` is the mean of the members' scales (exploration only, not
    used in evaluation). Each member keeps its own observation normaliser. Averaging independently
    trained seeds cancels part of each seed's own error: on the held-out ice laps a five-member
    ``ddm`` ensemble tracked tighter than the single seed it replaced (docs/experiments.md,
    "Ensembles of seeds"). The members run one after the other over the whole batch (K small
    batched MLPs, no per-car loop; ``benchmarks/bench_policy.py`` times it).

    With ``axis_weights`` each action axis (``[steer, accel]``) is its own weighted mean of the
    members' pre-squash means, e.g. the steering of some members and the pedals of all
    (``s3 ensemble --steer-members``).

    Args:
        members: the K >= 2 actors; they read the same ``obs_size`` features.
        axis_weights: optional ``(K, 2)`` weight of each member on each action axis [-]: finite,
            >= 0, each column summing to 1. ``None``: the plain mean (every weight ``1 / K``).
    """

    def __init__(
        self, members: Sequence[ActorNet], axis_weights: Sequence[Sequence[float]] | None = None
    ) -> None:
        super().__init__()
        sizes = {m.obs_size for m in members}
        if len(members) < 2 or len(sizes) != 1:
            raise ValueError(
                f"an ensemble needs >= 2 actors reading the same features, got {len(members)} "
                f"actors reading {sorted(sizes)}"
            )
        self.members = nn.ModuleList(members)
        self.obs_size = sizes.pop()
        w = None
        if axis_weights is not None:
            w = torch.as_tensor(axis_weights, dtype=torch.float32, device="cpu")
            problem = check_axis_weights(w, len(members))
            if problem:
                raise ValueError(f"axis_weights {w.tolist()}: {problem}")
        # a buffer that moves with .to(device) but is not saved: the weights live in the sidecar,
        # so every saved ensemble keeps the same tensor names
        self.axis_weights: Tensor | None
        self.register_buffer("axis_weights", w, persistent=False)

    def forward(self, obs: Tensor) -> tuple[Tensor, Tensor]:
        """Mean (or per-axis weighted mean) pre-squash mean and mean scale of the members."""
        outs = [member(obs) for member in self.members]
        locs = torch.stack([o[0] for o in outs])
        if self.axis_weights is None:
            loc = locs.mean(dim=0)
        else:
            w = self.axis_weights.to(locs.dtype)
            loc = (locs * w.view(w.shape[0], *([1] * (locs.ndim - 2)), w.shape[1])).sum(dim=0)
        scale = torch.stack([o[1] for o in outs]).mean(dim=0)
        return loc, scale

    def act(self, obs: Tensor) -> Tensor:
        """Deterministic action ``tanh(loc)`` in ``[-1, 1]`` (evaluation)."""
        return torch.tanh(self.forward(obs)[0])


def check_axis_weights(weights: Tensor, members: int) -> str:
    """What is wrong with ``(K, 2)`` per-axis ensemble weights of K actors (``''``: nothing)."""
    if tuple(weights.shape) != (members, 2):
        return f"needs shape ({members}, 2), one row per member, one column per action axis"
    if not bool(torch.isfinite(weights).all()) or bool((weights < 0).any()):
        return "weights must be finite and >= 0"
    if not torch.allclose(weights.sum(dim=0), torch.ones(2, device=weights.device), atol=1e-5):
        return "each action axis' weights must sum to 1"
    return ""
