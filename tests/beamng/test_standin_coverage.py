"""The stand-in says what it does not model, and its wheel/engine electrics mean what they say."""

from __future__ import annotations

import logging
import warnings
from typing import Any

import pytest
from standin_support import make_scenario, speed

from gym_s3.beamng.standin.server import StandInServer
from gym_s3.errors import StandInWarning


def test_unmodelled_level_is_logged_by_the_server(
    server: StandInServer, connect: Any, bngpy: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """A raw beamngpy client asking for west_coast_usa: the server log says it is flat ground."""
    with caplog.at_level(logging.WARNING, logger="gym_s3.beamng.standin.handlers"):
        make_scenario(bngpy, connect(server), "wcu", level="west_coast_usa")
    assert any("'west_coast_usa'" in r.message and "flat ground" in r.message
               for r in caplog.records)  # fmt: skip
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="gym_s3.beamng.standin.handlers"):
        make_scenario(bngpy, connect(server), "grid", level="smallgrid")
    assert not caplog.records, "smallgrid + etk800 is what the stand-in models: no warning"


@pytest.mark.parametrize(("level", "model", "named"), [
    ("italy", "etk800", "'italy'"),
    ("west_coast_usa", "pickup", "'pickup'"),
])  # fmt: skip
def test_the_client_warns_about_what_the_standin_does_not_model(level, model, named) -> None:
    """S3BeamNG-v0 on the stand-in warns (StandInWarning) for other levels and vehicles."""
    from gym_s3.envs.beamng import S3BeamNGEnv

    env = S3BeamNGEnv(standin=True, level=level, vehicle_model=model)
    try:
        with pytest.warns(StandInWarning, match=named):
            env.reset(seed=0)
    finally:
        env.close()


def test_the_default_level_and_vehicle_do_not_warn() -> None:
    """The smallgrid level and the etk800 are what the stand-in models: no StandInWarning."""
    from gym_s3.envs.beamng import S3BeamNGEnv

    env = S3BeamNGEnv(standin=True)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", StandInWarning)
            env.reset(seed=0)
    finally:
        env.close()


def test_wheelspeed_is_the_car_speed_even_when_the_driven_wheels_spin(
    server: StandInServer, connect: Any, bngpy: Any
) -> None:
    """Full throttle from rest: the front (driven) wheels spin, ``wheelspeed`` stays the speed.

    ``wheelspeed`` is |mean(omega * r)| of the undriven (speedometer) wheels, as BeamNG's
    wheels.lua averages its speedometer wheels; ``gear_index`` is the drive direction (1).
    """
    bng = connect(server)
    _, vehicle = make_scenario(bngpy, bng, "launch")
    vehicle.control(throttle=1.0)
    for _ in range(20):  # 1 s
        bng.control.step(1)
    vehicle.sensors.poll()
    e, state = vehicle.sensors["electrics"], vehicle.sensors["state"]
    front, rear = e["s3_wheel_speed"][:2], e["s3_wheel_speed"][2:]
    assert min(front) > 2.0 * speed(state), "the launch spins the driven front wheels"
    assert e["wheelspeed"] == pytest.approx(sum(rear) / 2)
    assert e["wheelspeed"] == pytest.approx(speed(state), rel=0.03)
    assert e["gear_index"] == 1
