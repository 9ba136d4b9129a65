"""Sensor payloads in BeamNG's raw shapes and names, built from the world's vehicle snapshot.

Each builder returns what the real simulator puts under ``SensorData.data[name]`` (see
``shared/reference/beamngpy-protocol.md`` §4); the beamngpy client post-processes it exactly as it
would real data (e.g. ``Electrics`` renames ``gearIndex`` to ``gear_index``).

Frames and units: ``State.dir`` is the unit forward vector, ``vel`` the world velocity [m/s],
``rotation`` the quaternion of :mod:`gym_s3.beamng.frames`, ``pos`` the centre of gravity at
ground height. ``GForces`` are the body accelerations of the last physics step in the BeamNG
vehicle frame (+X left, +Y backward, +Z up) [m/s^2]; ``gx2``/``gy2``/``gz2`` are the same values
through a first-order filter. The vertical component is 0: the stand-in's vehicle has no heave.

What the engine and wheel electrics mean on the stand-in (its car has one fixed drive ratio and
no gearbox):

* ``wheelspeed`` [m/s]: as on BeamNG (``wheels.lua``), ``|mean(omega * radius)|`` over the
  *speedometer wheels*, here the undriven (rear) wheels of the front-wheel-drive car (all wheels
  for all-wheel drive), so it equals the car's speed unless those wheels lock or slide; the
  driven wheels may spin far faster at a full-throttle launch (per wheel: ``s3_wheel_speed``).
  ``avgWheelAV`` [rad/s] is the mean angular speed of the same wheels.
* ``gearIndex`` (``gear_index`` after beamngpy) is the drive direction, not a gear: 1 forward,
  0 neutral, -1 reverse. It never shifts: there is no gearbox to shift.
* ``rpm`` is the driven wheels' mean angular speed times ``WorldConfig.drive_ratio`` (at least
  ``idle_rpm``): informative only, no engine map depends on it.

Electrics beyond BeamNG's own keys are namespaced ``s3_*`` (per-wheel speeds, friction and ground
model, yaw rate, body velocities): real BeamNG does not send them, so consumers must treat them as
optional.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from gym_s3.beamng.frames import yaw_to_quat
from gym_s3.beamng.standin.fleet import BRAKE, CLUTCH, PARKINGBRAKE, STEER, THROTTLE
from gym_s3.beamng.standin.world import World

#: distance from the centre of gravity to the front bumper of the stand-in's car [m]
FRONT_OVERHANG_M = 0.9
_RPM_PER_RAD_S = 60.0 / (2.0 * math.pi)


def state_payload(world: World, vid: str) -> dict[str, Any]:
    """Raw ``State`` sensor data (``{"type": "VehicleUpdate", "state": {...}}``)."""
    row = world.row(vid)
    snap = world.snapshot()
    x, y, z, yaw = (float(snap[k][row]) for k in ("x", "y", "z", "yaw"))
    vx, vy = float(snap["vx"][row]), float(snap["vy"][row])
    c, s = math.cos(yaw), math.sin(yaw)
    front = world.config.vehicle_params.l_f + FRONT_OVERHANG_M
    return {
        "type": "VehicleUpdate",
        "state": {
            "time": world.sim_time,
            "pos": [x, y, z],
            "dir": [c, s, 0.0],
            "up": [0.0, 0.0, 1.0],
            "vel": [c * vx - s * vy, s * vx + c * vy, 0.0],
            "front": [x + front * c, y + front * s, z],
            "rotation": list(yaw_to_quat(yaw)),
        },
    }


def vehicle_update(world: World, vid: str) -> dict[str, Any]:
    """One vehicle of an ``UpdateScenario`` reply: ``{pos, dir, up, vel}``."""
    state = state_payload(world, vid)["state"]
    return {key: state[key] for key in ("pos", "dir", "up", "vel")}


def speedometer_wheels(drive_shares: tuple[float, ...]) -> list[int]:
    """Indices of the wheels the ``wheelspeed`` electric averages: the undriven ones.

    Args:
        drive_shares: share of the drive torque of each wheel (FL, FR, RL, RR) [-].

    Returns:
        the wheels with no drive torque, or all wheels when every wheel is driven.
    """
    undriven = [i for i, share in enumerate(drive_shares) if share == 0.0]
    return undriven or list(range(len(drive_shares)))


def electrics_payload(world: World, vid: str) -> dict[str, Any]:
    """Raw ``Electrics`` sensor data (``{"type": "Electrics", "values": {...}}``)."""
    row = world.row(vid)
    entry = world.entries[row]
    snap = world.snapshot()
    params = world.config.vehicle_params
    cfg = world.config
    controls = snap["controls"][row]
    omega = snap["omega"][row]
    wheel_speed = omega * params.wheel_radius
    speedo = speedometer_wheels(params.drive_shares)
    vx, vy = float(snap["vx"][row]), float(snap["vy"][row])
    brake = float(snap["brake"][row])
    shaft = float(sum(w * s for w, s in zip(omega, params.drive_shares, strict=True)))
    rpm = max(cfg.idle_rpm, abs(shaft) * cfg.drive_ratio * _RPM_PER_RAD_S)
    steer_angle = float(snap["steer_angle"][row])
    abs_active = bool(
        cfg.abs_enabled
        and brake > 0.05
        and vx > params.abs_min_speed
        and float(wheel_speed.min()) < vx * (1.0 - 0.5 * params.abs_target_slip)
    )
    gear = entry.gear
    values: dict[str, Any] = {
        "wheelspeed": abs(float(wheel_speed[speedo].mean())),
        "airspeed": math.hypot(vx, vy),
        "throttle": float(snap["throttle"][row]),
        "throttle_input": float(controls[THROTTLE]),
        "brake": brake,
        "brake_input": float(controls[BRAKE]),
        "parkingbrake": float(controls[PARKINGBRAKE]),
        "parkingbrake_input": float(controls[PARKINGBRAKE]),
        "clutch": float(controls[CLUTCH]),
        "clutch_input": float(controls[CLUTCH]),
        # steering-wheel angle [deg], same sign as the input (+ = right)
        "steering": -math.degrees(steer_angle) * cfg.steering_ratio,
        "steering_input": float(controls[STEER]),
        "rpm": rpm,
        "rpmTacho": rpm,
        "gear": "R" if gear < 0 else ("N" if gear == 0 else "D"),
        "gearIndex": gear,
        "gear_A": gear,
        "reverse": gear < 0,
        "running": True,
        "ignition": True,
        "engineLoad": float(snap["throttle"][row]),
        "avgWheelAV": float(omega[speedo].mean()),
        "isShifting": False,
        "abs": 1 if cfg.abs_enabled else 0,
        "absActive": abs_active,
        "esc": 0,
        "escActive": False,
        "tcs": 0,
        "tcsActive": False,
        "altitude": float(snap["z"][row]),
        # --- stand-in extras (absent on real BeamNG) ---
        "s3_standin": True,
        "s3_wheel_speed": wheel_speed.tolist(),
        "s3_wheel_omega": omega.tolist(),
        "s3_wheel_mu": snap["wheel_mu"][row].tolist(),
        "s3_wheel_ground_model": snap["wheel_ground_model"][row].tolist(),
        "s3_yaw_rate": float(snap["yaw_rate"][row]),
        "s3_vx": vx,
        "s3_vy": vy,
        "s3_ax": float(snap["ax"][row]),
        "s3_ay": float(snap["ay"][row]),
        "s3_steer_angle": steer_angle,
        "s3_fault": bool(snap["fault"][row]),
    }
    return {"type": "Electrics", "values": values}


def gforces_payload(world: World, vid: str) -> dict[str, Any]:
    """Raw ``GForces`` sensor data in BeamNG's vehicle frame (+X left, +Y back, +Z up) [m/s^2]."""
    row = world.row(vid)
    snap = world.snapshot()
    ax, ay = float(snap["ax"][row]), float(snap["ay"][row])
    fwd2, left2, up2 = (float(v) for v in snap["accel_smooth"][row])
    return {
        "type": "GForces",
        "gx": ay,
        "gy": -ax,
        "gz": 0.0,
        "gx2": left2,
        "gy2": -fwd2,
        "gz2": up2,
    }


def damage_payload(world: World, vid: str) -> dict[str, Any]:
    """Raw ``Damage`` sensor data: nothing ever breaks in the stand-in."""
    world.row(vid)
    return {
        "type": "Damage",
        "damage": 0.0,
        "damage_ext": 0.0,
        "deform_group_damage": {},
        "lowpressure": False,
        "part_damage": {},
    }


def timer_payload(world: World, vid: str) -> dict[str, Any]:
    """Raw ``Timer`` sensor data: seconds since ``StartScenario`` (a GE sensor)."""
    return {"time": world.scenario_time}


#: sensors answered on a vehicle socket: request ``type`` -> builder
VEHICLE_SENSORS: dict[str, Callable[[World, str], dict[str, Any]]] = {
    "State": state_payload,
    "Electrics": electrics_payload,
    "GForces": gforces_payload,
    "Damage": damage_payload,
}
#: sensors answered on the GE socket (the request carries the vehicle id)
ENGINE_SENSORS: dict[str, Callable[[World, str], dict[str, Any]]] = {"Timer": timer_payload}
