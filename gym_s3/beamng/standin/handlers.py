"""Game-engine (GE) request handlers of the stand-in: one function per BeamNG request ``type``.

Each handler takes the request context and the decoded request and returns the reply map (the
server adds ``_id``) or ``None`` for requests BeamNG does not answer (``Step`` without ``ack``).
Reply ``type`` strings are the exact ones beamngpy 1.36 checks (``MapLoaded``, ``Stepped``,
``getPlayerVehicleID`` with a lower-case g, ...). Handlers raise
:class:`~gym_s3.beamng.protocol.RequestError` / ``RequestValueError`` for a ``bngError`` /
``bngValueError`` reply. The GE table is :data:`GE_HANDLERS`; the vehicle-socket handlers live in
:mod:`gym_s3.beamng.standin.vehicle_handlers`.
"""

from __future__ import annotations

import logging
import platform
from typing import Any

from gym_s3.beamng.frames import quat_to_yaw
from gym_s3.beamng.protocol import (
    HELLO_SERVER_KEY,
    PROTOCOL_VERSION,
    SERVER_NAME,
    RequestError,
    RequestValueError,
    short_repr,
)
from gym_s3.beamng.standin import sensors
from gym_s3.beamng.standin.coverage import (
    MODELLED_VEHICLE_MODELS,
    coverage_warnings,
    modelled_levels,
)
from gym_s3.beamng.standin.fleet import Pose
from gym_s3.beamng.standin.ground import Cube
from gym_s3.beamng.standin.prefab import PrefabError, parse_prefab
from gym_s3.beamng.standin.requests import (
    Handler,
    Reply,
    RequestContext,
    poll_sensors,
    str_field,
    vector_field,
    yaw_field,
)
from gym_s3.errors import ConfigError

LOGGER = logging.getLogger(__name__)


# ----------------------------------------------------------------------- connection, system
def hello(ctx: RequestContext, msg: dict[str, Any]) -> Reply:
    """``Hello``: the protocol version beamngpy 1.36 expects, and what this server is.

    ``server`` (:data:`~gym_s3.beamng.protocol.HELLO_SERVER_KEY`) names the stand-in and
    ``standin`` is ``True``; BeamNG.tech sends neither, so clients tell the two apart from the
    greeting itself (:func:`gym_s3.beamng.client.link.identify_simulator`).
    """
    return {
        "type": "Hello",
        "protocolVersion": PROTOCOL_VERSION,
        HELLO_SERVER_KEY: SERVER_NAME,
        "standin": True,
        "levels": list(modelled_levels()),
        "vehicle_models": list(MODELLED_VEHICLE_MODELS),
    }


def get_system_info(ctx: RequestContext, msg: dict[str, Any]) -> Reply:
    """``GetSystemInfo``: host OS, and a clear statement that this is the stand-in."""
    return {
        "type": "GetSystemInfo",
        "os": {"type": platform.system().lower(), "name": platform.platform()},
        "tech": True,  # the tech protocol is served; this is NOT BeamNG.tech (see "standin")
        "standin": True,
        "product": SERVER_NAME,
    }


def get_environment_paths(ctx: RequestContext, msg: dict[str, Any]) -> Reply:
    """``GetEnvironmentPaths``: placeholder paths (the stand-in has no game folders)."""
    return {
        "type": "GetEnvironmentPaths",
        "home": "/sim2sim2sim-standin",
        "user": "/sim2sim2sim-standin/user/standin",
    }


def quit_(ctx: RequestContext, msg: dict[str, Any]) -> Reply:
    """``Quit``: acknowledge; the server only exits when started with ``exit_on_quit``.

    It then stops after this reply has been sent (:meth:`StandInServer.request_quit`).
    """
    ctx.server.request_quit(ctx.conn)
    return {"type": "Quit"}


# --------------------------------------------------------------------------------- scenario
def create_scenario(ctx: RequestContext, msg: dict[str, Any]) -> Reply:
    """``CreateScenario``: parse the prefab and register the scenario under its info path."""
    try:
        prefab = parse_prefab(str_field(msg, "prefab"))
    except PrefabError as exc:
        raise RequestError(f"CreateScenario: {exc}") from exc
    info = msg.get("info") if isinstance(msg.get("info"), dict) else {}
    level = str_field(msg, "level")
    for warning in coverage_warnings(level, [v.model for v in prefab.vehicles]):
        LOGGER.warning("%s: CreateScenario: %s", SERVER_NAME, warning)
    path = ctx.world.create_scenario(level, str_field(msg, "name"), prefab, info)
    return {"type": "CreateScenario", "result": path}


def load_scenario(ctx: RequestContext, msg: dict[str, Any]) -> Reply:
    """``LoadScenario``: instantiate the scenario; vehicles belong to this client."""
    ctx.world.load_scenario(str_field(msg, "path"), ctx.conn.cid)
    return {"type": "MapLoaded"}


def start_scenario(ctx: RequestContext, msg: dict[str, Any]) -> Reply:
    """``StartScenario``: start (Timer restarts)."""
    ctx.world.start_scenario()
    return {"type": "ScenarioStarted"}


def restart_scenario(ctx: RequestContext, msg: dict[str, Any]) -> Reply:
    """``RestartScenario``: restore the prefab (steering stays latched, issue #202)."""
    ctx.world.restart_scenario(ctx.conn.cid)
    return {"type": "ScenarioRestarted"}


def stop_scenario(ctx: RequestContext, msg: dict[str, Any]) -> Reply:
    """``StopScenario``: back to the menu."""
    ctx.world.stop_scenario()
    return {"type": "ScenarioStopped"}


def game_state(ctx: RequestContext, msg: dict[str, Any]) -> Reply:
    """``GameStateRequest``: ``menu`` or ``scenario`` with its state."""
    world = ctx.world
    if world.scenario is None:
        return {"type": "GameState", "state": "menu"}
    return {
        "type": "GameState",
        "state": "scenario",
        "scenario_state": world.scenario_state,
        "level": world.scenario.level,
    }


def get_current_vehicles(ctx: RequestContext, msg: dict[str, Any]) -> Reply:
    """``GetCurrentVehicles``: ``{vid: {id, model, name}}`` (no port: clients ask for one)."""
    result = {
        e.vid: {"id": e.object_id, "model": e.model, "name": e.vid} for e in ctx.world.entries
    }
    return {"type": "GetCurrentVehicles", "result": result}


def get_player_vehicle_id(ctx: RequestContext, msg: dict[str, Any]) -> Reply:
    """``GetPlayerVehicleID``: the focused vehicle of the scenario (reply type ``getPlayer...``)."""
    world = ctx.world
    vid = world.scenario.player_vid if world.scenario else None
    if vid is None or not world.has_vehicle(vid):
        vid = world.entries[0].vid if world.entries else None
    if vid is None:
        raise RequestError("there is no player vehicle")
    return {"type": "getPlayerVehicleID", "id": world.entry(vid).object_id, "vid": vid}


def start_vehicle_connection(ctx: RequestContext, msg: dict[str, Any]) -> Reply:
    """``StartVehicleConnection``: open (or reuse) the vehicle's socket and report its port."""
    vid = str_field(msg, "vid")
    ctx.world.entry(vid)
    port = ctx.server.open_vehicle_listener(vid)
    return {"type": "StartVehicleConnection", "vid": vid, "result": port}


# ------------------------------------------------------------------------------ time, settings
def step(ctx: RequestContext, msg: dict[str, Any]) -> Reply | None:
    """``Step``: advance ``count`` frames; reply ``Stepped`` only when ``ack`` is true."""
    ack = bool(msg.get("ack", True))
    try:
        count = msg.get("count")
        if isinstance(count, bool) or not isinstance(count, int):
            raise RequestValueError(f"Step: count must be an integer, got {short_repr(count)}")
        ctx.world.step(count)
    except (RequestError, RequestValueError) as exc:
        if ack:
            raise
        LOGGER.warning("%s: Step without ack failed (nobody is told): %s", SERVER_NAME, exc)
        return None
    return {"type": "Stepped"} if ack else None


def set_deterministic(ctx: RequestContext, msg: dict[str, Any]) -> Reply:
    """``SetPhysicsDeterministic``: recorded (the stand-in is always step-driven)."""
    ctx.world.deterministic = True
    factor = msg.get("speedFactor")
    ctx.world.speed_factor = factor if isinstance(factor, int) else None
    return {"type": "SetPhysicsDeterministic"}


def set_nondeterministic(ctx: RequestContext, msg: dict[str, Any]) -> Reply:
    """``SetPhysicsNonDeterministic``: recorded; time still only advances on ``Step``."""
    ctx.world.deterministic = False
    return {"type": "SetPhysicsNonDeterministic"}


def fps_limit(ctx: RequestContext, msg: dict[str, Any]) -> Reply:
    """``FPSLimit``: steps per simulated second (``Step{n}`` advances ``n / fps`` seconds)."""
    fps = msg.get("fps")
    if isinstance(fps, bool) or not isinstance(fps, (int, float)) or not 1 <= fps <= 2000:
        raise RequestValueError(
            f"FPSLimit: fps must be a number in [1, 2000], got {short_repr(fps)}"
        )
    if fps != int(fps):
        raise RequestValueError(f"FPSLimit: the stand-in needs a whole number of fps, got {fps}")
    ctx.world.steps_per_second = int(fps)
    return {"type": "SetFPSLimit"}


def remove_fps_limit(ctx: RequestContext, msg: dict[str, Any]) -> Reply:
    """``RemoveFPSLimit``: back to the configured default steps per second."""
    ctx.world.steps_per_second = ctx.world.config.steps_per_second
    return {"type": "RemovedFPSLimit"}


def pause(ctx: RequestContext, msg: dict[str, Any]) -> Reply:
    """``Pause``: recorded (time only advances on ``Step`` anyway)."""
    ctx.world.paused = True
    return {"type": "Paused"}


def resume(ctx: RequestContext, msg: dict[str, Any]) -> Reply:
    """``Resume``: recorded; the stand-in does not run in real time."""
    ctx.world.paused = False
    return {"type": "Resumed"}


# --------------------------------------------------------------------------- vehicles (GE)
def spawn_vehicle(ctx: RequestContext, msg: dict[str, Any]) -> Reply:
    """``SpawnVehicle``: a transient vehicle owned by this client."""
    name, model = str_field(msg, "name"), str_field(msg, "model")
    pos = vector_field(msg, "pos", 3)
    yaw = yaw_field(msg, "rot")
    pose = Pose(pos[0], pos[1], quat_to_yaw((0, 0, 0, 1)) if yaw is None else yaw)
    options = {
        k: v for k, v in msg.items() if k not in ("type", "_id", "name", "model", "pos", "rot")
    }
    for warning in coverage_warnings(None, [model]):
        LOGGER.warning("%s: SpawnVehicle: %s", SERVER_NAME, warning)
    ok = ctx.world.spawn(name, model, pose, ctx.conn.cid, options)
    if not ok:
        LOGGER.warning("%s: SpawnVehicle: vehicle %r exists already", SERVER_NAME, name)
    return {"type": "VehicleSpawned", "name": name, "success": ok}


def despawn_vehicle(ctx: RequestContext, msg: dict[str, Any]) -> Reply:
    """``DespawnVehicle``."""
    ctx.world.despawn(str_field(msg, "vid"))
    return {"type": "VehicleDespawned"}


def teleport(ctx: RequestContext, msg: dict[str, Any]) -> Reply:
    """``Teleport``: new position (and heading if ``rot`` is given); ``reset`` stops the car."""
    vid = str_field(msg, "vehicle")
    pos = vector_field(msg, "pos", 3)
    ctx.world.teleport(
        vid, (pos[0], pos[1], pos[2]), yaw_field(msg, "rot"), bool(msg.get("reset", True))
    )
    return {"type": "Teleported", "success": True}


def update_scenario(ctx: RequestContext, msg: dict[str, Any]) -> Reply:
    """``UpdateScenario``: ``{vid: {pos, dir, up, vel}}`` of the requested existing vehicles."""
    vids = msg.get("vehicles")
    if not isinstance(vids, list):
        raise RequestValueError("UpdateScenario: field 'vehicles' must be a list of vehicle ids")
    world = ctx.world
    states = {
        vid: sensors.vehicle_update(world, vid)
        for vid in vids
        if isinstance(vid, str) and world.has_vehicle(vid)
    }
    return {"type": "ScenarioUpdate", "vehicles": states}


def ge_sensor_request(ctx: RequestContext, msg: dict[str, Any]) -> Reply:
    """GE ``SensorRequest`` (engine sensors such as ``Timer``)."""
    return {"type": "SensorData", "data": poll_sensors(ctx, msg, sensors.ENGINE_SENSORS, None)}


def queue_lua_ge(ctx: RequestContext, msg: dict[str, Any]) -> Reply:
    """``QueueLuaCommandGE``: the friction template takes effect; other Lua is only logged."""
    chunk = msg.get("chunk")
    if isinstance(chunk, str) and ctx.world.run_lua(chunk):
        LOGGER.debug("%s: ground models set by Lua template", SERVER_NAME)
    else:
        shown = short_repr(chunk)
        LOGGER.info("%s: GE Lua not executed (not the friction template): %s", SERVER_NAME, shown)
    return {"type": "ExecutedLuaChunkGE"}


def create_cube(ctx: RequestContext, msg: dict[str, Any]) -> Reply:
    """``CreateCube``: a cube whose material may make it a friction patch."""
    material = msg.get("material")
    name, pos, size = (
        str_field(msg, "name"),
        vector_field(msg, "pos", 3),
        vector_field(msg, "size", 3),
    )
    rot = None if msg.get("rot") is None else vector_field(msg, "rot", 4)
    try:
        cube = Cube.from_request(
            name, pos, size, rot, material if isinstance(material, str) else None
        )
    except (ConfigError, ValueError, TypeError) as exc:
        raise RequestValueError(f"CreateCube: {exc}") from exc
    ctx.world.add_cube(cube)
    return {"type": "CreatedCube"}


def _create_mesh(cls: str, ack: str) -> Handler:
    def handler(ctx: RequestContext, msg: dict[str, Any]) -> Reply:
        ctx.world.add_object(str_field(msg, "name"), cls)
        LOGGER.info("%s: %s %r placed without friction effect", SERVER_NAME, cls, msg.get("name"))
        return {"type": ack}

    handler.__doc__ = f"``Create{cls}``: recorded; only cubes act as friction patches."
    return handler


def remove_object(ctx: RequestContext, msg: dict[str, Any]) -> Reply:
    """``RemoveObject``."""
    name = str_field(msg, "name")
    if not ctx.world.remove_object(name):
        raise RequestError(f"RemoveObject: there is no object named {name!r}")
    return {"type": "RemovedObject"}


#: game-engine socket: request type -> handler
GE_HANDLERS: dict[str, Handler] = {
    "Hello": hello,
    "GetSystemInfo": get_system_info,
    "GetEnvironmentPaths": get_environment_paths,
    "CreateScenario": create_scenario,
    "LoadScenario": load_scenario,
    "StartScenario": start_scenario,
    "RestartScenario": restart_scenario,
    "StopScenario": stop_scenario,
    "GameStateRequest": game_state,
    "GetCurrentVehicles": get_current_vehicles,
    "GetPlayerVehicleID": get_player_vehicle_id,
    "StartVehicleConnection": start_vehicle_connection,
    "Step": step,
    "Pause": pause,
    "Resume": resume,
    "SetPhysicsDeterministic": set_deterministic,
    "SetPhysicsNonDeterministic": set_nondeterministic,
    "FPSLimit": fps_limit,
    "RemoveFPSLimit": remove_fps_limit,
    "SpawnVehicle": spawn_vehicle,
    "DespawnVehicle": despawn_vehicle,
    "Teleport": teleport,
    "UpdateScenario": update_scenario,
    "SensorRequest": ge_sensor_request,
    "QueueLuaCommandGE": queue_lua_ge,
    "CreateCube": create_cube,
    "CreateCylinder": _create_mesh("Cylinder", "CreatedCylinder"),
    "CreateBump": _create_mesh("Bump", "CreatedBump"),
    "CreateCone": _create_mesh("Cone", "CreatedCone"),
    "CreateRing": _create_mesh("Ring", "CreatedRing"),
    "RemoveObject": remove_object,
    "Quit": quit_,
}
