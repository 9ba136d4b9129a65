"""The friction-field protocol shared by every simulator that reads friction under a wheel."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import torch
from torch import Tensor


@runtime_checkable
class FrictionField(Protocol):
    """Peak tyre-road friction as a function of world position.

    Implementations are batched: row ``i`` of ``points`` is looked up in car ``i``'s own surface
    layout (every car of a batch may drive on a different layout).
    """

    def friction_at(self, points: Tensor) -> Tensor:
        """Return peak friction [-] at world points.

        Args:
            points: ``(N, Q, 2)`` world x, y [m] (e.g. ``Q = 4`` wheel contact points per car).

        Returns:
            ``(N, Q)`` peak friction coefficient, same dtype and device as ``points``.
        """
        ...


class UniformFriction:
    """The same peak friction everywhere (per car when ``mu`` has shape ``(N,)``)."""

    def __init__(self, mu: float | Tensor) -> None:
        """Store ``mu``: a scalar or an ``(N,)`` tensor of per-car friction [-]."""
        self.mu = mu

    def friction_at(self, points: Tensor) -> Tensor:
        """Return ``mu`` broadcast to ``points.shape[:-1]``."""
        mu = torch.as_tensor(self.mu, dtype=points.dtype, device=points.device)
        if mu.ndim == 1:
            mu = mu[:, None]
        return mu.expand(points.shape[:-1]).clone()
