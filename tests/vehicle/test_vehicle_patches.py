"""Per-wheel friction from world position: ice under one axle or one side of the car."""

from __future__ import annotations

import math

import torch
from vehicle_support import DiscPatch, HalfPlaneFriction, controls, speed_hold

from gym_s3.tracks.friction import UniformFriction
from gym_s3.vehicle import SEDAN, VehicleModel

F64 = torch.float64
SPEED = 15.0  # [m/s]
TURN_STEER = -0.14  # steering command of a steady left turn at about 0.5 g [-]
PATCH_RADIUS = 1.3  # [m]
ON, OFF, END = 60, 80, 120  # control steps: patch active from 3 s to 4 s, run until 6 s


def _patch_centres(x: torch.Tensor, y: torch.Tensor, yaw: torch.Tensor) -> torch.Tensor:
    """Disc centres ``(3, 2)``: car 0 far away (dry), car 1 under the rear axle, car 2 the front.

    Each centre sits 0.5 m ahead of its axle, so while the car advances up to 0.75 m in one
    control step the axle's wheels stay on the disc and the other axle (>= 2.3 m away) never
    touches it.
    """
    heading = torch.stack([torch.cos(yaw), torch.sin(yaw)], dim=-1)
    offset = torch.tensor([0.0, -SEDAN.l_r + 0.5, SEDAN.l_f + 0.5], dtype=F64)[:, None]
    centres = torch.stack([x, y], dim=-1) + offset * heading
    centres[0] = 1e6
    return centres


def test_ice_under_the_rear_axle_in_a_steady_turn_raises_sideslip() -> None:
    """One second of ice under the rear axle in a 0.5 g turn makes the car oversteer.

    Peak body sideslip is well above (> 3x and > 8 deg) the dry car's and above the car with
    ice under the front axle (which understeers instead); the friction read under the wheels
    shows ice on exactly the patched axle.
    """
    model = VehicleModel(dtype=F64)
    state = model.initial_state(torch.zeros(3, dtype=F64), 0.0, 0.0, speed=SPEED)
    field = DiscPatch(_patch_centres(state.x, state.y, state.yaw), PATCH_RADIUS, 0.1, 1.0)
    beta_peak = torch.zeros(3, dtype=F64)
    for k in range(END):
        if k == ON:
            field.mu_patch = 0.1
        field.centre = _patch_centres(state.x, state.y, state.yaw)
        if not ON <= k < OFF:
            field.centre[:] = 1e6
        u = controls(TURN_STEER, speed_hold(state, SPEED), 0.0, 3)
        state = model.step(state, u, field)
        if k == ON + 5:
            expected = [[1.0] * 4, [1.0, 1.0, 0.1, 0.1], [0.1, 0.1, 1.0, 1.0]]
            assert torch.equal(state.mu, torch.tensor(expected, dtype=F64)), state.mu
        if k >= ON:
            beta = torch.atan2(state.vy, state.vx).abs()
            beta_peak = torch.maximum(beta_peak, beta)
    dry, rear, front = (math.degrees(float(b)) for b in beta_peak)
    assert rear > 8.0 and rear > 3 * dry, (dry, rear, front)
    assert rear > 2 * front, (dry, rear, front)


def test_patch_under_the_left_wheels_changes_only_the_left_wheel_forces() -> None:
    """Ice for y > 0 under a car driving along +x changes FL/RL forces only, bit for bit.

    The car is cornering, driving and sliding so every wheel carries longitudinal and lateral
    force; the icy wheels' force magnitude drops to at most 1.05 mu F_z.
    """
    model = VehicleModel(dtype=F64)
    state = model.initial_state(0.0, 0.0, 0.0, speed=15.0)
    state.steer_angle = torch.tensor([0.06], dtype=F64)
    state.vy = torch.tensor([-0.3], dtype=F64)
    state.yaw_rate = torch.tensor([0.3], dtype=F64)
    state.ay = torch.tensor([4.0], dtype=F64)
    state.omega = state.omega * torch.tensor([1.03, 1.02, 1.0, 1.0], dtype=F64)
    dry = model.wheel_forces(state, UniformFriction(1.0))
    split = model.wheel_forces(state, HalfPlaneFriction(0.0, mu_left=0.1, mu_right=1.0))
    assert torch.equal(split.mu, torch.tensor([[0.1, 1.0, 0.1, 1.0]], dtype=F64))
    right, left = [1, 3], [0, 2]
    assert torch.equal(split.force[:, right], dry.force[:, right])
    assert torch.equal(split.normal_load, dry.normal_load)
    assert bool((dry.force.norm(dim=-1) > 500.0).all()), "every wheel should carry force"
    icy = split.force[0, left].norm(dim=-1)
    assert bool((icy < 0.5 * dry.force[0, left].norm(dim=-1)).all())
    assert bool((icy <= 1.05 * 0.1 * split.normal_load[0, left]).all())
