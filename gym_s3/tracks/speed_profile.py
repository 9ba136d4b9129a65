"""Friction-aware speed profiles ("ice-aware trajectory preprocessing").

Given the curvature of a path and the friction along it, the profile is the fastest speed that

* never needs more lateral acceleration than ``lateral_fraction * mu * g`` (corner speed limit
  ``sqrt(lateral_fraction * mu * g / |kappa|)``),
* accelerates no harder than the engine limit and what friction leaves after cornering, and
* brakes no harder than the brake limit and what friction leaves after cornering,

using the local friction at every point. A forward pass limits acceleration, a backward pass
limits braking, so the profile starts slowing down before an ice patch and accelerates gently on
it. Both passes work on a batch of B friction profiles at once (one per surface layout).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from gym_s3.errors import ConfigError
from gym_s3.tracks.path import ReferencePath

GRAVITY = 9.81  # [m/s^2]


@dataclass(frozen=True)
class SpeedProfileConfig:
    """Limits of the speed profile.

    Attributes:
        v_max: top speed [m/s].
        v_min: lowest target speed [m/s] (keeps hairpins on ice moving).
        lateral_fraction: share of the friction limit used for cornering [-].
        longitudinal_fraction: share of the friction limit used for accelerating/braking [-].
        accel_max: engine-limited acceleration [m/s^2].
        brake_max: brake-limited deceleration [m/s^2].
    """

    v_max: float = 30.0
    v_min: float = 2.0
    lateral_fraction: float = 0.8
    longitudinal_fraction: float = 0.7
    accel_max: float = 3.0
    brake_max: float = 7.0

    def __post_init__(self) -> None:
        if not 0 < self.v_min <= self.v_max:
            raise ConfigError(f"need 0 < v_min <= v_max, got {self.v_min}, {self.v_max}")
        for name in ("lateral_fraction", "longitudinal_fraction"):
            if not 0 < getattr(self, name) <= 1:
                raise ConfigError(f"{name} must be in (0, 1], got {getattr(self, name)}")
        if self.accel_max <= 0 or self.brake_max <= 0:
            raise ConfigError("accel_max and brake_max must be positive")


def _longitudinal_room(v2: Tensor, kappa: Tensor, mu: Tensor, cfg: SpeedProfileConfig) -> Tensor:
    """Acceleration magnitude [m/s^2] left by the friction ellipse after cornering at speed^2 v2."""
    lat = v2 * kappa.abs() / (cfg.lateral_fraction * mu * GRAVITY)
    return cfg.longitudinal_fraction * mu * GRAVITY * torch.sqrt((1.0 - lat.square()).clamp(min=0))


def _sweep(v2_cap: Tensor, kappa: Tensor, mu: Tensor, ds: float, limit: float, closed: bool,
           cfg: SpeedProfileConfig) -> Tensor:  # fmt: skip
    """One direction of the pass: ``v2[i+1] <= v2[i] + 2 ds a(i)``; columns are path samples."""
    b, m = v2_cap.shape
    out = v2_cap.clone()
    laps = 2 if closed else 1
    carry = v2_cap[:, 0]
    for lap in range(laps):
        for i in range(m):
            if i == 0 and lap == 0:
                cur = v2_cap[:, 0]
            else:
                j = (i - 1) % m
                room = _longitudinal_room(carry, kappa[j], mu[:, j], cfg).clamp(max=limit)
                cur = torch.minimum(v2_cap[:, i], carry + 2.0 * ds * room)
                if lap == 1:
                    cur = torch.minimum(cur, out[:, i])
            out[:, i] = cur
            carry = cur
    return out


def speed_profile(
    path: ReferencePath, mu: Tensor, config: SpeedProfileConfig = SpeedProfileConfig()
) -> Tensor:
    """Friction-aware target speed at every path sample.

    Args:
        path: the path (M samples, spacing ``ds``).
        mu: ``(M,)`` or ``(B, M)`` peak friction along the path [-], e.g. from
            :func:`gym_s3.tracks.surfaces.friction_along`.
        config: limits.

    Returns:
        ``(B, M)`` (or ``(M,)`` for a 1-D ``mu``) target speed [m/s], float64.
    """
    squeeze = mu.ndim == 1
    mu2 = torch.as_tensor(mu, dtype=torch.float64).reshape(-1, path.num_samples).clamp(min=1e-3)
    kappa = path.curvature.to(device=mu2.device, dtype=torch.float64)
    v2_corner = config.lateral_fraction * mu2 * GRAVITY / kappa.abs().clamp(min=1e-9)[None]
    v2_cap = v2_corner.clamp(max=config.v_max**2)
    fwd = _sweep(v2_cap, kappa, mu2, path.ds, config.accel_max, path.closed, config)
    # Backward pass: the same sweep on the reversed path (curvature sign is irrelevant).
    bwd = _sweep(fwd.flip(1), kappa.flip(0), mu2.flip(1), path.ds, config.brake_max,
                 path.closed, config).flip(1)  # fmt: skip
    v = torch.sqrt(bwd).clamp(min=config.v_min)
    return v[0] if squeeze else v


def max_corner_speed(kappa: float, mu: float, fraction: float = 1.0) -> float:
    """Speed [m/s] at which cornering at curvature ``kappa`` uses ``fraction`` of ``mu g``."""
    return math.sqrt(fraction * mu * GRAVITY / max(abs(kappa), 1e-9))
