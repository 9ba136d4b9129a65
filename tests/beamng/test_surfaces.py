"""Friction through the client: the Lua ground-model template and ICE procedural cubes."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from standin_support import make_scenario, speed

from gym_s3.beamng.lua import render_ground_model_lua
from gym_s3.beamng.materials import patch_material
from gym_s3.beamng.standin.server import StandInServer
from gym_s3.vehicle import SEDAN

pytestmark = pytest.mark.timeout(90)


def _stopping_distance(bng: Any, vehicle: Any, v0: float = 6.0) -> float:
    """Brake fully from ``v0`` [m/s] on a straight; distance to standstill [m]."""
    vehicle.teleport((0.0, 0.0, 0.0), reset=True)
    vehicle.set_velocity(v0)
    vehicle.control(throttle=0.0, brake=1.0, steering=0.0)
    for _ in range(400):
        bng.control.step(1)
        vehicle.sensors.poll("state")
        if speed(vehicle.state) < 0.05:
            return float(np.hypot(*vehicle.state["pos"][:2]))
    raise AssertionError("the car did not stop within 20 s")


def test_lua_template_sets_friction_and_foreign_lua_does_not(
    server: StandInServer, connect: Any, bngpy: Any
) -> None:
    """The ASPHALT template turns braking into ice braking; other Lua changes nothing.

    A restart reloads the default ground models (as BeamNG does), so the env must re-apply it.
    """
    bng = connect(server)
    _, vehicle = make_scenario(bngpy, bng, "friction")
    dry = _stopping_distance(bng, vehicle)
    assert 1.0 < dry < 4.0

    foreign = render_ground_model_lua("ASPHALT", 0.1, 0.08).replace("  be:", "  -- be:")
    assert bng.control.queue_lua_command(foreign) is None
    bng.control.queue_lua_command("print('not a friction change')")
    assert _stopping_distance(bng, vehicle) == dry

    bng.control.queue_lua_command(render_ground_model_lua("ASPHALT", 0.1, 0.08))
    icy = _stopping_distance(bng, vehicle)
    assert icy > 6.0 * dry

    bng.scenario.restart()
    assert _stopping_distance(bng, vehicle) == dry


V0 = 18.0  # initial speed of the patch runs [m/s]


def _brake_run(bng: Any, vehicle: Any, steps: int = 45) -> list[tuple[float, float, list[str]]]:
    """Full braking from V0 along +x; per step (x, speed, ground model under each wheel)."""
    vehicle.teleport((0.0, 0.0, 0.0), reset=True)
    vehicle.set_velocity(V0)
    vehicle.control(throttle=0.0, brake=1.0, steering=0.0)
    trace = []
    for _ in range(steps):
        bng.control.step(1)
        vehicle.sensors.poll("state", "electrics")
        wheels = vehicle.sensors["electrics"]["s3_wheel_ground_model"]
        trace.append((vehicle.state["pos"][0], speed(vehicle.state), wheels))
    return trace


def test_ice_cube_changes_motion_only_while_the_car_is_on_it(
    server: StandInServer, connect: Any, bngpy: Any
) -> None:
    """An ICE cube across the path: identical motion before it, weak braking on it, normal after."""
    bng = connect(server)
    _, vehicle = make_scenario(bngpy, bng, "ice_patch")
    plain = _brake_run(bng, vehicle)

    start, end = 10.0, 18.0
    cube = bngpy.ProceduralCube(
        pos=((start + end) / 2, 0.0, 0.0),
        size=(end - start, 4.0, 0.05),
        name="ice_patch",
        material=patch_material("ICE"),
    )
    cube.place(bng)
    icy = _brake_run(bng, vehicle)

    dt = 1.0 / 20.0
    decel = {
        name: -np.diff([0.0, *[s for _, s, _ in trace]]) / dt
        for name, trace in (("plain", plain), ("icy", icy))
    }
    front_reach = start - SEDAN.l_f - V0 * dt  # CG x before which no wheel can touch the ice
    before = [i for i, (x, _, _) in enumerate(icy) if x < front_reach]
    on_ice = [i for i, (_, _, wheels) in enumerate(icy) if wheels == ["ICE"] * 4]
    after = [i for i, (x, v, _) in enumerate(icy) if x > end + SEDAN.l_r + 1.0 and v > 1.0]
    braking = [i for i, (_, v, _) in enumerate(plain) if i > 2 and v > 1.0]
    assert len(before) > 3 and len(on_ice) > 5 and len(after) > 5
    assert plain[: len(before)] == icy[: len(before)]  # bit-identical before the patch
    assert all(w == ["ASPHALT"] * 4 for _, _, w in plain)
    assert decel["icy"][on_ice[1:]].max() < 1.5
    assert decel["plain"][braking].min() > 6.0
    assert decel["icy"][after[1:]] == pytest.approx(decel["plain"][braking].mean(), rel=0.1)
