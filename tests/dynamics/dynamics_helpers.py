"""Helpers of the dynamics tests: every backend built deterministically, plausible inputs."""

from __future__ import annotations

import torch

from gym_s3.data.windows import NormStats
from gym_s3.dynamics import DynamicsBackend, make

BACKENDS = ("bicycle", "ddm", "trans", "dytr")
LEARNED = ("ddm", "trans", "dytr")


def typical_stats() -> NormStats:
    """Statistics of the order of real driving data (so normalisation is exercised)."""
    return NormStats(
        history_mean=torch.tensor([15.0, 0.05, 0.0, 0.03, 0.3, 0.55, 0.55, 0.55, 0.55]),
        history_std=torch.tensor([6.5, 0.2, 0.14, 0.15, 0.4, 0.25, 0.25, 0.25, 0.25]),
        target_mean=torch.tensor([15.0, 0.05, 0.0]),
        target_std=torch.tensor([6.5, 0.2, 0.14]),
        delta_mean=torch.tensor([0.01, 0.0, 0.0]),
        delta_std=torch.tensor([0.1, 0.02, 0.011]),
        count=1000,
    )


def build(name: str, seed: int = 0) -> DynamicsBackend:
    """Backend ``name`` with seeded weights; the dytr residual head is made non-zero."""
    torch.manual_seed(seed)
    backend = make(name)
    if hasattr(backend, "set_norm_stats"):
        backend.set_norm_stats(typical_stats())
    if name == "dytr":
        with torch.no_grad():
            torch.nn.init.normal_(backend.residual.head[-1].weight, std=0.3)
    return backend.eval()


def random_rows(n: int, t: int, seed: int = 0) -> torch.Tensor:
    """``(n, t, 9)`` plausible history rows: speeds, actions in [-1, 1], friction in [0.05, 1.2]."""
    g = torch.Generator().manual_seed(seed)
    rows = torch.empty(n, t, 9)
    rows[..., 0] = 30.0 * torch.rand(n, t, generator=g)
    rows[..., 1] = 0.5 * torch.randn(n, t, generator=g)
    rows[..., 2] = 0.3 * torch.randn(n, t, generator=g)
    rows[..., 3:5] = 2.0 * torch.rand(n, t, 2, generator=g) - 1.0
    rows[..., 5:9] = 0.05 + 1.15 * torch.rand(n, t, 4, generator=g)
    return rows
