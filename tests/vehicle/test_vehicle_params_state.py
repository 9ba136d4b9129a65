"""Parameter validation and the VehicleState container API."""

from __future__ import annotations

import dataclasses
import pathlib

import pytest
import safetensors.torch
import torch

from gym_s3.errors import ConfigError, DataFormatError
from gym_s3.tracks.friction import UniformFriction
from gym_s3.vehicle import GRAVITY, SEDAN, VehicleModel, VehicleParams, VehicleState


@pytest.mark.parametrize(
    ("field", "value", "match"),
    [
        ("mass", -1.0, "mass must be a finite number > 0"),
        ("wheel_radius", float("nan"), "wheel_radius"),
        ("brake_front_bias", 1.5, r"brake_front_bias must lie in \[0, 1\]"),
        ("drag_area", -0.1, "drag_area must be a finite number >= 0"),
        ("e_y", 1.2, "curvature"),
        ("drive", "4wd", "'fwd', 'rwd', 'awd'"),
        ("abs_target_slip", 0.7, "abs_target_slip"),
        ("max_steer_rad", 2.0, "max_steer_rad"),
    ],
)
def test_invalid_params_raise_config_error(field: str, value: object, match: str) -> None:
    """Each invalid field is rejected with a message naming it."""
    with pytest.raises(ConfigError, match=match):
        dataclasses.replace(SEDAN, **{field: value})


def test_params_are_frozen_and_round_trip_through_dict() -> None:
    """Params cannot be mutated; to_dict/from_dict round-trips; unknown keys are rejected."""
    with pytest.raises(dataclasses.FrozenInstanceError):
        SEDAN.mass = 1.0  # type: ignore[misc]
    assert VehicleParams.from_dict(SEDAN.to_dict()) == SEDAN
    with pytest.raises(ConfigError, match="unknown VehicleParams fields"):
        VehicleParams.from_dict({**SEDAN.to_dict(), "colour": "red"})


def test_derived_geometry_and_shares() -> None:
    """Wheel positions are FL, FR, RL, RR; static loads carry the weight; shares sum to one."""
    pos = SEDAN.wheel_positions(dtype=torch.float64)
    assert pos.shape == (4, 2)
    assert pos[:, 0].tolist() == [SEDAN.l_f, SEDAN.l_f, -SEDAN.l_r, -SEDAN.l_r]
    assert pos[0, 1] > 0 > pos[1, 1] and pos[2, 1] > 0 > pos[3, 1]
    front, rear = SEDAN.static_axle_loads
    assert front + rear == pytest.approx(SEDAN.mass * GRAVITY)
    assert front / (front + rear) == pytest.approx(SEDAN.l_r / SEDAN.wheelbase)
    assert SEDAN.drive_shares == (0.5, 0.5, 0.0, 0.0)
    assert sum(dataclasses.replace(SEDAN, drive="awd").drive_shares) == pytest.approx(1.0)
    assert sum(SEDAN.brake_shares) == pytest.approx(1.0)


def test_initial_state_broadcasts_and_rolls_the_wheels() -> None:
    """Scalars and (N,) tensors broadcast to N; wheels roll at the given speed; validate passes."""
    model = VehicleModel(dtype=torch.float64)
    state = model.initial_state(torch.arange(3.0), 2.0, 0.5, speed=torch.tensor([0.0, 5.0, 10.0]))
    state.validate()
    assert state.n == 3 and state.dtype == torch.float64 and state.omega.shape == (3, 4)
    assert torch.allclose(state.omega[:, 2], state.vx / SEDAN.wheel_radius)
    assert state.y.tolist() == [2.0, 2.0, 2.0] and not bool(state.fault.any())
    assert model.initial_state(0.0, 0.0, 0.0, n=5).n == 5
    with pytest.raises(ConfigError, match="disagree on N"):
        model.initial_state(torch.zeros(3), torch.zeros(2), 0.0)


def test_where_index_clone_cat_and_dict_round_trip() -> None:
    """Row-wise select, indexing, concatenation, deep copy and dict round trip keep every field."""
    model = VehicleModel()
    a = model.initial_state(torch.zeros(4), 0.0, 0.0, speed=1.0)
    b = model.initial_state(torch.ones(4), 0.0, 0.0, speed=2.0)
    mask = torch.tensor([True, False, True, False])
    mixed = a.where(mask, b)
    assert mixed.x.tolist() == [0.0, 1.0, 0.0, 1.0]
    assert mixed.omega[:, 0].tolist() == pytest.approx([1 / 0.32, 2 / 0.32, 1 / 0.32, 2 / 0.32])
    assert b.index(torch.tensor([3, 0])).n == 2 and b.index(mask).n == 2
    assert VehicleState.cat([a, b]).n == 8
    c = a.clone()
    c.x += 5.0
    assert float(a.x[0]) == 0.0
    restored = VehicleState.from_dict(a.to_dict(prefix="car/"), prefix="car/")
    for name in VehicleState.field_names():
        assert torch.equal(getattr(restored, name), getattr(a, name)), name
    moved = a.to(dtype=torch.float64)
    assert moved.dtype == torch.float64 and moved.fault.dtype == torch.bool


def test_stepped_state_round_trips_through_safetensors(tmp_path: pathlib.Path) -> None:
    """A state returned by step() saves to and loads from safetensors unchanged."""
    model = VehicleModel()
    state = model.initial_state(torch.zeros(3), 0.0, 0.0, speed=10.0)
    state = model.step(state, torch.tensor([[0.2, 0.5, 0.0]] * 3), UniformFriction(0.7))
    path = tmp_path / "state.safetensors"
    safetensors.torch.save_file(state.to_dict(prefix="vehicle."), str(path))
    loaded = VehicleState.from_dict(safetensors.torch.load_file(str(path)), prefix="vehicle.")
    for name in VehicleState.field_names():
        assert torch.equal(getattr(loaded, name), getattr(state, name)), name


def test_from_dict_reports_missing_and_misshapen_fields() -> None:
    """A dict lacking a field or with a wrong shape raises DataFormatError naming it."""
    data = VehicleModel().initial_state(torch.zeros(2), 0.0, 0.0).to_dict()
    with pytest.raises(DataFormatError, match=r"missing fields \['mu'\]"):
        VehicleState.from_dict({k: v for k, v in data.items() if k != "mu"})
    with pytest.raises(DataFormatError, match=r"omega has shape \(2, 3\), expected \(2, 4\)"):
        VehicleState.from_dict({**data, "omega": torch.zeros(2, 3)})
