"""The DDM physics layer: guard bounds, and the bicycle step checked against physics."""

from __future__ import annotations

import math

import pytest
import torch

from gym_s3.dynamics.ddm_physics import (
    GRAVITY,
    DDMVehicle,
    apply_guard,
    bicycle_step,
    bounds_table,
    guard_bounds,
    guard_init_bias,
)

VEHICLE = DDMVehicle()
BOUNDS = guard_bounds(VEHICLE)
NAMES = [b.name for b in BOUNDS]
LOW = torch.tensor([b.low for b in BOUNDS], dtype=torch.float64)
HIGH = torch.tensor([b.high for b in BOUNDS], dtype=torch.float64)


def coef(n: int = 1, **values: float) -> torch.Tensor:
    """``(n, C)`` nominal coefficients with some replaced."""
    c = torch.tensor([b.nominal for b in BOUNDS], dtype=torch.float64)
    for name, value in values.items():
        c[NAMES.index(name)] = value
    return c.expand(n, -1).clone()


def step(vel, c, mu=1.0, dt=0.05, substeps=5, floor=3.0):
    """One control period of the bicycle for ``(N, 3)`` velocities."""
    vel = torch.as_tensor(vel, dtype=torch.float64).reshape(-1, 3)
    mu_axle = torch.full((vel.shape[0], 2), float(mu), dtype=torch.float64)
    return bicycle_step(vel, c, mu_axle, VEHICLE, dt, substeps, floor)


def test_guard_keeps_every_coefficient_in_bounds() -> None:
    """Any raw output, even +-1e4, lands inside [low, high]; the nominal bias maps to nominal."""
    raw = torch.tensor([-1e4, -3.0, 0.0, 3.0, 1e4], dtype=torch.float64)[:, None]
    out = apply_guard(raw.expand(-1, len(BOUNDS)), LOW, HIGH)
    assert torch.isfinite(out).all()
    assert (out >= LOW).all() and (out <= HIGH).all()
    nominal = apply_guard(guard_init_bias(BOUNDS).double()[None], LOW, HIGH)[0]
    torch.testing.assert_close(nominal, coef()[0], atol=1e-3 * (HIGH - LOW).max(), rtol=1e-3)


def test_bounds_reach_ice_and_table_lists_them() -> None:
    """Peak force D = d mu F_z reaches 0.05 F_z at ice mu = 0.1 and 1.3 F_z on dry asphalt."""
    d = BOUNDS[NAMES.index("d_f")]
    assert d.low * 0.1 == pytest.approx(0.05)
    assert d.high * 1.0 == pytest.approx(1.3)
    table = bounds_table()
    assert all(f"| {name} |" in table for name in NAMES)


def test_coasting_decelerates_by_drag_and_rolling_resistance() -> None:
    """No pedal, straight: dv = -(C_r0 + C_r2 v^2) / m * dt (to 1 %)."""
    c = coef(throttle=0.0, brake=0.0)
    v = 25.0
    out = step([v, 0.0, 0.0], c)
    cr0, cr2 = c[0, NAMES.index("cr0")], c[0, NAMES.index("cr2")]
    expected = -(cr0 * math.tanh(v / 0.5) + cr2 * v * v) / VEHICLE.mass * 0.05
    assert float(out[0, 0] - v) == pytest.approx(float(expected), rel=1e-2)
    assert abs(float(out[0, 1])) < 1e-9 and abs(float(out[0, 2])) < 1e-9


def test_braking_is_limited_by_friction() -> None:
    """Full brake: deceleration is at most ~ d mu g and much weaker on ice than on asphalt."""
    c = coef(throttle=0.0, brake=1.0, cb=30000.0)
    dry = float(20.0 - step([20.0, 0.0, 0.0], c, mu=1.0)[0, 0]) / 0.05
    ice = float(20.0 - step([20.0, 0.0, 0.0], c, mu=0.1)[0, 0]) / 0.05
    d_max = 0.95  # nominal d_f = d_r
    assert dry <= d_max * 1.0 * GRAVITY * 1.02 + 0.5
    assert ice <= d_max * 0.1 * GRAVITY * 1.02 + 0.5
    assert ice < 0.2 * dry


def test_left_steering_turns_left_and_reaches_kinematic_yaw_rate() -> None:
    """A small left wheel angle at 10 m/s gives a positive yaw rate near v delta / L (+-40 %)."""
    delta, v = 0.03, 10.0
    vel = torch.tensor([[v, 0.0, 0.0]], dtype=torch.float64)
    c = coef(delta=delta, throttle=0.0)
    for _ in range(40):  # 2 s to settle
        vel = step(vel, c)
    r_kin = vel[0, 0] * delta / (VEHICLE.l_f + VEHICLE.l_r)
    assert float(vel[0, 2]) > 0
    assert float(vel[0, 2]) == pytest.approx(float(r_kin), rel=0.4)


def test_default_substeps_are_euler_stable_at_the_stiffest_bounds() -> None:
    """Stiffest guard values: Jacobian eigenvalues lie in Euler's stability disc at every speed.

    Maximum cornering stiffness and shape factor, minimum yaw inertia, dry asphalt: for the default
    sub-step (10 ms) and slip-speed floor, ``|1 + h lambda| < 1`` from standstill to 30 m/s.
    """
    c = coef(k_f=25.0, k_r=25.0, c_f=2.0, c_r=2.0, d_f=1.3, d_r=1.3, iz=BOUNDS[-1].low)
    h = 0.05 / 5
    eps = 1e-7

    def deriv(vel: torch.Tensor) -> torch.Tensor:
        return (step(vel, c, mu=1.2, dt=eps, substeps=1) - vel.reshape(1, 3))[0] / eps

    for vx in (0.0, 1.0, 3.0, 5.0, 10.0, 30.0):
        jac = torch.autograd.functional.jacobian(deriv, torch.tensor([vx, 0.0, 0.0]).double())
        for ev in torch.linalg.eigvals(jac).tolist():
            assert abs(1 + h * ev) < 1.0 + 1e-6, (vx, ev)


def _wild(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Random in-bounds coefficients (saturated raw outputs too), wild states and friction."""
    g = torch.Generator().manual_seed(seed)
    kw = {"generator": g, "dtype": torch.float64}
    c = apply_guard(6.0 * torch.randn(n, len(BOUNDS), **kw), LOW, HIGH)
    vx = -5.0 + 60.0 * torch.rand(n, **kw)
    vel = torch.stack([vx, 10.0 * torch.randn(n, **kw), 3.0 * torch.randn(n, **kw)], -1)
    return c, vel, 0.05 + 1.15 * torch.rand(n, 2, **kw)


def _energy(vel: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    iz = c[:, NAMES.index("iz")]
    return 0.5 * VEHICLE.mass * vel[:, :2].square().sum(-1) + 0.5 * iz * vel[:, 2].square()


def test_only_the_engine_adds_energy() -> None:
    """Wild states and coefficients: no step gains more energy than the engine can deliver.

    Gain <= throttle x max(P, C_m1 x 1 m/s) x dt: tyres, brakes and resistances dissipate and the
    rotation of the body frame is integrated exactly.
    """
    c, vel, mu = _wild(4096, seed=0)
    thr = c[:, NAMES.index("throttle")]
    engine = thr * torch.maximum(c[:, NAMES.index("power")], c[:, NAMES.index("cm1")]) * 0.05
    for _ in range(60):
        new = bicycle_step(vel, c, mu, VEHICLE, 0.05, 5, 3.0)
        assert torch.isfinite(new).all()
        gain = _energy(new, c) - _energy(vel, c)
        assert float((gain - engine).max()) < 1.0  # [J], float64 round-off and Euler error
        vel = new


def test_without_throttle_energy_never_grows() -> None:
    """No throttle: kinetic energy decreases (to 1 J) in every step, even for spinning cars."""
    c, vel, mu = _wild(4096, seed=1)
    c[:, NAMES.index("throttle")] = 0.0
    for _ in range(60):
        new = bicycle_step(vel, c, mu, VEHICLE, 0.05, 5, 3.0)
        assert float((_energy(new, c) - _energy(vel, c)).max()) < 1.0
        vel = new


def test_pedals_between_commands_follow_the_last_two_commanded_pedals():
    """Throttle and brake sit between the previous and current command of each pedal.

    The guard's 0.5 is the midpoint: steady brake 0.25 gives exactly 0.25 and no throttle; a
    throttle raised from 0.2 to 0.6 gives 0.4; a switch from throttle 0.4 to brake 0.3 gives
    throttle 0.2 and brake 0.15. The other coefficients are untouched.
    """
    from gym_s3.dynamics.ddm_physics import pedals_between_commands

    coef = torch.full((3, 18), 0.5, dtype=torch.float64)
    coef[:, 0], coef[:, 3:] = 0.3, 7.0
    accel = torch.tensor([[-0.25, -0.25], [0.2, 0.6], [0.4, -0.3]], dtype=torch.float64)
    out = pedals_between_commands(coef, accel)
    assert out[:, 1].tolist() == pytest.approx([0.0, 0.4, 0.2])
    assert out[:, 2].tolist() == pytest.approx([0.25, 0.0, 0.15])
    assert torch.equal(out[:, 0], coef[:, 0]) and torch.equal(out[:, 3:], coef[:, 3:])


@pytest.mark.parametrize("command_pedals", [True, False])
def test_braking_at_lock_on_ice_stops_the_ddm_only_with_command_pedals(command_pedals):
    """An untrained DDM braking 0.25 at steering lock on ice from 2 m/s.

    With the pedals held to the commands it comes to rest; with the guard's free pedals (its
    nominal throttle 0.05 against a brake that fades near rest) it creeps on, as the shipped
    ``ddm`` does (``tools/low_speed_probe.py``).
    """
    from gym_s3.dynamics.ddm import DDMBackend

    torch.manual_seed(0)
    backend = DDMBackend(pedals_from_commands=command_pedals).double()
    mu = torch.full((1, 4), 0.1, dtype=torch.float64)
    state = backend.initial_state(torch.zeros(1, 3, dtype=torch.float64),
                                  torch.tensor([2.0], dtype=torch.float64), mu)  # fmt: skip
    action = torch.tensor([[-0.85, -0.25]], dtype=torch.float64)
    with torch.no_grad():
        for _ in range(400):  # 20 s
            state = backend.step(state, action, mu)
    assert (float(state.vel[0, 0].abs()) < 0.02) == command_pedals, float(state.vel[0, 0])
