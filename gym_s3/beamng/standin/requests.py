"""Shared pieces of the request handlers: typed field access with protocol errors, sensor polls.

A malformed field raises :class:`~gym_s3.beamng.protocol.RequestValueError`, which the server turns
into a ``bngValueError`` reply naming the request and the field.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from gym_s3.beamng.frames import quat_to_yaw
from gym_s3.beamng.protocol import RequestError, RequestValueError, short_repr
from gym_s3.beamng.standin.sockets import Connection
from gym_s3.beamng.standin.world import World


class ServerControl(Protocol):
    """What a handler may ask of the server (:class:`.server.StandInServer`)."""

    def open_vehicle_listener(self, vid: str) -> int:
        """Port of the vehicle's socket, opening it on first use."""
        ...

    def record_unknown(self, prefix: str, value: Any) -> None:
        """Remember an unknown request or sensor type."""
        ...

    def request_quit(self, conn: Connection) -> None:
        """Stop once the reply to ``Quit`` on ``conn`` has been sent (with ``exit_on_quit``)."""
        ...


@dataclass(frozen=True)
class RequestContext:
    """What a request handler may touch.

    Attributes:
        server: the server (vehicle listeners, unknown requests, quit).
        world: the simulated world.
        conn: the connection the request arrived on.
    """

    server: ServerControl
    world: World
    conn: Connection


#: a reply map (the server adds ``_id``)
Reply = dict[str, Any]
#: ``handler(context, request) -> reply or None``
Handler = Callable[[RequestContext, dict[str, Any]], "Reply | None"]


def str_field(msg: dict[str, Any], key: str) -> str:
    """Field ``key`` as a non-empty string."""
    value = msg.get(key)
    if not isinstance(value, str) or not value:
        raise RequestValueError(f"{msg.get('type')}: field {key!r} must be a non-empty string")
    return value


def number_field(msg: dict[str, Any], key: str) -> float:
    """Field ``key`` as a finite number."""
    value = msg.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise RequestValueError(f"{msg.get('type')}: field {key!r} must be a finite number")
    return float(value)


def vector_field(msg: dict[str, Any], key: str, size: int) -> tuple[float, ...]:
    """Field ``key`` as ``size`` finite numbers."""
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


def yaw_field(msg: dict[str, Any], key: str) -> float | None:
    """Heading [rad] of the quaternion in field ``key``, or ``None`` if absent or null."""
    if msg.get(key) is None:
        return None
    try:
        return quat_to_yaw(vector_field(msg, key, 4))
    except ValueError as exc:
        raise RequestValueError(f"{msg.get('type')}: {key}: {exc}") from exc


def vehicle_id(ctx: RequestContext) -> str:
    """Vehicle id of the vehicle socket a request arrived on."""
    assert ctx.conn.vid is not None
    return ctx.conn.vid


def poll_sensors(
    ctx: RequestContext,
    msg: dict[str, Any],
    table: dict[str, Callable[..., dict[str, Any]]],
    vid: str | None,
) -> dict[str, Any]:
    """Build ``SensorData.data`` for the sensors named in a ``SensorRequest``.

    Raises:
        RequestError: a sensor type the stand-in does not simulate (also recorded as unknown).
    """
    requests = msg.get("sensors")
    if not isinstance(requests, dict):
        raise RequestValueError("SensorRequest: field 'sensors' must be a map name -> request")
    data: dict[str, Any] = {}
    for name, request in requests.items():
        kind = request.get("type") if isinstance(request, dict) else None
        builder = table.get(kind) if isinstance(kind, str) else None
        if builder is None:
            shown = short_repr(kind)
            ctx.server.record_unknown(f"{ctx.conn.kind} SensorRequest:", kind)
            raise RequestError(
                f"sensor type {shown} ({short_repr(name)}) is not simulated by the stand-in"
            )
        data[name] = builder(ctx.world, vid if vid is not None else str(request.get("vehicle")))
    return data
