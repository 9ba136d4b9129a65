"""Request handlers of the stand-in: one function per BeamNG request ``type``.

Each handler takes the request context and the decoded request and returns the reply map (the
server adds ``_id``) or ``None`` for requests BeamNG does not answer (``Step`` without ``ack``).
Reply ``type`` strings are the exact ones beamngpy 1.36 checks (``MapLoaded``, ``Stepped``,
``getPlayerVehicleID`` with a lower-case g, ...). Handlers raise
:class:`~gym_s3.beamng.protocol.RequestError` / ``RequestValueError`` for a ``bngError`` /
``bngValueError`` reply. Game-engine (GE) handlers are in :data:`GE_HANDLERS`, vehicle-socket
(VE) handlers in :data:`VE_HANDLERS`.
"""

from __future__ import annotations

import logging
import math
import platform
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from gym_s3.beamng import sensors
from gym_s3.beamng.fleet import Pose
from gym_s3.beamng.frames import quat_to_yaw
from gym_s3.beamng.ground import Cube
from gym_s3.beamng.prefab import PrefabError, parse_prefab
from gym_s3.beamng.protocol import PROTOCOL_VERSION, RequestError, RequestValueError
from gym_s3.errors import ConfigError

if TYPE_CHECKING:
    from gym_s3.beamng.server import RequestContext

LOGGER = logging.getLogger(__name__)
Reply = dict[str, Any]
Handler = Callable[["RequestContext", dict[str, Any]], "Reply | None"]
_SERVER_NAME = "sim2sim2sim open stand-in (not BeamNG)"


# ------------------------------------------------------------------------------ field helpers
def _str(msg: dict[str, Any], key: str) -> str:
    value = msg.get(key)
    if not isinstance(value, str) or not value:
        raise RequestValueError(f"{msg.get('type')}: field {key!r} must be a non-empty string")
    return value


def _number(msg: dict[str, Any], key: str) -> float:
    value = msg.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise RequestValueError(f"{msg.get('type')}: field {key!r} must be a finite number")
    return float(value)


def _vector(msg: dict[str, Any], key: str, size: int) -> tuple[float, ...]:
    value = msg.get(key)
    ok = isinstance(value, list) and len(value) == size
    if ok:
        ok = all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
            for v in value
        )
    if not ok:
        raise RequestValueError(f"{msg.get('type')}: field {key!r} must be {size} finite numbers")
    return tuple(float(v) for v in value)


def _yaw(msg: dict[str, Any], key: str) -> float | None:
    if msg.get(key) is None:
        return None
    try:
        return quat_to_yaw(_vector(msg, key, 4))
    except ValueError as exc:
        raise RequestValueError(f"{msg.get('type')}: {key}: {exc}") from exc


# ----------------------------------------------------------------------- connection, system
def hello(ctx: RequestContext, msg: dict[str, Any]) -> Reply:
    """``Hello``: report the protocol version beamngpy 1.36 expects."""
    return {"type": "Hello", "protocolVersion": PROTOCOL_VERSION}


def get_system_info(ctx: RequestContext, msg: dict[str, Any]) -> Reply:
    """``GetSystemInfo``: host OS, and a clear statement that this is the stand-in."""
    return {
        "type": "GetSystemInfo",
        "os": {"type": platform.system().lower(), "name": platform.platform()},
        "tech": True,  # the tech protocol is served; this is NOT BeamNG.tech (see "standin")
        "standin": True,
        "product": _SERVER_NAME,
    }


def get_environment_paths(ctx: RequestContext, msg: dict[str, Any]) -> Reply:
    """``GetEnvironmentPaths``: placeholder paths (the stand-in has no game folders)."""
    return {
        "type": "GetEnvironmentPaths",
        "home": "/sim2sim2sim-standin",
        "user": "/sim2sim2sim-standin/user/standin",
    }


def quit_(ctx: RequestContext, msg: dict[str, Any]) -> Reply:
    """``Quit``: acknowledge; the server only exits when started with ``exit_on_quit``."""
    ctx.server.request_quit()
    return {"type": "Quit"}


# --------------------------------------------------------------------------------- scenario
def create_scenario(ctx: RequestContext, msg: dict[str, Any]) -> Reply:
    """``CreateScenario``: parse the prefab and register the scenario under its info path."""
    try:
        prefab = parse_prefab(_str(msg, "prefab"))
    except PrefabError as exc:
        raise RequestError(f"CreateScenario: {exc}") from exc
    info = msg.get("info") if isinstance(msg.get("info"), dict) else {}
    path = ctx.world.create_scenario(_str(msg, "level"), _str(msg, "name"), prefab, info)
    return {"type": "CreateScenario", "result": path}


def load_scenario(ctx: RequestContext, msg: dict[str, Any]) -> Reply:
    """``LoadScenario``: instantiate the scenario; vehicles belong to this client."""
    ctx.world.load_scenario(_str(msg, "path"), ctx.conn.cid)
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
    vid = _str(msg, "vid")
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
            raise RequestValueError(f"Step: count must be an integer, got {count!r}")
        ctx.world.step(count)
    except (RequestError, RequestValueError) as exc:
        if ack:
            raise
        LOGGER.warning("%s: Step without ack failed (nobody is told): %s", _SERVER_NAME, exc)
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
        raise RequestValueError(f"FPSLimit: fps must be a number in [1, 2000], got {fps!r}")
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
    name, model = _str(msg, "name"), _str(msg, "model")
    pos = _vector(msg, "pos", 3)
    yaw = _yaw(msg, "rot")
    pose = Pose(pos[0], pos[1], quat_to_yaw((0, 0, 0, 1)) if yaw is None else yaw)
    options = {
        k: v for k, v in msg.items() if k not in ("type", "_id", "name", "model", "pos", "rot")
    }
    ok = ctx.world.spawn(name, model, pose, ctx.conn.cid, options)
    if not ok:
        LOGGER.warning("%s: SpawnVehicle: vehicle %r exists already", _SERVER_NAME, name)
    return {"type": "VehicleSpawned", "name": name, "success": ok}


def despawn_vehicle(ctx: RequestContext, msg: dict[str, Any]) -> Reply:
    """``DespawnVehicle``."""
    ctx.world.despawn(_str(msg, "vid"))
    return {"type": "VehicleDespawned"}


def teleport(ctx: RequestContext, msg: dict[str, Any]) -> Reply:
    """``Teleport``: new position (and heading if ``rot`` is given); ``reset`` stops the car."""
    vid = _str(msg, "vehicle")
    pos = _vector(msg, "pos", 3)
    ctx.world.teleport(
        vid, (pos[0], pos[1], pos[2]), _yaw(msg, "rot"), bool(msg.get("reset", True))
    )
    return {"type": "Teleported", "success": True}


def update_scenario(ctx: RequestContext, msg: dict[str, Any]) -> Reply:
    """``UpdateScenario``: ``{vid: {pos, dir, up, vel}}`` of the requested existing vehicles."""
    vids = msg.get("vehicles") or []
    world = ctx.world
    states = {vid: sensors.vehicle_update(world, vid) for vid in vids if world.has_vehicle(vid)}
    return {"type": "ScenarioUpdate", "vehicles": states}


def ge_sensor_request(ctx: RequestContext, msg: dict[str, Any]) -> Reply:
    """GE ``SensorRequest`` (engine sensors such as ``Timer``)."""
    return {"type": "SensorData", "data": _poll(ctx, msg, sensors.ENGINE_SENSORS, None)}


def queue_lua_ge(ctx: RequestContext, msg: dict[str, Any]) -> Reply:
    """``QueueLuaCommandGE``: the friction template takes effect; other Lua is only logged."""
    chunk = msg.get("chunk")
    if isinstance(chunk, str) and ctx.world.run_lua(chunk):
        LOGGER.debug("%s: ground models set by Lua template", _SERVER_NAME)
    else:
        LOGGER.info(
            "%s: GE Lua not executed (not the friction template): %.200r", _SERVER_NAME, chunk
        )
    return {"type": "ExecutedLuaChunkGE"}


def create_cube(ctx: RequestContext, msg: dict[str, Any]) -> Reply:
    """``CreateCube``: a cube whose material may make it a friction patch."""
    material = msg.get("material")
    try:
        cube = Cube.from_request(
            _str(msg, "name"), msg.get("pos"), msg.get("size"), msg.get("rot"),
            material if isinstance(material, str) else None,
        )  # fmt: skip
    except (ConfigError, ValueError, TypeError) as exc:
        raise RequestValueError(f"CreateCube: {exc}") from exc
    ctx.world.add_cube(cube)
    return {"type": "CreatedCube"}


def _create_mesh(cls: str, ack: str) -> Handler:
    def handler(ctx: RequestContext, msg: dict[str, Any]) -> Reply:
        ctx.world.add_object(_str(msg, "name"), cls)
        LOGGER.info("%s: %s %r placed without friction effect", _SERVER_NAME, cls, msg.get("name"))
        return {"type": ack}

    handler.__doc__ = f"``Create{cls}``: recorded; only cubes act as friction patches."
    return handler


def remove_object(ctx: RequestContext, msg: dict[str, Any]) -> Reply:
    """``RemoveObject``."""
    name = _str(msg, "name")
    if not ctx.world.remove_object(name):
        raise RequestError(f"RemoveObject: there is no object named {name!r}")
    return {"type": "RemovedObject"}


# ------------------------------------------------------------------------ vehicle socket (VE)
def control(ctx: RequestContext, msg: dict[str, Any]) -> Reply:
    """``Control``: latch the given inputs (clipped to BeamNG's ranges)."""
    ranges = {
        "steering": (-1.0, 1.0),
        "throttle": (0.0, 1.0),
        "brake": (0.0, 1.0),
        "parkingbrake": (0.0, 1.0),
        "clutch": (0.0, 1.0),
    }
    values = {
        name: min(max(_number(msg, name), low), high)
        for name, (low, high) in ranges.items()
        if name in msg
    }
    gear = msg.get("gear")
    if gear is not None and (isinstance(gear, bool) or not isinstance(gear, int)):
        raise RequestValueError(f"Control: gear must be an integer, got {gear!r}")
    ctx.world.set_controls(_vid(ctx), values, gear)
    return {"type": "Controlled"}


def set_shift_mode(ctx: RequestContext, msg: dict[str, Any]) -> Reply:
    """``SetShiftMode``: recorded (the stand-in's car has a single-speed drive)."""
    ctx.world.entry(_vid(ctx)).shift_mode = int(_number(msg, "mode"))
    return {"type": "ShiftModeSet"}


def ve_sensor_request(ctx: RequestContext, msg: dict[str, Any]) -> Reply:
    """VE ``SensorRequest`` (State, Electrics, GForces, Damage)."""
    return {"type": "SensorData", "data": _poll(ctx, msg, sensors.VEHICLE_SENSORS, _vid(ctx))}


def queue_lua_ve(ctx: RequestContext, msg: dict[str, Any]) -> Reply:
    """``QueueLuaCommandVE``: logged and acknowledged, never executed."""
    LOGGER.info("%s: vehicle Lua not executed: %.200r", _SERVER_NAME, msg.get("chunk"))
    return {"type": "ExecutedLuaChunkVE"}


def recover(ctx: RequestContext, msg: dict[str, Any]) -> Reply:
    """``Recover``: at rest where it stands."""
    ctx.world.recover(_vid(ctx))
    return {"type": "Recovered"}


def set_velocity(ctx: RequestContext, msg: dict[str, Any]) -> Reply:
    """``SetVelocity``: forward speed set at once (BeamNG ramps it over ``dt``)."""
    ctx.world.set_speed(_vid(ctx), _number(msg, "velocity"))
    return {"type": "VelocitySet"}


def set_ai_mode(ctx: RequestContext, msg: dict[str, Any]) -> Reply:
    """``SetAiMode``: only ``disabled`` exists in the stand-in."""
    if msg.get("mode") != "disabled":
        raise RequestError(f"the {_SERVER_NAME} has no AI driver (mode {msg.get('mode')!r})")
    return {"type": "AiModeSet"}


def center_of_gravity(ctx: RequestContext, msg: dict[str, Any]) -> Reply:
    """``GetCenterOfGravity``: world position of the centre of gravity [m]."""
    state = sensors.state_payload(ctx.world, _vid(ctx))["state"]
    pos = state["pos"]
    return {
        "type": "GetCenterOfGravity",
        "data": [pos[0], pos[1], pos[2] + ctx.world.config.vehicle_params.h_cg],
    }


def _vid(ctx: RequestContext) -> str:
    assert ctx.conn.vid is not None
    return ctx.conn.vid


def _poll(
    ctx: RequestContext,
    msg: dict[str, Any],
    table: dict[str, Callable[..., dict[str, Any]]],
    vid: str | None,
) -> dict[str, Any]:
    requests = msg.get("sensors")
    if not isinstance(requests, dict):
        raise RequestValueError("SensorRequest: field 'sensors' must be a map name -> request")
    data: dict[str, Any] = {}
    for name, request in requests.items():
        kind = request.get("type") if isinstance(request, dict) else None
        builder = table.get(kind) if isinstance(kind, str) else None
        if builder is None:
            ctx.server.unknown_requests.append(f"{ctx.conn.kind} SensorRequest:{kind}")
            raise RequestError(f"sensor type {kind!r} ({name!r}) is not simulated by the stand-in")
        data[name] = builder(ctx.world, vid if vid is not None else str(request.get("vehicle")))
    return data


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
#: vehicle socket: request type -> handler
VE_HANDLERS: dict[str, Handler] = {
    "Hello": hello,
    "Control": control,
    "SetShiftMode": set_shift_mode,
    "SensorRequest": ve_sensor_request,
    "QueueLuaCommandVE": queue_lua_ve,
    "Recover": recover,
    "SetVelocity": set_velocity,
    "SetAiMode": set_ai_mode,
    "GetCenterOfGravity": center_of_gravity,
}
