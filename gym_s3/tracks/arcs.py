"""Circular-arc primitives shared by path interpolation and projection (torch, batched)."""

from __future__ import annotations

import math

import torch
from torch import Tensor


def wrap_angle(angle: Tensor) -> Tensor:
    """Wrap angles [rad] to ``[-pi, pi)`` elementwise."""
    return torch.remainder(angle + math.pi, 2.0 * math.pi) - math.pi


def arc_offset(kappa: Tensor, dist: Tensor) -> tuple[Tensor, Tensor]:
    """Local (forward, left) displacement [m] after ``dist`` on an arc of curvature ``kappa``.

    With the half turn ``h = kappa dist / 2``: forward ``= dist sin(2h) / (2h)`` and left
    ``= dist sin(h) sin(h) / h``, written with ``sin(h) / h`` (1 at ``h = 0``) so they stay
    exact and stable as ``kappa -> 0``; shapes broadcast. (One sine and one cosine: ``torch.sinc``
    is several times slower on the CPU.)
    """
    half = 0.5 * (kappa * dist)
    sin_h = torch.sin(half)
    sinc_h = torch.where(half == 0, 1.0, sin_h / half)
    dist_sinc = dist * sinc_h
    return dist_sinc * torch.cos(half), dist_sinc * sin_h


def project_on_arc(dx: Tensor, dy: Tensor, kappa: Tensor) -> tuple[Tensor, Tensor]:
    """Exact projection onto the arc tangent to the local x axis at the origin.

    Args:
        dx: point coordinate along the tangent [m] (any shape).
        dy: point coordinate to the left of the tangent [m].
        kappa: arc curvature [1/m] (centre at ``(0, 1/kappa)``).

    Returns:
        ``(along, lateral)``: arc length from the origin to the foot point [m] and the signed
        distance from the arc, positive left [m]. Both are well conditioned as ``kappa -> 0``.
    """
    u = torch.sqrt((kappa * dx).square() + (1.0 - kappa * dy).square())
    lateral = (2.0 * dy - kappa * (dx.square() + dy.square())) / (1.0 + u)
    small = kappa.abs() < 1e-9
    k_safe = torch.where(small, torch.ones_like(kappa), kappa)
    along = torch.where(small, dx, torch.atan2(kappa * dx, 1.0 - kappa * dy) / k_safe)
    return along, lateral
