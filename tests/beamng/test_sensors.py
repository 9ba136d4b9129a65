"""Sensor payloads as the beamngpy client decodes them, and scenario lifecycle details."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from standin_support import FAST_WORLD, make_scenario, speed

from gym_s3.beamng.frames import quat_to_yaw
from gym_s3.beamng.standin.server import StandInServer
from gym_s3.vehicle import SEDAN

pytestmark = pytest.mark.timeout(60)


def test_state_electrics_gforces_shapes_and_signs(
    server: StandInServer, connect: Any, bngpy: Any
) -> None:
    """State, Electrics and GForces have BeamNG's shapes, names and frames.

    State is self-consistent, Electrics carries BeamNG's (client-renamed) keys plus s3_* extras,
    and GForces use BeamNG's vehicle frame (+X left, +Y backward).
    """
    bng = connect(server)
    _, vehicle = make_scenario(bngpy, bng, "sensors", yaw_deg=40.0)
    vehicle.control(throttle=1.0)
    for _ in range(10):
        bng.control.step(1)
    vehicle.sensors.poll()
    state = vehicle.state
    heading = math.atan2(state["dir"][1], state["dir"][0])
    assert heading == pytest.approx(math.radians(40.0), abs=1e-3)
    assert quat_to_yaw(state["rotation"]) == pytest.approx(heading)
    assert np.asarray(state["vel"]) @ np.asarray(state["dir"]) == pytest.approx(speed(state))
    ahead = np.subtract(state["front"], state["pos"])
    assert ahead @ np.asarray(state["dir"]) > SEDAN.l_f
    assert state["up"] == [0.0, 0.0, 1.0] and state["time"] == pytest.approx(0.5)

    electrics = vehicle.sensors["electrics"]
    for key in ("gear_index", "abs_active", "rpm_tacho", "avg_wheel_av", "esc_active"):
        assert key in electrics  # renamed by the client from gearIndex, absActive, ...
    assert electrics["airspeed"] == pytest.approx(speed(state))
    assert electrics["rpm"] >= 800.0 and electrics["running"] is True
    assert electrics["s3_standin"] is True and len(electrics["s3_wheel_speed"]) == 4
    assert electrics["s3_wheel_ground_model"] == ["ASPHALT"] * 4
    assert electrics["s3_wheel_mu"] == [1.0] * 4
    assert electrics["altitude"] == state["pos"][2]

    gforces = vehicle.sensors["gforces"]
    assert gforces["gy"] < -1.0  # accelerating forward = along -Y (BeamNG forward)
    assert gforces["gy2"] < 0.0 and abs(gforces["gx"]) < 0.1

    vehicle.control(throttle=0.3, steering=-0.8)  # left turn: acceleration towards +X (left)
    for _ in range(20):
        bng.control.step(1)
    vehicle.sensors.poll()
    assert vehicle.sensors["gforces"]["gx"] > 0.5
    assert vehicle.sensors["electrics"]["steering"] < 0.0
    assert vehicle.sensors["electrics"]["s3_yaw_rate"] > 0.0

    states = bng.vehicles.get_states(["ego", "nobody"])
    assert set(states) == {"ego"}
    assert states["ego"]["pos"] == vehicle.state["pos"]


def test_restart_removes_transient_vehicles_and_time_rules(
    server: StandInServer, connect: Any, bngpy: Any
) -> None:
    """Vehicles added after load vanish on restart; Timer restarts, State time never does."""
    bng = connect(server)
    scenario, vehicle = make_scenario(bngpy, bng, "lifecycle")
    bng.control.step(10)
    extra = bngpy.Vehicle("extra", model="etk800")
    scenario.add_vehicle(extra, pos=(0.0, 8.0, 0.0), safe_spawn=False)
    assert set(bng.vehicles.get_current_info()) == {"ego", "extra"}
    extra.control(throttle=1.0)
    bng.control.step(4)
    vehicle.sensors.poll()
    assert vehicle.sensors["timer"]["time"] == pytest.approx(0.7)
    bng.scenario.restart()
    assert set(bng.vehicles.get_current_info()) == {"ego"}
    vehicle.sensors.poll()
    assert vehicle.sensors["timer"]["time"] == 0.0
    assert vehicle.state["time"] == pytest.approx(0.7)  # vehicle sim time is monotonic

    bng.scenario.stop()
    assert bng.control.get_gamestate() == {"type": "GameState", "state": "menu"}


def test_bad_requests_get_value_errors(server: StandInServer, connect: Any, bngpy: Any) -> None:
    """Malformed fields are answered with BNGValueError/BNGError naming the field or object."""
    bng = connect(server)
    _, vehicle = make_scenario(bngpy, bng, "bad_requests")
    with pytest.raises(bngpy.logging.BNGValueError, match="'steering' must be a finite number"):
        vehicle._send({"type": "Control", "steering": "left"}).recv()
    with pytest.raises(bngpy.logging.BNGValueError, match="'pos' must be 3 finite numbers"):
        bng._send({"type": "Teleport", "vehicle": "ego", "pos": [1, 2]}).recv()
    with pytest.raises(bngpy.logging.BNGError, match="'ghost' does not exist"):
        bng.vehicles.teleport("ghost", (0.0, 0.0, 0.0))
    with pytest.raises(bngpy.logging.BNGValueError, match="fps"):
        bng.settings.set_steps_per_second(0)
    with pytest.raises(bngpy.logging.BNGError, match="no AI driver"):
        vehicle.ai.set_mode("span")
    vehicle.control(steering=3.0)  # clipped like BeamNG
    vehicle.sensors.poll("electrics")
    assert vehicle.sensors["electrics"]["steering_input"] == 1.0


def test_quit_stops_only_with_exit_on_quit(bngpy: Any, connect: Any) -> None:
    """``Quit`` is acknowledged; the server exits only when started with exit_on_quit."""
    with StandInServer(world_config=FAST_WORLD) as srv:
        bng = connect(srv)
        bng.control.quit_beamng()
        assert not srv.wait(0.2)
        assert bng.control.get_gamestate()["state"] == "menu"
    srv = StandInServer(exit_on_quit=True, world_config=FAST_WORLD)
    srv.start()
    connect(srv).control.quit_beamng()
    assert srv.wait(5.0)
