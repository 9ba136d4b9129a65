"""Control validation and conventions, and per-car fault detection."""

from __future__ import annotations

import pytest
import torch
from vehicle_support import controls, rollout

from gym_s3.errors import ActionError, ConfigError, DataFormatError
from gym_s3.tracks.friction import UniformFriction
from gym_s3.vehicle import VehicleModel, VehicleState, controls_from_action

DRY = UniformFriction(1.0)


def _fast(**kw: object) -> VehicleModel:
    """A coarse-step model (2.5 ms x 20 substeps) for tests about conventions, not accuracy."""
    return VehicleModel(physics_dt=2.5e-3, substeps=20, friction_every=4, **kw)  # type: ignore[arg-type]


def test_controls_from_action_maps_accel_to_throttle_and_brake() -> None:
    """Action [steer, accel] becomes [steer, max(accel, 0), max(-accel, 0)]."""
    action = torch.tensor([[0.5, 0.7], [-1.0, -0.4], [0.0, 0.0]])
    expected = torch.tensor([[0.5, 0.7, 0.0], [-1.0, 0.0, 0.4], [0.0, 0.0, 0.0]])
    assert torch.equal(controls_from_action(action), expected)
    with pytest.raises(ActionError, match=r"\(N, 2\)"):
        controls_from_action(torch.zeros(3))


@pytest.mark.parametrize(
    ("bad", "match"),
    [
        (torch.zeros(2, 2), r"shape \(N, 3\).*N = 2"),
        (torch.zeros(3, 3), r"N = 2, got \(3, 3\)"),
        (torch.zeros(2, 3, dtype=torch.int64), "floating"),
        (torch.tensor([[0.0, 0.5, 0.0], [float("nan"), 0.0, 0.0]]), r"NaN or inf for cars \[1\]"),
        ([[0.0, 0.0, 0.0]] * 2, "torch.Tensor"),
    ],
)
def test_bad_controls_raise_action_error(bad: object, match: str) -> None:
    """Wrong shape, dtype, type or non-finite controls raise ActionError naming the problem."""
    model = _fast()
    state = model.initial_state(torch.zeros(2), 0.0, 0.0, 10.0)
    with pytest.raises(ActionError, match=match):
        model.step(state, bad, DRY)  # type: ignore[arg-type]


def test_out_of_range_controls_are_clipped() -> None:
    """Controls beyond their ranges act exactly like the clipped values."""
    model = _fast()
    state = model.initial_state(torch.zeros(2), 0.0, 0.0, 10.0)
    wild = torch.tensor([[3.0, 2.0, -1.0], [-7.0, -0.5, 4.0]])
    tame = torch.tensor([[1.0, 1.0, 0.0], [-1.0, 0.0, 1.0]])
    a, b = model.step(state, wild, DRY), model.step(state, tame, DRY)
    for name in VehicleState.field_names():
        assert torch.equal(getattr(a, name), getattr(b, name)), name


def test_positive_steer_command_turns_right() -> None:
    """Steer = +1 is full right (BeamNG convention): road wheels and yaw rate go negative."""
    model = _fast()
    state = model.initial_state(torch.zeros(2), 0.0, 0.0, 10.0)
    u = torch.tensor([[1.0, 0.2, 0.0], [-1.0, 0.2, 0.0]])
    end, _ = rollout(model, state, lambda k, s: u, 20, DRY)
    assert float(end.steer_angle[0]) < 0 < float(end.steer_angle[1])
    assert float(end.yaw_rate[0]) < 0 < float(end.yaw_rate[1])
    assert float(end.y[0]) < 0 < float(end.y[1])
    assert abs(float(end.steer_angle[0]) + model.params.max_steer_rad) < 1e-2


def test_nonfinite_controls_fault_the_car_when_not_checked() -> None:
    """With check_finite=False a NaN control faults only that car, without NaN anywhere."""
    model = _fast(check_finite=False)
    state = model.initial_state(torch.zeros(3), 0.0, 0.0, 10.0)
    u = controls(0.1, 0.3, 0.0, 3).float()
    u[1, 1] = float("inf")
    out = model.step(state, u, DRY)
    assert out.fault.tolist() == [False, True, False]
    for name in VehicleState.field_names():
        assert bool(torch.isfinite(getattr(out, name).float()).all()), name
    assert float(out.x[1]) == 0.0 and float(out.x[0]) > 0.0


def test_nonfinite_state_faults_one_car_and_leaves_the_others_untouched() -> None:
    """A NaN in one car's state faults and freezes it (finite); other rows equal a clean run."""
    model = _fast()
    clean = model.initial_state(torch.zeros(3), torch.tensor([0.0, 10.0, 20.0]), 0.0, 15.0)
    broken = clean.clone()
    broken.vy[1] = float("nan")
    u = controls(0.2, 0.4, 0.0, 3).float()
    a, _ = rollout(model, clean, lambda k, s: u, 5, DRY)
    b, _ = rollout(model, broken, lambda k, s: u, 5, DRY)
    assert b.fault.tolist() == [False, True, False]
    assert not bool(a.fault.any())
    for name in VehicleState.field_names():
        va, vb = getattr(a, name), getattr(b, name)
        assert bool(torch.isfinite(vb.float()).all()), name
        if name != "fault":
            assert torch.equal(va[[0, 2]], vb[[0, 2]]), name
    assert float(b.x[1]) == 0.0 and float(b.vy[1]) == 0.0, "faulted car stays frozen"


def test_runaway_speed_is_flagged() -> None:
    """A car beyond the runaway speed limit is flagged and frozen where it was."""
    model = _fast()
    state = model.initial_state(torch.zeros(2), 0.0, 0.0, torch.tensor([10.0, 500.0]))
    out = model.step(state, controls(0.0, 0.0, 0.0, 2).float(), DRY)
    assert out.fault.tolist() == [False, True]
    assert float(out.x[1]) == 0.0 and float(out.vx[1]) == 500.0


class _NaNForCarZero:
    """A friction field that returns NaN under car 0 (a broken layout), 1.0 elsewhere."""

    def friction_at(self, points: torch.Tensor) -> torch.Tensor:
        """``(N, Q)`` friction, NaN for row 0."""
        mu = torch.ones(points.shape[:-1], dtype=points.dtype)
        mu[0] = float("nan")
        return mu


def test_nonfinite_friction_faults_only_the_affected_car() -> None:
    """NaN friction under one car faults that car; the others drive on."""
    model = _fast()
    state = model.initial_state(torch.zeros(2), 0.0, 0.0, 10.0)
    out = model.step(state, controls(0.0, 0.3, 0.0, 2).float(), _NaNForCarZero())
    assert out.fault.tolist() == [True, False]
    assert bool(torch.isfinite(out.vx).all()) and float(out.x[1]) > 0.0


class _WrongShape:
    """A friction field that returns one value per car instead of one per wheel."""

    def friction_at(self, points: torch.Tensor) -> torch.Tensor:
        """``(N,)`` (wrong) friction."""
        return torch.ones(points.shape[0])


def test_friction_field_with_wrong_shape_raises_config_error() -> None:
    """A field returning the wrong shape is reported by name with the expected shape."""
    model = _fast()
    with pytest.raises(ConfigError, match=r"_WrongShape.friction_at returned \(2,\).*\(2, 4\)"):
        model.step(model.initial_state(torch.zeros(2), 0.0, 0.0), torch.zeros(2, 3), _WrongShape())


def test_state_of_other_dtype_is_rejected() -> None:
    """Stepping a float64 state with a float32 model raises DataFormatError with the fix."""
    model = _fast()
    state = model.initial_state(0.0, 0.0, 0.0).to(dtype=torch.float64)
    with pytest.raises(DataFormatError, match=r"state.to\(device=..., dtype=...\)"):
        model.step(state, torch.zeros(1, 3), DRY)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"physics_dt": 0.0}, "physics_dt"),
        ({"substeps": 0}, "substeps"),
        ({"friction_every": 0}, "friction_every"),
        ({"dtype": torch.float16}, "dtype"),
        ({"params": "sedan"}, "VehicleParams"),
    ],
)
def test_bad_model_arguments_raise_config_error(kwargs: dict, match: str) -> None:
    """Invalid constructor arguments raise ConfigError naming the argument."""
    with pytest.raises(ConfigError, match=match):
        VehicleModel(**kwargs)
