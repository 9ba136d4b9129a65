"""Physical invariants: energy, rest, mirror symmetry, batching, determinism and precision."""

from __future__ import annotations

import math

import torch
from vehicle_support import SURFACE_MU, coarse_model, controls, kinetic_energy, rollout

from gym_s3.tracks.friction import UniformFriction
from gym_s3.vehicle import VehicleModel, VehicleState

F64 = torch.float64


def _slalom(k: int, state: VehicleState, sign: float = 1.0) -> torch.Tensor:
    """Sinusoidal steering (0.5 Hz, 30 % lock) with light throttle, for ``state.n`` cars."""
    steer = sign * 0.3 * math.sin(2 * math.pi * 0.5 * k * 0.05)
    return controls(steer, 0.3, 0.0, state.n).to(state.dtype)


def test_zero_input_never_increases_kinetic_energy() -> None:
    """With no throttle, brake or steering, body + wheel kinetic energy only decreases.

    Cars start sliding, yawing and with wheels spinning faster or slower than the road, on every
    surface; energy is checked after every control step.
    """
    n = len(SURFACE_MU)
    model = coarse_model(dtype=F64)
    state = model.initial_state(torch.zeros(n, dtype=F64), 0.0, 0.0, speed=18.0)
    state.vy = torch.linspace(-2.0, 2.0, n, dtype=F64)
    state.yaw_rate = torch.linspace(0.8, -0.8, n, dtype=F64)
    state.omega = state.omega * torch.tensor([1.3, 1.3, 0.7, 0.7], dtype=F64)
    mu = torch.tensor(list(SURFACE_MU.values()), dtype=F64)
    _, hist = rollout(
        model, state, lambda k, s: controls(0.0, 0.0, 0.0, n), 80, UniformFriction(mu)
    )
    energy = torch.stack([kinetic_energy(model, _state_at(hist, k)) for k in range(81)])
    increase = (energy[1:] - energy[:-1]).max()
    assert float(increase) <= 1e-9 * float(energy.max()), f"energy grew by {float(increase)} J"
    assert bool((energy[-1] < 0.95 * energy[0]).all()), "energy should be dissipated"


def _state_at(hist: dict[str, torch.Tensor], k: int) -> VehicleState:
    """The state at history index ``k``."""
    return VehicleState(**{name: value[k] for name, value in hist.items()})


def test_car_at_rest_stays_exactly_at_rest() -> None:
    """Zero input at rest (with and without brake, on dry and ice) moves nothing, bit for bit."""
    model = coarse_model(dtype=F64)
    state = model.initial_state(torch.tensor([0.0, 5.0, -3.0, 2.0], dtype=F64), 1.0, 0.7)
    start = state.clone()
    brake = torch.tensor([0.0, 1.0, 0.0, 1.0], dtype=F64)
    mu = torch.tensor([1.0, 1.0, 0.1, 0.1], dtype=F64)
    state, _ = rollout(
        model, state, lambda k, s: controls(0.0, 0.0, brake, 4), 20, UniformFriction(mu)
    )
    for name in ("x", "y", "yaw", "vx", "vy", "yaw_rate", "omega", "ax", "ay"):
        assert torch.equal(getattr(state, name), getattr(start, name)), name


def test_opposite_steering_gives_mirror_image_paths() -> None:
    """Cars steered by +s(t) and -s(t) trace paths mirrored in the x axis (float64, 1e-9 m)."""
    model = coarse_model(dtype=F64)
    state = model.initial_state(torch.zeros(2, dtype=F64), 0.0, 0.0, speed=15.0)
    sign = torch.tensor([1.0, -1.0], dtype=F64)

    def ctrl(k: int, s: VehicleState) -> torch.Tensor:
        u = _slalom(k, s)
        u[:, 0] = u[:, 0] * sign
        return u

    end, _ = rollout(model, state, ctrl, 80, UniformFriction(1.0))
    assert float(end.y.abs().max()) > 1.0, "the slalom should move the cars sideways"
    tol = 1e-9
    assert abs(float(end.x[0] - end.x[1])) < tol
    for name in ("y", "yaw", "vy", "yaw_rate", "steer_angle", "ay"):
        value = getattr(end, name)
        assert abs(float(value[0] + value[1])) < tol, name
    mirrored = end.omega[1][[1, 0, 3, 2]]
    assert torch.allclose(end.omega[0], mirrored, atol=tol, rtol=0.0)


def test_n_identical_cars_equal_the_single_car() -> None:
    """A batch of 7 identical cars reproduces the N = 1 trajectory in every row (float64)."""
    model = coarse_model(dtype=F64)
    one, _ = rollout(
        model, model.initial_state(0.0, 0.0, 0.3, 12.0), _slalom, 40, UniformFriction(0.7)
    )
    state7 = model.initial_state(torch.zeros(7, dtype=F64), 0.0, 0.3, 12.0)
    many, _ = rollout(model, state7, _slalom, 40, UniformFriction(0.7))
    for name in VehicleState.field_names():
        a, b = getattr(one, name), getattr(many, name)
        assert torch.allclose(b, a.expand_as(b), rtol=1e-12, atol=1e-12), name


def test_same_inputs_give_bitwise_identical_outputs() -> None:
    """Two runs from the same state with the same controls agree bit for bit (CPU)."""
    model = coarse_model()
    results = []
    for _ in range(2):
        state = model.initial_state(torch.zeros(3), 0.0, 0.0, torch.tensor([5.0, 15.0, 25.0]))
        end, _ = rollout(model, state, _slalom, 20, UniformFriction(torch.tensor([1.0, 0.25, 0.1])))
        results.append(end)
    for name in VehicleState.field_names():
        assert torch.equal(getattr(results[0], name), getattr(results[1], name)), name


def test_float32_stays_within_tolerance_of_float64() -> None:
    """A 3 s slalom (1 ms physics) in float32 ends within 5 cm and 0.01 m/s of the float64 run."""
    ends = []
    for dtype in (torch.float32, F64):
        model = VehicleModel(dtype=dtype)
        state = model.initial_state(torch.zeros(2, dtype=dtype), 0.0, 0.0, speed=15.0)
        end, _ = rollout(model, state, _slalom, 60, UniformFriction(torch.tensor([1.0, 0.25])))
        ends.append(end)
    lo, hi = ends[0].to(dtype=F64), ends[1]
    assert float((lo.x - hi.x).abs().max()) < 0.05
    assert float((lo.y - hi.y).abs().max()) < 0.05
    for name in ("vx", "vy", "yaw_rate"):
        assert float((getattr(lo, name) - getattr(hi, name)).abs().max()) < 0.01, name
