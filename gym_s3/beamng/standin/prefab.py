"""Lenient reader for the scenario prefab that beamngpy sends in ``CreateScenario``.

beamngpy renders one JSON-like object per line (see its ``templates/prefab.json``): vehicles
(``BeamNGVehicle``), decal roads, mesh roads, other scenario objects and a closing ``SimGroup``.
Road lines carry trailing commas (``[...],]``) and generic objects may carry Python reprs, so this
reader strips trailing commas before parsing and skips (with a log line) any non-vehicle line that
still is not JSON. A vehicle line that cannot be read is an error: the scenario would silently
lose a car.
"""

from __future__ import annotations

import json
import logging
import math
import re
from dataclasses import dataclass, field
from typing import Any

from gym_s3.beamng.frames import matrix_to_yaw
from gym_s3.beamng.protocol import short_repr
from gym_s3.errors import S3Error

LOGGER = logging.getLogger(__name__)

_TRAILING_COMMA_RE = re.compile(r",\s*([\]}])")


class PrefabError(S3Error, ValueError):
    """A scenario prefab contains a vehicle the stand-in cannot read."""


@dataclass(frozen=True)
class PrefabVehicle:
    """A vehicle placed by the prefab.

    Attributes:
        name: vehicle id (``vid``).
        model: jBeam model name (e.g. ``"etk800"``).
        position: spawn position ``(x, y, z)`` [m].
        yaw: spawn heading of the forward axis [rad] (see :mod:`gym_s3.beamng.frames`).
        options: every other field of the prefab line (license text, colour, part config, ...).
    """

    name: str
    model: str
    position: tuple[float, float, float]
    yaw: float
    options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class PrefabObject:
    """Any other object of the prefab (roads, mesh roads, waypoints, the scenario group, ...).

    Attributes:
        name: object name.
        cls: BeamNG class name (``"DecalRoad"``, ``"MeshRoad"``, ``"SimGroup"``, ...).
        fields: the parsed line.
    """

    name: str
    cls: str
    fields: dict[str, Any]


@dataclass(frozen=True)
class Prefab:
    """A parsed prefab.

    Attributes:
        vehicles: the vehicles in prefab order.
        objects: the other objects in prefab order.
        skipped_lines: number of non-vehicle lines that could not be parsed.
    """

    vehicles: tuple[PrefabVehicle, ...]
    objects: tuple[PrefabObject, ...]
    skipped_lines: int = 0


def parse_prefab(text: str) -> Prefab:
    """Parse a beamngpy prefab string.

    Args:
        text: the ``prefab`` field of ``CreateScenario`` (one object per line).

    Returns:
        The vehicles and other objects.

    Raises:
        PrefabError: a vehicle line is unreadable, lacks its model, position or rotation, or
            repeats the name of an earlier vehicle.
    """
    vehicles: list[PrefabVehicle] = []
    objects: list[PrefabObject] = []
    skipped = 0
    seen: set[str] = set()
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line:
            continue
        parsed = _parse_line(line)
        if parsed is None:
            if "BeamNGVehicle" in line:
                raise PrefabError(f"prefab line {number} looks like a vehicle but is not JSON")
            LOGGER.info("prefab line %d is not JSON even leniently; skipped: %.120s", number, line)
            skipped += 1
            continue
        cls, name = (_text(parsed.get(key)) for key in ("class", "name"))
        if cls == "BeamNGVehicle":
            vehicle = _vehicle(parsed, number)
            if vehicle.name in seen:
                raise PrefabError(f"prefab line {number}: a second vehicle named {vehicle.name!r}")
            seen.add(vehicle.name)
            vehicles.append(vehicle)
        else:
            objects.append(PrefabObject(name, cls, parsed))
    return Prefab(tuple(vehicles), tuple(objects), skipped)


def _text(value: Any) -> str:
    """A string field of a prefab line; anything else reads as empty.

    Other values are never ``str()``-ed: a deeply nested one would make ``repr`` recurse too deep.
    """
    return value if isinstance(value, str) else ""


def _parse_line(line: str) -> dict[str, Any] | None:
    try:
        value = json.loads(_TRAILING_COMMA_RE.sub(r"\1", line))
    except (json.JSONDecodeError, RecursionError):  # RecursionError: nesting beyond ~1000 levels
        return None
    return value if isinstance(value, dict) else None


def _vehicle(fields: dict[str, Any], number: int) -> PrefabVehicle:
    name = fields.get("name")
    model = fields.get("jBeam")
    if not isinstance(name, str) or not name:
        raise PrefabError(f"prefab vehicle on line {number} has no name")
    if not isinstance(model, str) or not model:
        raise PrefabError(f"prefab vehicle {name!r} (line {number}) has no jBeam model")
    position = _floats(fields.get("position"), 3, f"position of prefab vehicle {name!r}")
    matrix = fields.get("rotationMatrix", [1, 0, 0, 0, 1, 0, 0, 0, 1])
    try:
        yaw = matrix_to_yaw(_floats(matrix, 9, f"rotationMatrix of prefab vehicle {name!r}"))
    except ValueError as exc:
        raise PrefabError(f"prefab vehicle {name!r}: {exc}") from exc
    skip = {"name", "jBeam", "position", "rotationMatrix", "class"}
    options = {key: value for key, value in fields.items() if key not in skip}
    return PrefabVehicle(name, model, (position[0], position[1], position[2]), yaw, options)


def _floats(value: Any, count: int, what: str) -> list[float]:
    if not isinstance(value, list) or len(value) != count:
        raise PrefabError(f"{what} must be a list of {count} numbers, got {short_repr(value)}")
    try:
        numbers = [float(v) for v in value]
    except (TypeError, ValueError) as exc:
        raise PrefabError(
            f"{what} must be a list of {count} numbers, got {short_repr(value)}"
        ) from exc
    if not all(math.isfinite(v) for v in numbers):
        raise PrefabError(f"{what} contains a non-finite number: {short_repr(value)}")
    return numbers
