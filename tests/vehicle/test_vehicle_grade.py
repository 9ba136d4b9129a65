"""Terrain height: z follows the ground and the grade force acts along the body axes."""

from __future__ import annotations

import dataclasses
import math

import torch
from vehicle_support import controls, rollout

from gym_s3.tracks.friction import UniformFriction
from gym_s3.vehicle import GRAVITY, SEDAN, VehicleModel

SLOPE = 0.1  # rise per metre along world +x


def _ramp(points: torch.Tensor) -> torch.Tensor:
    """Height ``(N, Q)`` [m] of a plane rising by SLOPE along +x."""
    return SLOPE * points[..., 0]


def test_car_rolls_back_down_a_grade_at_the_expected_rate() -> None:
    """Released on a 10 % grade facing uphill, the car rolls back at g sin(theta) m / m_eff.

    Rolling resistance is off; m_eff adds the four wheels' spin inertia I_w / R^2. The car facing
    across the slope (yaw 90 deg) feels the bank force sideways instead; z tracks the ground.
    """
    params = dataclasses.replace(SEDAN, rolling_resistance=0.0, drag_area=0.0)
    model = VehicleModel(params, dtype=torch.float64)
    state = model.initial_state(0.0, 0.0, torch.tensor([0.0, math.pi / 2], dtype=torch.float64))
    end, hist = rollout(
        model, state, lambda k, s: controls(0.0, 0.0, 0.0, 2), 40, UniformFriction(1.0), _ramp
    )
    sin_theta = SLOPE / math.sqrt(1 + SLOPE**2)
    m_eff = params.mass + 4 * params.wheel_inertia / params.wheel_radius**2
    expected = -GRAVITY * sin_theta * params.mass / m_eff
    accel = float(end.vx[0]) / 2.0
    assert abs(accel / expected - 1) < 0.03, (accel, expected)
    # across the slope (downhill = the car's left) the tyres hold: they push uphill (to the right,
    # a_y = -g sin(theta)) while the car creeps sideways only by the slip regularisation
    assert abs(float(end.ay[1]) / (-GRAVITY * sin_theta) - 1) < 0.02, float(end.ay[1])
    assert 0.0 < float(end.vy[1]) < 0.02
    ground = _ramp(model.wheel_points(end)).mean(-1)
    assert torch.allclose(end.z, ground, atol=0.05)
    assert float(end.z[0]) < -0.1


def test_brakes_hold_the_car_on_a_grade() -> None:
    """With full brake the car released on a 10 % grade creeps by less than 1 cm/s."""
    model = VehicleModel(dtype=torch.float64)
    state = model.initial_state(0.0, 0.0, 0.0)
    end, _ = rollout(
        model, state, lambda k, s: controls(0.0, 0.0, 1.0, 1), 40, UniformFriction(1.0), _ramp
    )
    assert abs(float(end.vx[0])) < 0.01 and float(end.omega.abs().max()) == 0.0
