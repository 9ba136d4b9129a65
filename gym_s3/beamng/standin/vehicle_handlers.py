"""Vehicle-socket (VE) request handlers of the stand-in.

Each vehicle has its own socket (``StartVehicleConnection``); requests on it act on that vehicle.
Same conventions as :mod:`gym_s3.beamng.standin.handlers`; the table is :data:`VE_HANDLERS`.
"""

from __future__ import annotations

import logging
from typing import Any

from gym_s3.beamng.protocol import SERVER_NAME, RequestError, RequestValueError, short_repr
from gym_s3.beamng.standin import sensors
from gym_s3.beamng.standin.handlers import hello
from gym_s3.beamng.standin.requests import (
    Handler,
    Reply,
    RequestContext,
    number_field,
    poll_sensors,
    vehicle_id,
)

LOGGER = logging.getLogger(__name__)
#: largest forward speed ``SetVelocity`` accepts [m/s] (720 km/h, beyond any road vehicle)
MAX_SET_SPEED = 200.0


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
        name: min(max(number_field(msg, name), low), high)
        for name, (low, high) in ranges.items()
        if name in msg
    }
    gear = msg.get("gear")
    if gear is not None and (isinstance(gear, bool) or not isinstance(gear, int)):
        raise RequestValueError(f"Control: gear must be an integer, got {short_repr(gear)}")
    ctx.world.set_controls(vehicle_id(ctx), values, gear)
    return {"type": "Controlled"}


def set_shift_mode(ctx: RequestContext, msg: dict[str, Any]) -> Reply:
    """``SetShiftMode``: recorded (the stand-in's car has a single-speed drive)."""
    ctx.world.entry(vehicle_id(ctx)).shift_mode = int(number_field(msg, "mode"))
    return {"type": "ShiftModeSet"}


def ve_sensor_request(ctx: RequestContext, msg: dict[str, Any]) -> Reply:
    """VE ``SensorRequest`` (State, Electrics, GForces, Damage)."""
    return {
        "type": "SensorData",
        "data": poll_sensors(ctx, msg, sensors.VEHICLE_SENSORS, vehicle_id(ctx)),
    }


def queue_lua_ve(ctx: RequestContext, msg: dict[str, Any]) -> Reply:
    """``QueueLuaCommandVE``: logged and acknowledged, never executed."""
    LOGGER.info("%s: vehicle Lua not executed: %s", SERVER_NAME, short_repr(msg.get("chunk")))
    return {"type": "ExecutedLuaChunkVE"}


def recover(ctx: RequestContext, msg: dict[str, Any]) -> Reply:
    """``Recover``: at rest where it stands."""
    ctx.world.recover(vehicle_id(ctx))
    return {"type": "Recovered"}


def set_velocity(ctx: RequestContext, msg: dict[str, Any]) -> Reply:
    """``SetVelocity``: forward speed set at once (BeamNG ramps it over ``dt``).

    Speeds beyond :data:`MAX_SET_SPEED` are refused: a finite but absurd speed (``1e308``)
    overflowed the wheel spin to ``inf`` and poisoned the physics.
    """
    speed = number_field(msg, "velocity")
    if abs(speed) > MAX_SET_SPEED:
        raise RequestValueError(
            f"SetVelocity: velocity must be within +-{MAX_SET_SPEED:g} m/s, got {speed:g}"
        )
    ctx.world.set_speed(vehicle_id(ctx), speed)
    return {"type": "VelocitySet"}


def set_ai_mode(ctx: RequestContext, msg: dict[str, Any]) -> Reply:
    """``SetAiMode``: only ``disabled`` exists in the stand-in."""
    if msg.get("mode") != "disabled":
        raise RequestError(
            f"the {SERVER_NAME} has no AI driver (mode {short_repr(msg.get('mode'))})"
        )
    return {"type": "AiModeSet"}


def center_of_gravity(ctx: RequestContext, msg: dict[str, Any]) -> Reply:
    """``GetCenterOfGravity``: world position of the centre of gravity [m]."""
    state = sensors.state_payload(ctx.world, vehicle_id(ctx))["state"]
    pos = state["pos"]
    return {
        "type": "GetCenterOfGravity",
        "data": [pos[0], pos[1], pos[2] + ctx.world.config.vehicle_params.h_cg],
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
