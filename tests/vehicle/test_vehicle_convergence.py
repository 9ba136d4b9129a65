"""Time-step convergence of the physics (first-order semi-implicit Euler)."""

from __future__ import annotations

import math

import torch
from vehicle_support import controls, rollout

from gym_s3.tracks.friction import UniformFriction
from gym_s3.vehicle import VehicleModel, VehicleState

CONTROL_DT = 0.05
DTS = (10e-3, 5e-3, 2.5e-3, 1.25e-3)  # physics steps [s], each half of the previous


def _slalom(k: int, state: VehicleState) -> torch.Tensor:
    """4 s slalom: 0.5 Hz steering at 40 % lock with 40 % throttle."""
    steer = 0.4 * math.sin(2 * math.pi * 0.5 * k * CONTROL_DT)
    return controls(steer, 0.4, 0.0, state.n)


def test_halving_dt_changes_the_slalom_end_position_less_each_time() -> None:
    """Each halving of the physics step moves the 4 s slalom end point less than the previous one.

    It also checks the first-order rate loosely (each change at most 0.7 of the previous) and
    that the 2.5 ms run lies within 20 cm of the 1.25 ms run.
    """
    ends = []
    for dt in DTS:
        substeps = round(CONTROL_DT / dt)
        model = VehicleModel(
            physics_dt=dt, substeps=substeps, friction_every=substeps, dtype=torch.float64
        )
        end, _ = rollout(
            model, model.initial_state(0.0, 0.0, 0.0, 15.0), _slalom, 80, UniformFriction(1.0)
        )
        ends.append(torch.stack([end.x, end.y])[:, 0])
    changes = [float((b - a).norm()) for a, b in zip(ends[:-1], ends[1:], strict=True)]
    assert changes[0] > changes[1] > changes[2], changes
    assert changes[1] <= 0.7 * changes[0] and changes[2] <= 0.7 * changes[1], changes
    assert changes[2] < 0.2, f"2.5 ms vs 1.25 ms differ by {changes[2]:.3f} m"
