"""Shared settings and helpers of the stand-in tests (imported by the conftest and the tests).

The servers of these tests run the physics at 200 Hz instead of the default 1 kHz (braking
distances agree within about 2 %) and 20 frames per second, so a 20 Hz control step is
``step(1)``; this keeps the whole folder well inside the fast test budget.
"""

from __future__ import annotations

import math
from typing import Any

from gym_s3.beamng.frames import yaw_to_quat
from gym_s3.beamng.standin.config import WorldConfig

#: world settings of the tests (see the module docstring)
FAST_WORLD = WorldConfig(steps_per_second=20, physics_rate_hz=200.0)
#: client socket timeout [s]; a hang fails after about twice this
SOCKET_TIMEOUT_S = 5.0


def make_scenario(
    bngpy: Any,
    bng: Any,
    name: str,
    *,
    vid: str = "ego",
    pos: tuple[float, float, float] = (0.0, 0.0, 0.0),
    yaw_deg: float = 0.0,
    level: str = "smallgrid",
) -> tuple[Any, Any]:
    """Make, load and start a one-car scenario, paused; the car heads ``yaw_deg`` from +x.

    Returns:
        ``(scenario, vehicle)`` with ``Electrics``, ``Timer`` and ``GForces`` attached.
    """
    scenario = bngpy.Scenario(level, name)
    vehicle = bngpy.Vehicle(vid, model="etk800")
    vehicle.sensors.attach("electrics", bngpy.sensors.Electrics())
    vehicle.sensors.attach("timer", bngpy.sensors.Timer())
    vehicle.sensors.attach("gforces", bngpy.sensors.GForces())
    scenario.add_vehicle(vehicle, pos=pos, rot_quat=yaw_to_quat(math.radians(yaw_deg)))
    scenario.make(bng)
    bng.settings.set_deterministic(20)
    bng.scenario.load(scenario)
    bng.scenario.start()
    bng.control.pause()
    return scenario, vehicle


def speed(state: dict[str, Any]) -> float:
    """Speed [m/s] of a polled ``State``."""
    return math.hypot(*state["vel"])
