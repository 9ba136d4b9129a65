"""The terrain hook: a level with a registered height function is not flat."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from standin_support import make_scenario
from torch import Tensor

from gym_s3.beamng.standin.server import StandInServer
from gym_s3.beamng.standin.terrain import (
    height_fn_for_level,
    register_level_terrain,
    unregister_level_terrain,
)

LEVEL = "s3_test_ramp"
SLOPE = 0.1  # rise per metre of x [-]


def _ramp(points: Tensor) -> Tensor:
    return SLOPE * points[..., 0]


@pytest.fixture
def ramp_level() -> Iterator[str]:
    """Register a plane rising along +x for the duration of a test."""
    register_level_terrain(LEVEL, _ramp)
    yield LEVEL
    unregister_level_terrain(LEVEL)


def test_registered_height_is_used(
    ramp_level: str, server: StandInServer, connect: Any, bngpy: Any
) -> None:
    """Spawn and teleport heights follow the level's height, and a released car rolls downhill."""
    bng = connect(server)
    _, vehicle = make_scenario(bngpy, bng, "ramp", pos=(10.0, 0.0, 0.0), level=ramp_level)
    vehicle.sensors.poll("state")
    assert vehicle.state["pos"][2] == pytest.approx(SLOPE * 10.0)
    vehicle.teleport((20.0, 0.0, 0.0), reset=True)
    vehicle.control(throttle=0.0, brake=0.0)
    vehicle.sensors.poll("state")
    assert vehicle.state["pos"][2] == pytest.approx(SLOPE * 20.0)
    bng.control.step(20)
    vehicle.sensors.poll("state")
    assert vehicle.state["pos"][0] < 19.9  # rolled back down the ramp (facing uphill)
    assert vehicle.state["pos"][2] < SLOPE * 19.9
    assert height_fn_for_level("smallgrid") is None
