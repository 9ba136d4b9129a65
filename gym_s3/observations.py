"""The one observation builder shared by both environments.

An environment provides an :class:`EgoState` (from a dynamics backend or from simulator sensors),
the tracking errors and the reference lookahead; :func:`build_observation` turns them into the
observation vector laid out by :mod:`gym_s3.spec`. It is pure and batched.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from gym_s3.errors import ConfigError
from gym_s3.spec import LOOKAHEAD_M, ObsMode, observation_bounds, observation_size


@dataclass(frozen=True)
class EgoState:
    """The standardised state of N cars that every observation and metric is computed from.

    Attributes:
        x: ``(N,)`` world x of the reference point (centre of gravity) [m].
        y: ``(N,)`` world y [m].
        yaw: ``(N,)`` heading of the body x axis, CCW from world +x [rad].
        v_long: ``(N,)`` longitudinal speed in the body frame [m/s].
        v_lat: ``(N,)`` lateral speed in the body frame, + left [m/s].
        yaw_rate: ``(N,)`` yaw rate, + CCW [rad/s].
    """

    x: Tensor
    y: Tensor
    yaw: Tensor
    v_long: Tensor
    v_lat: Tensor
    yaw_rate: Tensor

    @property
    def xy(self) -> Tensor:
        """``(N, 2)`` world position [m]."""
        return torch.stack([self.x, self.y], dim=-1)

    def is_finite(self) -> Tensor:
        """``(N,)`` bool: every field of the car is finite."""
        stacked = torch.stack([self.x, self.y, self.yaw, self.v_long, self.v_lat, self.yaw_rate])
        return torch.isfinite(stacked).all(dim=0)


def to_car_frame(ego: EgoState, px: Tensor, py: Tensor) -> tuple[Tensor, Tensor]:
    """World points ``(N, K)`` to the car frame (x forward, y left) [m]."""
    dx = px - ego.x[:, None]
    dy = py - ego.y[:, None]
    c = torch.cos(ego.yaw)[:, None]
    s = torch.sin(ego.yaw)[:, None]
    return dx * c + dy * s, -dx * s + dy * c


def build_observation(
    ego: EgoState,
    *,
    cross_track: Tensor,
    heading_err: Tensor,
    speed_err: Tensor,
    prev_action: Tensor,
    lookahead_x: Tensor,
    lookahead_y: Tensor,
    lookahead_v: Tensor,
    wheel_mu: Tensor | None = None,
    history: Tensor | None = None,
    mode: ObsMode = "default",
) -> Tensor:
    """Assemble the observation of N cars (float32, clipped to the spec bounds, never NaN).

    Args:
        ego: the cars' standardised state.
        cross_track: ``(N,)`` signed lateral offset from the reference, + left [m].
        heading_err: ``(N,)`` wrapped heading error [rad].
        speed_err: ``(N,)`` ``v_long`` minus target speed [m/s].
        prev_action: ``(N, 2)`` the previous action ``[steer, accel]``.
        lookahead_x: ``(N, K)`` world x of the reference points at :data:`~gym_s3.spec.LOOKAHEAD_M`.
        lookahead_y: ``(N, K)`` world y of those points [m].
        lookahead_v: ``(N, K)`` target speed at those points [m/s].
        wheel_mu: ``(N, 4)`` friction under the FL, FR, RL, RR wheels; required in ``oracle`` mode.
        history: ``(N, H, 5)`` the last H = :data:`~gym_s3.spec.HISTORY_STEPS` control steps, most
            recent first, each ``[accel_long, accel_lat, yaw_accel, steer, accel]`` (m/s^2,
            m/s^2, rad/s^2, action); required in ``history`` mode.
        mode: ``"default"``, ``"oracle"`` or ``"history"``.

    Returns:
        ``(N, F)`` observation with ``F = observation_size(mode)``.
    """
    k = len(LOOKAHEAD_M)
    if lookahead_x.shape[-1] != k:
        raise ConfigError(f"lookahead must have {k} points, got {lookahead_x.shape[-1]}")
    car_x, car_y = to_car_frame(ego, lookahead_x, lookahead_y)
    look = torch.stack([car_x, car_y, lookahead_v.to(car_x.dtype)], dim=-1).flatten(1)
    parts = [
        torch.stack([ego.v_long, ego.v_lat, ego.yaw_rate], dim=-1),
        prev_action.to(ego.v_long.dtype),
        torch.stack([cross_track, heading_err, speed_err], dim=-1).to(ego.v_long.dtype),
        look,
    ]
    if mode == "oracle":
        if wheel_mu is None:
            raise ConfigError("obs_mode='oracle' needs the friction under each wheel")
        parts.append(wheel_mu.to(ego.v_long.dtype))
    elif mode == "history":
        if history is None:
            raise ConfigError("obs_mode='history' needs the history of the last control steps")
        parts.append(history.flatten(1).to(ego.v_long.dtype))
    obs = torch.cat(parts, dim=-1).to(torch.float32)
    if obs.shape[-1] != observation_size(mode):  # pragma: no cover - guards the spec contract
        raise ConfigError(
            f"observation has {obs.shape[-1]} features, spec says {observation_size(mode)}"
        )
    low, high = _bounds(mode, obs.device)
    return torch.nan_to_num(obs, nan=0.0).clamp(low, high)


_BOUNDS_CACHE: dict[tuple[str, str], tuple[Tensor, Tensor]] = {}


def _bounds(mode: ObsMode, device: torch.device) -> tuple[Tensor, Tensor]:
    """Spec bounds as tensors on ``device`` (cached)."""
    key = (mode, str(device))
    if key not in _BOUNDS_CACHE:
        low, high = observation_bounds(mode)
        _BOUNDS_CACHE[key] = (
            torch.as_tensor(low, device=device),
            torch.as_tensor(high, device=device),
        )
    return _BOUNDS_CACHE[key]
