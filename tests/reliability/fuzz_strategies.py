"""Hypothesis strategies of the stand-in protocol fuzzer, and the field rules the server enforces.

Requests are built from a per-type schema (:data:`GE_FIELDS`, :data:`VE_FIELDS`): each field has a
strategy for a *valid* value and, where the server promises to check it, a ``kind``. A fuzzed
request keeps, drops or replaces every field (recursively inside maps) with a hostile value and
gains random extra keys; :func:`breaks_rule` then decides from the final message alone whether the
server must refuse it, so the oracle does not depend on how the message was mutated.
"""

from __future__ import annotations

import json
import math
import struct
from dataclasses import dataclass
from typing import Any

import msgpack
from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy

from gym_s3.beamng.lua import render_ground_model_lua
from gym_s3.beamng.materials import PATCH_MATERIALS
from gym_s3.beamng.protocol import MAX_FRAME_BYTES, PROTOCOL_VERSION

BASELINE_LEVEL = "smallgrid"
BASELINE_NAME = "fuzz_baseline"
BASELINE_PATH = f"/levels/{BASELINE_LEVEL}/scenarios/{BASELINE_NAME}/{BASELINE_NAME}.json"
#: names of fuzzed scenarios that fuzzed ``LoadScenario`` requests then load
FUZZ_SCENARIOS = ("s1", "s2")
EGO = "ego"
_INF = float("inf")

# ------------------------------------------------------------------------------ hostile values
_EDGE_NUMBERS = (
    math.nan,
    _INF,
    -_INF,
    1e308,
    -1e308,
    5e-324,
    -0.0,
    0,
    -1,
    2**31,
    2**53 + 1,
    2**63 - 1,
    -(2**63),
    2**64 - 1,
    1e6,
    -1e6,
    1e12,
)
hostile_numbers: SearchStrategy[Any] = st.one_of(
    st.sampled_from(_EDGE_NUMBERS), st.floats(), st.integers(-(2**63), 2**64 - 1)
)
_scalars: SearchStrategy[Any] = st.one_of(
    st.none(),
    st.booleans(),
    hostile_numbers,
    st.text(max_size=12),
    st.binary(max_size=12),
    st.builds(msgpack.ExtType, st.integers(0, 127), st.binary(max_size=6)),
    st.builds(msgpack.Timestamp, st.integers(0, 2**32 - 1), st.integers(0, 999_999_999)),
)


def _nested(depth: int) -> Any:
    """``[[...[0]...]]`` with ``depth`` list levels."""
    value: Any = 0
    for _ in range(depth):
        value = [value]
    return value


#: values shaped like a vector or a number without being one
_lookalikes = st.sampled_from(
    (
        "123",
        "1e3",
        "1234",
        b"abc",
        b"\x00\x01\x02\x03",
        {"0": 1, "1": 2, "2": 3},
        [True] * 3,
        [None] * 3,
        ["1", "2", "3"],
        [1, 2],
        [1, 2, 3, 4],
        [[1], [2], [3]],
        [0, 0, 0, 0],
    ),
)
#: any value msgpack can carry: scalars, small nests, look-alikes, lists nested up to 500 deep
hostile: SearchStrategy[Any] = st.one_of(
    _lookalikes,
    st.recursive(
        _scalars,
        lambda inner: (
            st.lists(inner, max_size=4)
            | st.dictionaries(st.text(max_size=6) | st.integers(-5, 5), inner, max_size=4)
        ),
        max_leaves=8,
    ),
    st.integers(50, 500).map(_nested),
)

# ------------------------------------------------------------------------------- valid values
names = st.sampled_from((EGO, "fuzz_a", "fuzz_b", "cube_1")) | st.text(min_size=1, max_size=10)
finite = st.floats(-50.0, 50.0, allow_nan=False)
vec3 = st.tuples(finite, finite, st.floats(0.0, 2.0)).map(list)
quats = st.none() | st.sampled_from(([0, 0, 0, 1], [0, 0, 0.7071, 0.7071], [0, 0, 1, 0]))
sizes = st.tuples(*[st.floats(0.05, 20.0)] * 3).map(list)
materials = st.none() | st.sampled_from(sorted(PATCH_MATERIALS)) | st.text(max_size=8)
lua_chunks = st.one_of(
    st.builds(
        render_ground_model_lua,
        st.sampled_from(("ASPHALT", "ICE", "SNOW", "GRAVEL", "NEW_MODEL")),
        st.floats(0.05, 3.0),
        st.floats(0.05, 3.0),
    ),
    st.text(max_size=40),
)


@st.composite
def bad_lua_chunks(draw: st.DrawFn) -> str:
    """The friction template with a number replaced by an out-of-range or malformed one."""
    chunk = render_ground_model_lua("ASPHALT", 1.0, 0.9)
    number = draw(st.sampled_from(("0", "3.5", "1e999", "nan", "-1", "1e-400", "9" * 400, "")))
    return chunk.replace("= 1.0\n", f"= {number}\n", 1)


def _vehicle_line(name: str, pos: list[float], extra: dict[str, Any]) -> str:
    """One prefab line of a vehicle at ``pos`` [m], with ``extra`` fields overriding."""
    line = {
        "name": name,
        "class": "BeamNGVehicle",
        "position": pos,
        "jBeam": "etk800",
        "rotationMatrix": [1, 0, 0, 0, 1, 0, 0, 0, 1],
        **extra,
    }
    return msgpack_json(line)


def msgpack_json(value: Any) -> str:
    """JSON text of ``value`` (NaN/Infinity allowed, bytes shown as text)."""
    return json.dumps(value, default=repr)


prefab_lines = st.one_of(
    st.builds(_vehicle_line, names, vec3, st.just({})),
    st.builds(
        _vehicle_line,
        names,
        vec3,
        st.dictionaries(
            st.sampled_from(("position", "rotationMatrix", "jBeam", "name", "licenseText")),
            hostile,
            max_size=2,
        ),
    ),
    st.just('{"class": "DecalRoad", "nodes": [[0, 0, 0, 8],], "name": "road",}'),
    st.integers(1, 5000).map(lambda n: "[" * n + "]" * n),
    st.integers(1, 5000).map(lambda n: '{"class": "BeamNGVehicle", "x": ' + "[" * n),
    st.text(max_size=30),
)
prefabs = st.lists(prefab_lines, max_size=4).map("\n".join)
infos = st.fixed_dictionaries(
    {
        "name": st.text(max_size=8),
        "vehicles": st.just({EGO: {"playerUsable": True, "startFocus": True}}),
    }
)
ge_sensor_maps = st.just({"timer": {"type": "Timer", "vehicle": EGO}})
ve_sensor_maps = st.lists(
    st.sampled_from(("State", "Electrics", "GForces", "Damage", "Lidar")), min_size=1, max_size=3
).map(lambda kinds: {kind.lower(): {"type": kind} for kind in kinds})


# ----------------------------------------------------------------------------------- schemas
@dataclass(frozen=True)
class Field:
    """One request field.

    Attributes:
        valid: strategy for a value the server accepts (semantically it may still refuse).
        kind: the rule the server enforces (see :func:`kind_ok`); ``None``: any value is taken.
        required: a missing field must be refused (only meaningful with a ``kind``).
    """

    valid: SearchStrategy[Any]
    kind: str | None = None
    required: bool = True


_B = Field(st.booleans())
_OPT_NUM = Field(st.floats(0.0, 1.0), "number", required=False)
GE_FIELDS: dict[str, dict[str, Field]] = {
    "Hello": {"protocolVersion": Field(st.just(PROTOCOL_VERSION))},
    "GetSystemInfo": {"os": _B, "cpu": _B, "gpu": _B, "power": _B},
    "GetEnvironmentPaths": {},
    "CreateScenario": {
        "level": Field(st.just(BASELINE_LEVEL), "str"),
        "name": Field(st.sampled_from(FUZZ_SCENARIOS) | st.text(min_size=1, max_size=8), "str"),
        "prefab": Field(prefabs, "str"),
        "info": Field(infos),
        "json": _B,
    },
    "LoadScenario": {
        "path": Field(
            st.sampled_from(
                (BASELINE_PATH, "/x.json")
                + tuple(f"/levels/{BASELINE_LEVEL}/scenarios/{n}/{n}.json" for n in FUZZ_SCENARIOS)
            ),
            "str",
        ),
        "precompileShaders": _B,
    },
    "StartScenario": {"restrict_actions": _B},
    "RestartScenario": {"restrict_actions": _B},
    "StopScenario": {},
    "GameStateRequest": {},
    "GetCurrentVehicles": {"include_config": _B},
    "GetPlayerVehicleID": {},
    "StartVehicleConnection": {"vid": Field(names, "str"), "exts": Field(st.none())},
    "Step": {"count": Field(st.integers(0, 3), "int"), "ack": _B},
    "Pause": {},
    "Resume": {},
    "SetPhysicsDeterministic": {"speedFactor": Field(st.none() | st.integers(1, 4))},
    "SetPhysicsNonDeterministic": {},
    "FPSLimit": {"fps": Field(st.integers(10, 200), "number")},
    "RemoveFPSLimit": {},
    "SpawnVehicle": {
        "name": Field(names, "str"),
        "model": Field(st.just("etk800"), "str"),
        "pos": Field(vec3, "vec3"),
        "rot": Field(quats, "quat", required=False),
        "safe_spawn": _B,
        "color": Field(st.none() | st.text(max_size=6)),
    },
    "DespawnVehicle": {"vid": Field(names, "str")},
    "Teleport": {
        "vehicle": Field(names, "str"),
        "pos": Field(vec3, "vec3"),
        "rot": Field(quats, "quat", required=False),
        "reset": _B,
    },
    "UpdateScenario": {"vehicles": Field(st.lists(names, max_size=3), "list")},
    "SensorRequest": {"sensors": Field(ge_sensor_maps, "map")},
    "QueueLuaCommandGE": {"chunk": Field(lua_chunks | bad_lua_chunks()), "resp": _B},
    "CreateCube": {
        "name": Field(names, "str"),
        "size": Field(sizes, "vec3"),
        "pos": Field(vec3, "vec3"),
        "rot": Field(quats, "quat", required=False),
        "material": Field(materials),
    },
    **{
        f"Create{shape}": {"name": Field(names, "str"), "pos": Field(vec3)}
        for shape in ("Cylinder", "Bump", "Cone", "Ring")
    },
    "RemoveObject": {"name": Field(names, "str")},
    "Quit": {},
}
VE_FIELDS: dict[str, dict[str, Field]] = {
    "Hello": {"protocolVersion": Field(st.just(PROTOCOL_VERSION))},
    "Control": {
        "steering": Field(st.floats(-1.0, 1.0), "number", required=False),
        "throttle": _OPT_NUM,
        "brake": _OPT_NUM,
        "parkingbrake": _OPT_NUM,
        "clutch": _OPT_NUM,
        "gear": Field(st.none() | st.integers(-1, 5), "int?", required=False),
    },
    "SetShiftMode": {"mode": Field(st.integers(0, 3), "number")},
    "SensorRequest": {"sensors": Field(ve_sensor_maps, "map")},
    "QueueLuaCommandVE": {"chunk": Field(st.text(max_size=20)), "resp": _B},
    "Recover": {},
    "SetVelocity": {"velocity": Field(st.floats(0.0, 30.0), "number"), "dt": Field(finite)},
    "SetAiMode": {"mode": Field(st.just("disabled"), "str")},
    "GetCenterOfGravity": {"withoutWheels": _B},
}


def _is_number(value: Any) -> bool:
    """Finite int or float, not bool (the server's ``number_field`` rule)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return isinstance(value, int) or math.isfinite(value)


def kind_ok(kind: str, value: Any) -> bool:
    """Whether ``value`` satisfies the field rule ``kind``.

    Kinds: ``str`` non-empty string; ``number`` finite int/float (not bool); ``int`` int (not
    bool); ``int?`` int or ``None``; ``vec3`` list of 3 numbers; ``quat`` ``None`` or a list of 4
    numbers; ``map`` dict; ``list`` list.
    """
    if kind == "str":
        return isinstance(value, str) and bool(value)
    if kind == "number":
        return _is_number(value)
    if kind in ("int", "int?"):
        return (value is None and kind == "int?") or (
            isinstance(value, int) and not isinstance(value, bool)
        )
    if kind in ("vec3", "quat"):
        if kind == "quat" and value is None:
            return True
        size = 3 if kind == "vec3" else 4
        return isinstance(value, list) and len(value) == size and all(map(_is_number, value))
    if kind == "map":
        return isinstance(value, dict)
    if kind == "list":
        return isinstance(value, list)
    raise ValueError(f"unknown field kind {kind!r}")


def breaks_rule(fields: dict[str, Field], message: dict[Any, Any]) -> bool:
    """Whether ``message`` breaks a field rule of its schema (the server must refuse it)."""
    for key, spec in fields.items():
        if spec.kind is None:
            continue
        if key not in message:
            if spec.required:
                return True
        elif not kind_ok(spec.kind, message[key]):
            return True
    return False


# ------------------------------------------------------------------------ request strategies
@st.composite
def perturbed(draw: st.DrawFn, value: Any) -> Any:
    """``value`` with map entries kept, dropped or replaced by hostile values (recursively)."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            action = draw(st.sampled_from(("keep", "keep", "drop", "hostile")))
            if action == "keep":
                out[key] = draw(perturbed(item))
            elif action == "hostile":
                out[key] = draw(hostile)
        return out
    return value if draw(st.integers(0, 3)) else draw(hostile)


_keys = st.integers(-(2**63), 2**64 - 1)
request_ids = st.one_of(st.integers(0, 2**31), st.integers(0, 2**31), st.none(), hostile)


@st.composite
def fuzzed_request(draw: st.DrawFn, mtype: str, fields: dict[str, Field]) -> dict[Any, Any]:
    """A request of type ``mtype`` with mutated fields, extra keys and an arbitrary ``_id``."""
    extras = draw(st.dictionaries(st.text(max_size=6) | _keys, hostile, max_size=2))
    message: dict[Any, Any] = dict(extras)
    for key, spec in fields.items():
        action = draw(st.sampled_from(("valid", "valid", "nested", "drop", "hostile")))
        if action == "valid":
            message[key] = draw(spec.valid)
        elif action == "nested":
            message[key] = draw(perturbed(draw(spec.valid)))
        elif action == "hostile":
            message[key] = draw(hostile)
    message["type"] = mtype
    req_id = draw(request_ids)
    if req_id is not None or draw(st.booleans()):
        message["_id"] = req_id
    return message


def requests_of(table: dict[str, dict[str, Field]]) -> SearchStrategy[dict[Any, Any]]:
    """Fuzzed requests of every type in ``table``."""
    return st.sampled_from(sorted(table)).flatmap(lambda t: fuzzed_request(t, table[t]))


def oversized_header(limit: int = MAX_FRAME_BYTES) -> SearchStrategy[bytes]:
    """A length prefix announcing more than ``limit`` bytes."""
    return st.integers(limit + 1, 2**32 - 1).map(lambda n: struct.pack("!I", n))
