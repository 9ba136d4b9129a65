"""Input and target normalisation of the learned backends.

The statistics themselves are :class:`gym_s3.data.windows.NormStats`, computed by the data layer
from the TRAIN split (``DrivingDataset.normalization()``) and stored in every checkpoint's JSON
sidecar. Inputs are the standard history rows (:data:`~gym_s3.dynamics.base.HISTORY_FEATURES`);
targets are the velocity changes over one control period ``dv = v_{k+1} - v_k``, normalised by
their standard deviation because they are small next to the velocities themselves.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from gym_s3.data.windows import NormStats
from gym_s3.dynamics.base import NUM_HISTORY_FEATURES
from gym_s3.errors import CheckpointError, DataFormatError
from gym_s3.plausibility import MEAN_BOUNDS, STD_BOUNDS, check_value


def identity_stats() -> NormStats:
    """Statistics that leave every value unchanged (mean 0, std 1): untrained backends."""
    zeros, ones = torch.zeros(NUM_HISTORY_FEATURES), torch.ones(NUM_HISTORY_FEATURES)
    return NormStats(
        history_mean=zeros, history_std=ones, target_mean=torch.zeros(3),
        target_std=torch.ones(3), delta_mean=torch.zeros(3), delta_std=torch.ones(3), count=0,
    )  # fmt: skip


def stats_from_meta(data: Any, what: str) -> NormStats:
    """Statistics stored in a checkpoint sidecar; a malformed entry raises CheckpointError."""
    if not isinstance(data, dict):
        raise CheckpointError(f"{what} has no normalisation statistics; re-train or re-save it")
    try:
        stats = NormStats.from_dict(data)
    except DataFormatError as exc:
        raise CheckpointError(f"{what}: {exc}; re-train or re-save the checkpoint") from exc
    fix = "the sidecar was edited or damaged; restore it or re-train the backend"
    for name in ("history_mean", "target_mean", "delta_mean", "history_std", "target_std",
                 "delta_std"):  # fmt: skip
        bounds = STD_BOUNDS if name.endswith("_std") else MEAN_BOUNDS
        for i, value in enumerate(getattr(stats, name).tolist()):
            check_value(f"normalization.{name}[{i}]", value, bounds, where=what, fix=fix,
                        error=CheckpointError)  # fmt: skip
    return stats


class Normalizer(nn.Module):
    """Applies :class:`NormStats` (buffers are not persistent: the stats live in the sidecar)."""

    def __init__(self, stats: NormStats | None = None) -> None:
        super().__init__()
        for name in ("h_mean", "h_std", "d_mean", "d_std"):
            self.register_buffer(name, torch.zeros(0), persistent=False)
        self.set(stats or identity_stats())

    def set(self, stats: NormStats) -> None:
        """Replace the statistics (keeps the device of the current buffers)."""
        dev = self.h_mean.device
        self.stats = stats
        self.h_mean = stats.history_mean.detach().float().to(dev).clone()
        self.h_std = stats.history_std.detach().float().to(dev).clone()
        self.d_mean = stats.delta_mean.detach().float().to(dev).clone()
        self.d_std = stats.delta_std.detach().float().to(dev).clone()

    def history(self, x: Tensor) -> Tensor:
        """Normalise ``(..., 9)`` history rows."""
        return (x - self.h_mean.to(x.dtype)) / self.h_std.to(x.dtype)

    def delta(self, dv: Tensor) -> Tensor:
        """Normalise ``(..., 3)`` velocity changes [m/s, m/s, rad/s]."""
        return (dv - self.d_mean.to(dv.dtype)) / self.d_std.to(dv.dtype)

    def delta_inverse(self, z: Tensor) -> Tensor:
        """Velocity changes ``(..., 3)`` [m/s, m/s, rad/s] from normalised ones."""
        return z * self.d_std.to(z.dtype) + self.d_mean.to(z.dtype)
