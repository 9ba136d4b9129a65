"""Friction-aware speed profiles ("ice-aware trajectory preprocessing").

Given the curvature of a path and the friction along it, the profile is the fastest speed that

* never needs more lateral acceleration than ``lateral_fraction * mu * g`` (corner speed limit
  ``sqrt(lateral_fraction * mu * g / |kappa|)``),
* accelerates no harder than the engine limit, what friction leaves after cornering and what
  the car reaches on that surface at that speed, and
* brakes no harder than the brake limit, what friction leaves after cornering and what the car
  reaches on that surface,

using the local friction at every point. A forward pass limits acceleration, a backward pass
limits braking, so the profile starts slowing down before an ice patch and accelerates gently on
it. Both passes work on a batch of B friction profiles at once (one per surface layout).

The reachable accelerations are measured in the high-fidelity vehicle model
(:mod:`gym_s3.tracks.reachable`): on ice the friction ellipse would allow 0.59 m/s^2, the car
gets about 0.2 m/s^2 out of its spinning front wheels, and a profile that asks for more makes
every driver fall behind it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from gym_s3.errors import ConfigError
from gym_s3.tracks.path import ReferencePath
from gym_s3.tracks.reachable import ReachableAccelerations

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
        v_start: speed at the first sample of an open path [m/s] (``None``: free, e.g. a flying
            start; ``0``: start from rest, raised to ``v_min`` by the final floor).
        v_end: speed at the last sample of an open path [m/s] (``None``: free; ``0``: stop).
        reachable: also cap acceleration and braking at what the car reaches on the local
            friction and speed (the measured table of :mod:`gym_s3.tracks.reachable`).
    """

    v_max: float = 28.0
    v_min: float = 2.0
    lateral_fraction: float = 0.7
    longitudinal_fraction: float = 0.6
    accel_max: float = 3.0
    brake_max: float = 6.0
    v_start: float | None = None
    v_end: float | None = None
    reachable: bool = True

    def __post_init__(self) -> None:
        """Validate the fields (raises :class:`~gym_s3.errors.ConfigError`)."""
        if not 0 < self.v_min <= self.v_max:
            raise ConfigError(f"need 0 < v_min <= v_max, got {self.v_min}, {self.v_max}")
        for name in ("lateral_fraction", "longitudinal_fraction"):
            if not 0 < getattr(self, name) <= 1:
                raise ConfigError(f"{name} must be in (0, 1], got {getattr(self, name)}")
        if self.accel_max <= 0 or self.brake_max <= 0:
            raise ConfigError("accel_max and brake_max must be positive")
        for name in ("v_start", "v_end"):
            value = getattr(self, name)
            if value is not None and not 0 <= value <= self.v_max:
                raise ConfigError(f"{name} must lie in [0, v_max], got {value}")


def longitudinal_room(
    v2: np.ndarray, kappa: np.ndarray, mu: np.ndarray, config: SpeedProfileConfig
) -> np.ndarray:
    """Acceleration magnitude [m/s^2] the friction ellipse leaves after cornering.

    ``(a_x / (f_lon mu g))^2 + (v^2 kappa / (f_lat mu g))^2 <= 1``, solved for ``|a_x|``.

    Args:
        v2: squared speed [m^2/s^2] (broadcasts with the others).
        kappa: curvature [1/m].
        mu: peak friction [-].
        config: the fractions of the friction limit.
    """
    lat = v2 * np.abs(kappa) / (config.lateral_fraction * mu * GRAVITY)
    room2 = np.clip(1.0 - lat * lat, 0.0, None)
    return config.longitudinal_fraction * mu * GRAVITY * np.sqrt(room2)


def _sweep(
    cap: np.ndarray,
    kappa: np.ndarray,
    mu: np.ndarray,
    ds: float,
    limit: float,
    config: SpeedProfileConfig,
    reach: tuple[np.ndarray, np.ndarray] | None = None,
) -> np.ndarray:
    """Forward pass ``v2[i+1] = min(cap[i+1], v2[i] + 2 ds a_i)`` over the columns.

    Args:
        cap: ``(M, B)`` squared-speed caps [m^2/s^2]; row 0 is the start of the sweep.
        kappa: ``(M, 1)`` or ``(M, B)`` curvature of segment ``i -> i + 1`` [1/m].
        mu: ``(M, B)`` friction of segment ``i -> i + 1`` [-].
        ds: spacing [m].
        limit: engine or brake limit [m/s^2].
        config: friction fractions.
        reach: optional ``(speeds (G,), limits (G, M, B))``: the reachable acceleration of
            segment ``i`` at speed ``v`` is ``limits[:, i]`` interpolated at ``v`` [m/s^2].

    Returns:
        ``(M, B)`` squared speeds.
    """
    out = np.empty_like(cap)
    out[0] = cap[0]
    # Precomputed per segment: lateral usage per unit v^2 and 2 ds times the longitudinal scale.
    lat_per_v2 = np.abs(kappa) / (config.lateral_fraction * mu * GRAVITY)
    gain = 2.0 * ds * config.longitudinal_fraction * mu * GRAVITY
    step_cap = 2.0 * ds * limit
    work = np.empty_like(cap[0])
    if reach is not None:
        xp = reach[0]
        base = np.ascontiguousarray(reach[1].transpose(1, 0, 2))  # (M, G, B)
        slope = np.diff(base, axis=1) / np.diff(xp)[None, :, None]  # (M, G - 1, B)
        cols = np.arange(cap.shape[1])
    for i in range(cap.shape[0] - 1):  # in-place ufuncs: this loop is the hot path
        np.multiply(out[i], lat_per_v2[i], out=work)
        np.multiply(work, work, out=work)
        np.subtract(1.0, work, out=work)
        np.maximum(work, 0.0, out=work)
        np.sqrt(work, out=work)
        np.multiply(work, gain[i], out=work)
        np.minimum(work, step_cap, out=work)
        if reach is not None:  # the reachable acceleration at this speed, linear in speed
            v = np.clip(np.sqrt(out[i]), xp[0], xp[-1])
            k = np.minimum(np.searchsorted(xp, v, side="right") - 1, len(xp) - 2)
            reached = base[i, k, cols] + slope[i, k, cols] * (v - xp[k])
            np.minimum(work, 2.0 * ds * reached, out=work)
        np.add(work, out[i], out=work)
        np.minimum(cap[i + 1], work, out=out[i + 1])
    return out


def _segments(values: np.ndarray, closed: bool, reduce) -> np.ndarray:
    """Per-segment value ``reduce(values[i], values[i + 1])`` along axis 0 (wrapping if closed)."""
    nxt = np.roll(values, -1, axis=0)
    if not closed:
        nxt[-1] = values[-1]
    return reduce(values, nxt)


def _one_direction(
    cap: np.ndarray,
    kappa: np.ndarray,
    mu: np.ndarray,
    ds: float,
    limit: float,
    closed: bool,
    config: SpeedProfileConfig,
    kind: str,
) -> np.ndarray:
    """The limited sweep along the sample order; on a loop it starts where the cap is lowest.

    ``kind`` (``"accel"`` or ``"brake"``) picks the reachable-acceleration table when
    ``config.reachable``.

    On a closed path the sample with the lowest cap is never raised by the sweep (nothing
    before it can be slower), so rolling every column to start there makes one lap exact.
    """
    k_seg = _segments(np.abs(kappa), closed, np.maximum)
    mu_seg = _segments(mu, closed, np.minimum)
    reach = ReachableAccelerations.load().limits(kind, mu_seg) if config.reachable else None
    if not closed:
        return _sweep(cap, k_seg, mu_seg, ds, limit, config, reach)
    m, b = cap.shape
    start = cap.argmin(axis=0)  # (B,)
    rows = (np.arange(m)[:, None] + start[None, :]) % m  # (M, B)
    cols = np.arange(b)[None, :]
    k_full = np.broadcast_to(k_seg, (m, b))
    if reach is not None:
        reach = (reach[0], reach[1][:, rows, cols])
    rolled = _sweep(cap[rows, cols], k_full[rows, cols], mu_seg[rows, cols], ds, limit, config,
                    reach)  # fmt: skip
    out = np.empty_like(cap)
    out[rows, cols] = rolled
    return out


def _reverse(values: np.ndarray) -> np.ndarray:
    """Samples in reverse order (axis 0)."""
    return values[::-1].copy()


def speed_profile(
    path: ReferencePath, mu: Tensor, config: SpeedProfileConfig = SpeedProfileConfig()
) -> Tensor:
    """Friction-aware target speed at every path sample.

    Cornering is limited at every sample by ``v^2 |kappa| <= f_lat mu g``; between consecutive
    samples the speed change obeys the friction ellipse of the *segment* (the lower friction and
    the higher curvature of its two ends) and the engine/brake limits, so braking is finished
    before a patch begins and acceleration on a patch is gentle. ``v_min`` is a floor applied at
    the end (it can exceed the friction limit only where the corner limit itself is below it).

    Args:
        path: the path (M samples, spacing ``ds``).
        mu: ``(M,)`` or ``(B, M)`` peak friction along the path [-], e.g. from
            :func:`gym_s3.tracks.surfaces.friction_along`.
        config: limits.

    Returns:
        ``(B, M)`` (or ``(M,)`` for a 1-D ``mu``) target speed [m/s], float64, on ``mu``'s device.
    """
    mu_t = torch.as_tensor(mu)
    squeeze = mu_t.ndim == 1
    m = path.num_samples
    if mu_t.shape[-1] != m or mu_t.ndim > 2:
        raise ConfigError(f"mu must have shape ({m},) or (B, {m}), got {tuple(mu_t.shape)}")
    mu_np = mu_t.detach().to("cpu", torch.float64).numpy().reshape(-1, m).T.clip(min=1e-3)
    kappa = path.curvature.detach().to("cpu", torch.float64).numpy()[:, None]  # (M, 1)
    cap = config.lateral_fraction * mu_np * GRAVITY / np.clip(np.abs(kappa), 1e-9, None)
    cap = np.minimum(cap, config.v_max**2)
    if not path.closed:  # boundary speeds of an open path
        if config.v_start is not None:
            cap[0] = np.minimum(cap[0], config.v_start**2)
        if config.v_end is not None:
            cap[-1] = np.minimum(cap[-1], config.v_end**2)
    fwd = _one_direction(cap, kappa, mu_np, path.ds, config.accel_max, path.closed, config, "accel")
    bwd = _one_direction(
        _reverse(fwd),
        _reverse(kappa),
        _reverse(mu_np),
        path.ds,
        config.brake_max,
        path.closed,
        config,
        "brake",
    )
    v = np.sqrt(_reverse(bwd)).clip(min=config.v_min).T
    out = torch.from_numpy(np.ascontiguousarray(v)).to(mu_t.device)
    return out[0] if squeeze else out


def lap_time(path: ReferencePath, speed: Tensor) -> Tensor:
    """Time to drive the path at the given sample speeds [s] (constant acceleration per segment).

    Args:
        path: the path (M samples).
        speed: ``(..., M)`` speed at every sample [m/s], positive.

    Returns:
        ``(...)`` time [s]; a closed path includes the closing segment.
    """
    v = torch.as_tensor(speed, dtype=torch.float64)
    nxt = torch.roll(v, -1, dims=-1) if path.closed else v[..., 1:]
    cur = v if path.closed else v[..., :-1]
    return (2.0 * path.ds / (cur + nxt)).sum(-1)


def max_corner_speed(kappa: float, mu: float, fraction: float = 1.0) -> float:
    """Speed [m/s] at which cornering at curvature ``kappa`` uses ``fraction`` of ``mu g``."""
    return math.sqrt(fraction * mu * GRAVITY / max(abs(kappa), 1e-9))
