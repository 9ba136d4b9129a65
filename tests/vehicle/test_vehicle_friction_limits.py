"""Tyre forces respect the surface friction on every named surface (physics against physics).

Drag and rolling resistance are switched off here so that the measured deceleration is the tyres'
alone; a braking deceleration above mu g would mean the tyre model creates grip.
"""

from __future__ import annotations

import dataclasses

import pytest
import torch
from vehicle_support import SURFACE_MU, controls, speed_hold

from gym_s3.tracks.friction import UniformFriction
from gym_s3.vehicle import GRAVITY, SEDAN, VehicleModel

PARAMS = dataclasses.replace(SEDAN, drag_area=0.0, rolling_resistance=0.0)
MU = torch.tensor(list(SURFACE_MU.values()), dtype=torch.float64)
S = len(MU)
DT = 0.05
V_RAMP = 15.0  # [m/s]
V_BRAKE = 20.0  # [m/s]
RAMP_STEPS = 150  # 7.5 s steer ramp to full lock
BRAKE_STEPS = 60  # 3 s of full braking


def _braking_decel(abs_enabled: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Full braking from 20 m/s on every surface; return (max, mean) deceleration ``(S,)``.

    Statistics cover the developed phase: from 0.5 s after the brake command until the car is
    slower than 2 m/s (ABS off below 2 m/s) or the 3 s window ends.
    """
    model = VehicleModel(PARAMS, dtype=torch.float64, abs_enabled=abs_enabled)
    state = model.initial_state(torch.zeros(S, dtype=torch.float64), 0.0, 0.0, speed=V_BRAKE)
    vx = [state.vx]
    for _ in range(BRAKE_STEPS):
        state = model.step(state, controls(0.0, 0.0, 1.0, S), UniformFriction(MU))
        vx.append(state.vx)
    v = torch.stack(vx)  # (T+1, S)
    decel = -(v[1:] - v[:-1]) / DT
    window = (torch.arange(BRAKE_STEPS)[:, None] >= 10) & (v[1:] > 2.0)
    assert bool(window.any(0).all()), "every surface needs a developed braking phase"
    masked = torch.where(window, decel, torch.nan)
    return masked.nan_to_num(-1e9).amax(0), masked.nanmean(0)


@pytest.fixture(scope="module")
def abs_decel() -> tuple[torch.Tensor, torch.Tensor]:
    """(max, mean) braking deceleration per surface with ABS."""
    return _braking_decel(abs_enabled=True)


@pytest.fixture(scope="module")
def locked_decel() -> tuple[torch.Tensor, torch.Tensor]:
    """(max, mean) braking deceleration per surface without ABS (wheels lock)."""
    return _braking_decel(abs_enabled=False)


def test_steady_lateral_acceleration_within_1_05_mu_g_on_every_surface() -> None:
    """A slow steer ramp to full lock at 15 m/s never exceeds 1.05 mu g of lateral acceleration.

    It also reaches at least 0.85 mu g, so the bound is tested at the limit, not far below it.
    """
    model = VehicleModel(PARAMS, dtype=torch.float64)
    state = model.initial_state(torch.zeros(S, dtype=torch.float64), 0.0, 0.0, speed=V_RAMP)
    ay_peak = torch.zeros(S, dtype=torch.float64)
    for k in range(RAMP_STEPS):
        u = controls(-k / RAMP_STEPS, speed_hold(state, V_RAMP), 0.0, S)
        state = model.step(state, u, UniformFriction(MU))
        ay_peak = torch.maximum(ay_peak, state.ay.abs())
    ratio = ay_peak / (MU * GRAVITY)
    assert bool((ratio <= 1.05).all()), f"peak a_y / (mu g) per surface: {ratio.tolist()}"
    assert bool((ratio >= 0.85).all()), f"ramp did not approach the limit: {ratio.tolist()}"


@pytest.mark.parametrize("which", ["abs", "locked"])
def test_braking_deceleration_never_exceeds_mu_g(
    which: str,
    abs_decel: tuple[torch.Tensor, torch.Tensor],
    locked_decel: tuple[torch.Tensor, torch.Tensor],
) -> None:
    """Straight-line full braking decelerates by at most mu g on every surface (ABS on and off)."""
    peak = (abs_decel if which == "abs" else locked_decel)[0]
    ratio = peak / (MU * GRAVITY)
    assert bool((ratio <= 1.0).all()), f"peak deceleration / (mu g): {ratio.tolist()}"


def test_abs_braking_reaches_0_8_mu_g_and_beats_locked_wheels(
    abs_decel: tuple[torch.Tensor, torch.Tensor], locked_decel: tuple[torch.Tensor, torch.Tensor]
) -> None:
    """With ABS the mean deceleration is >= 0.8 mu g and above the locked-wheel value."""
    abs_ratio = abs_decel[1] / (MU * GRAVITY)
    locked_ratio = locked_decel[1] / (MU * GRAVITY)
    assert bool((abs_ratio >= 0.8).all()), f"ABS mean deceleration / (mu g): {abs_ratio.tolist()}"
    assert bool((abs_ratio > locked_ratio).all()), (abs_ratio.tolist(), locked_ratio.tolist())
