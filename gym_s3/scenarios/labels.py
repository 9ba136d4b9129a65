"""Scenario labels: what kind of driving a window of a trajectory contains.

One labeller serves both uses: windows of recorded driving logs (measured speed, acceleration,
curvature and friction) and windows of reference trajectories in the scenario pool (target speed,
its acceleration, path curvature and friction along the path). Training and evaluation filter by
these labels (``scenarios=["hard_braking", ...]``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import torch
from torch import Tensor

from gym_s3.errors import ConfigError

LABELS: tuple[str, ...] = (
    "hard_braking",
    "sharp_turn",
    "intersection",
    "high_speed_corner",
    "low_friction",
    "friction_transition",
    "straight_cruising",
    "trail_braking",
    "sliding",
    "wheel_spin",
    "standing_start",
)


@dataclass(frozen=True)
class LabelThresholds:
    """Thresholds of the labels.

    Attributes:
        hard_brake_decel: deceleration above which a window is ``hard_braking`` [m/s^2].
        sharp_turn_curvature: curvature above which it is a ``sharp_turn`` [1/m] (radius 25 m).
        high_speed: speed above which a corner counts as high-speed [m/s].
        high_speed_lat_acc: lateral acceleration of a ``high_speed_corner`` [m/s^2].
        low_mu: mean friction below which a window is ``low_friction`` [-].
        mu_transition: friction change within the window for ``friction_transition`` [-].
        straight_curvature: curvature below which the path counts as straight [1/m].
        straight_accel: longitudinal acceleration magnitude of ``straight_cruising`` [m/s^2].
        cruise_speed: speed the car must exceed through a ``straight_cruising`` window [m/s]
            (a parked or creeping car is not cruising).
        trail_brake_decel: deceleration that, in the same sample as a lateral acceleration
            above ``trail_brake_lat_acc``, makes a window ``trail_braking`` [m/s^2].
        trail_brake_lat_acc: lateral acceleration of ``trail_braking`` [m/s^2].
        sliding_slip: body side-slip ``|v_lat| / max(|v_long|, 1)`` above which a window is
            ``sliding`` (under- or oversteer past the tyres' linear range; about 5.7 deg) [-].
        wheel_spin_slip: slip ratio ``(omega r - v) / max(v, 1)`` of the fastest wheel above which
            a window is ``wheel_spin`` (throttle-induced spin) [-].
        standstill_speed: a window that starts from below this speed [m/s] ...
        launch_accel: ... and accelerates by more than this [m/s^2] is a ``standing_start``.
    """

    hard_brake_decel: float = 4.0
    sharp_turn_curvature: float = 1.0 / 25.0
    high_speed: float = 18.0
    high_speed_lat_acc: float = 3.0
    low_mu: float = 0.5
    mu_transition: float = 0.2
    straight_curvature: float = 1.0 / 400.0
    straight_accel: float = 1.0
    cruise_speed: float = 5.0
    trail_brake_decel: float = 2.0
    trail_brake_lat_acc: float = 2.0
    sliding_slip: float = 0.1
    wheel_spin_slip: float = 0.2
    standstill_speed: float = 1.0
    launch_accel: float = 0.15


def label_mask(names: Iterable[str]) -> int:
    """Bitmask of label ``names``; unknown names raise with the list of valid labels."""
    mask = 0
    for name in names:
        if name not in LABELS:
            raise ConfigError(f"unknown scenario label '{name}'; valid labels: {', '.join(LABELS)}")
        mask |= 1 << LABELS.index(name)
    return mask


def label_names(mask: int) -> tuple[str, ...]:
    """Label names set in bitmask ``mask``."""
    return tuple(name for i, name in enumerate(LABELS) if mask >> i & 1)


def label_windows(
    speed: Tensor,
    accel: Tensor,
    curvature: Tensor,
    mu: Tensor,
    *,
    intersection: Tensor | None = None,
    side_slip: Tensor | None = None,
    wheel_slip: Tensor | None = None,
    valid: Tensor | None = None,
    thresholds: LabelThresholds = LabelThresholds(),
) -> Tensor:
    """Label W windows of T samples each.

    Args:
        speed: ``(W, T)`` speed [m/s].
        accel: ``(W, T)`` longitudinal acceleration [m/s^2].
        curvature: ``(W, T)`` path curvature [1/m] (``yaw_rate / speed`` for logs).
        mu: ``(W, T)`` friction under the car (e.g. the mean of its wheels) [-].
        intersection: ``(W, T)`` bool, the sample lies in an intersection manoeuvre.
        side_slip: ``(W, T)`` body side-slip ``|v_lat| / max(|v_long|, 1)`` [-] (measured
            driving only; ``sliding`` is never set without it).
        wheel_slip: ``(W, T)`` slip ratio of the fastest wheel [-] (measured driving only;
            ``wheel_spin`` is never set without it; NaN counts as no slip).
        valid: ``(W, T)`` bool mask of real samples (windows may be padded).
        thresholds: label thresholds.

    Returns:
        ``(W,)`` int64 bitmask over :data:`LABELS`.
    """
    th = thresholds
    if valid is None:
        valid = torch.ones_like(speed, dtype=torch.bool)
    neg_inf = torch.tensor(float("-inf"), dtype=speed.dtype, device=speed.device)

    def vmax(x: Tensor) -> Tensor:
        return torch.where(valid, x, neg_inf).amax(dim=1)

    def vmin(x: Tensor) -> Tensor:
        return -vmax(-x)

    kappa = curvature.abs()
    lat = speed.square() * kappa
    count = valid.sum(dim=1).clamp(min=1)
    mu_mean = torch.where(valid, mu, torch.zeros_like(mu)).sum(dim=1) / count
    flags = {
        "hard_braking": vmin(accel) < -th.hard_brake_decel,
        "sharp_turn": vmax(kappa) > th.sharp_turn_curvature,
        "intersection": (
            (intersection & valid).any(dim=1)
            if intersection is not None
            else torch.zeros_like(mu_mean, dtype=torch.bool)
        ),
        "high_speed_corner": vmax(torch.where(speed > th.high_speed, lat, torch.zeros_like(lat)))
        > th.high_speed_lat_acc,
        "low_friction": mu_mean < th.low_mu,
        "friction_transition": (vmax(mu) - vmin(mu)) > th.mu_transition,
        "straight_cruising": (vmax(kappa) < th.straight_curvature)
        & (vmax(accel.abs()) < th.straight_accel)
        & (vmin(speed) > th.cruise_speed),
        "trail_braking": (
            (accel < -th.trail_brake_decel) & (lat > th.trail_brake_lat_acc) & valid
        ).any(dim=1),
    }
    never = torch.zeros_like(mu_mean, dtype=torch.bool)
    flags["sliding"] = (
        vmax(side_slip.nan_to_num(0.0)) > th.sliding_slip if side_slip is not None else never
    )
    flags["wheel_spin"] = (
        vmax(wheel_slip.nan_to_num(0.0)) > th.wheel_spin_slip if wheel_slip is not None else never
    )
    flags["standing_start"] = (vmin(speed) < th.standstill_speed) & (vmax(accel) > th.launch_accel)
    mask = torch.zeros_like(mu_mean, dtype=torch.int64)
    for i, name in enumerate(LABELS):
        mask |= flags[name].to(torch.int64) << i
    return mask
