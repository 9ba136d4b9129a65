"""A plain beamngpy script in the style of BeamNGpy's own examples, run against the stand-in."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from standin_support import FAST_WORLD, SOCKET_TIMEOUT_S, make_scenario, speed

from gym_s3.beamng.standin.server import StandInServer

pytestmark = pytest.mark.timeout(60)


def _yaw(state: dict[str, Any]) -> float:
    return math.atan2(state["dir"][1], state["dir"][0])


def test_example_style_script_drives_the_car(server: StandInServer, bngpy: Any) -> None:
    """The example-style script works end to end and the car really moves.

    Throttle pushes it along its heading, braking stops it, steering right turns it clockwise,
    teleport moves it, and restart restores the spawn pose and the Timer.
    """
    bng = bngpy.BeamNGpy(
        "127.0.0.1", server.port, quit_on_close=False, socket_timeout=SOCKET_TIMEOUT_S
    )
    bng.open(launch=False)
    assert bng.host_os() and bng.tech_enabled() is not None

    scenario = bngpy.Scenario("tech_ground", "example_script")
    vehicle = bngpy.Vehicle("ego_vehicle", model="etk800", license="PYTHON")
    vehicle.sensors.attach("electrics", bngpy.sensors.Electrics())
    vehicle.sensors.attach("timer", bngpy.sensors.Timer())
    spawn = (10.0, -5.0, 0.0)
    scenario.add_vehicle(vehicle, pos=spawn, rot_quat=bngpy.angle_to_quat((0, 0, 30)))
    scenario.make(bng)

    bng.settings.set_deterministic(20)
    bng.scenario.load(scenario)
    bng.scenario.start()
    bng.control.pause()
    assert bng.control.get_gamestate()["state"] == "scenario"

    vehicle.sensors.poll()
    start = dict(vehicle.state)
    assert start["pos"] == pytest.approx(spawn)
    assert vehicle.sensors["timer"]["time"] == pytest.approx(0.0)

    # throttle: the car moves forward along its direction vector
    vehicle.control(throttle=1.0, steering=0.0, brake=0.0)
    for _ in range(20):
        bng.control.step(1)
    vehicle.sensors.poll()
    moved = np.subtract(vehicle.state["pos"], start["pos"])
    along = float(moved @ np.asarray(start["dir"]))
    assert along > 1.0
    assert abs(float(np.cross(start["dir"], moved)[2])) < 0.05 * along
    electrics = vehicle.sensors["electrics"]
    assert electrics["throttle_input"] == 1.0 and electrics["throttle"] > 0.5
    assert electrics["wheelspeed"] > 1.0 and electrics["gear_index"] == 1
    assert vehicle.sensors["timer"]["time"] == pytest.approx(1.0)

    # brakes: the latched brake stops the car
    vehicle.control(throttle=0.0, brake=1.0)
    for _ in range(60):
        bng.control.step(1)
        vehicle.sensors.poll("state")
        if speed(vehicle.state) < 0.05:
            break
    assert speed(vehicle.state) < 0.05

    # steering right (+1 in BeamNG): heading turns clockwise
    vehicle.control(steering=0.5, throttle=0.3, brake=0.0)
    yaw_before = _yaw(vehicle.state)
    for _ in range(40):
        bng.control.step(1)
    vehicle.sensors.poll()
    turned = math.remainder(_yaw(vehicle.state) - yaw_before, 2 * math.pi)
    assert turned < -0.1
    assert vehicle.sensors["electrics"]["steering"] > 0.0
    assert vehicle.sensors["electrics"]["steering_input"] == 0.5

    # teleport with reset: new pose, at rest
    target = (50.0, 20.0, 0.0)
    vehicle.teleport(target, rot_quat=bngpy.angle_to_quat((0, 0, 0)), reset=True)
    vehicle.sensors.poll()
    assert vehicle.state["pos"] == pytest.approx(target)
    assert speed(vehicle.state) == 0.0

    # restart: spawn pose and Timer restored; steering stays latched (BeamNGpy issue #202)
    bng.scenario.restart()
    vehicle.sensors.poll()
    assert vehicle.state["pos"] == pytest.approx(start["pos"])
    assert vehicle.state["dir"] == pytest.approx(start["dir"])
    assert vehicle.sensors["timer"]["time"] == 0.0
    assert vehicle.sensors["electrics"]["steering_input"] == 0.5
    assert vehicle.sensors["electrics"]["throttle_input"] == 0.0

    bng.close()
    assert bng.connection is None


def _episode(bngpy: Any, connect: Any) -> list[Any]:
    """Run a short fixed episode on a fresh server and return every polled value."""
    with StandInServer(world_config=FAST_WORLD) as srv:
        bng = connect(srv)
        _, vehicle = make_scenario(bngpy, bng, "repeat", pos=(1.0, 2.0, 0.0), yaw_deg=20.0)
        trace: list[Any] = []
        for k in range(30):
            vehicle.control(steering=math.sin(k / 5.0), throttle=0.6, brake=0.0)
            bng.control.step(1)
            vehicle.sensors.poll()
            trace.append(
                (vehicle.state["pos"], vehicle.state["vel"], dict(vehicle.sensors["electrics"]))
            )
        bng.disconnect()
    return trace


def test_episodes_repeat_bit_for_bit(bngpy: Any, connect: Any) -> None:
    """The same requests give exactly the same numbers on two fresh servers (no wall clock)."""
    first = _episode(bngpy, connect)
    second = _episode(bngpy, connect)
    assert first == second
    assert first[-1][0] != first[0][0]  # the car moved
