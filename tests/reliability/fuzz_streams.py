"""Hypothesis strategies for whole byte streams, interleaved clients and hostile request sequences.

* :data:`framing_cases`: raw bytes for one connection (random garbage, truncated headers, length
  prefixes larger or smaller than the payload, zero and oversized lengths, bodies that are not
  msgpack, not maps, nested thousands deep, or maps with unhashable keys), ended by a half-close
  or a reset.
* :data:`interleave_cases`: 2-4 clients whose valid request streams are cut into chunks and sent
  round-robin, some of them reset in the middle of a frame.
* :data:`sequence_cases`: hostile Control / Step / Teleport / SensorRequest / SpawnVehicle /
  CreateCube / QueueLuaCommandGE / SetVelocity requests after a valid scenario setup.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

import msgpack
from fuzz_strategies import (
    EGO,
    GE_FIELDS,
    bad_lua_chunks,
    finite,
    hostile,
    hostile_numbers,
    lua_chunks,
    materials,
    names,
    oversized_header,
    perturbed,
    quats,
    requests_of,
    sizes,
    ve_sensor_maps,
    vec3,
)
from hypothesis import strategies as st

from gym_s3.beamng.protocol import PROTOCOL_VERSION


def _frame(body: bytes) -> bytes:
    """``body`` with its correct length prefix."""
    return struct.pack("!I", len(body)) + body


def _packb(value: Any) -> bytes:
    """The msgpack bytes of ``value``, packed as beamngpy packs."""
    return msgpack.packb(value, use_bin_type=True)


# ---------------------------------------------------------------------------------- framing
@dataclass(frozen=True)
class FramingCase:
    """Bytes sent on one fresh connection.

    Attributes:
        data: the bytes.
        ending: ``"half_close"`` (shut our write side, then read until the server closes),
            ``"abort"`` (reset the connection at once) or ``"keep_open"`` (only for data the
            server must close on by itself, such as an oversized length prefix).
        socket: ``"GE"`` or ``"VE"`` (a new socket to the baseline vehicle's port).
    """

    data: bytes
    ending: str
    socket: str


# msgpack's unpacker refuses more than 1024 levels; Python's recursion limit is about 1000 frames
_depths = st.one_of(
    st.sampled_from((100, 500, 512, 1024, 1025)), st.integers(980, 1030), st.integers(1, 6000)
)
_deep_bodies = st.tuples(
    _depths,
    st.sampled_from((b"\x81\xa3_id", b"", b"\x82\xa4type\xa5Hello\xa3_id", b"\x81\xa4type")),
    st.sampled_from((b"\xc0", b"\x80", b"\x01")),
).map(lambda t: t[1] + b"\x91" * t[0] + t[2])
_special_bodies = st.sampled_from(
    (
        b"\x81\x91\x01\x01",  # map whose key is a list (unhashable)
        b"\x81\x80\x01",  # map whose key is a map
        b"\x81\xa3_id\xa2\xff\xfe",  # invalid UTF-8 string
        b"\x81\xa2\xff\xfe\x01",  # invalid UTF-8 key
        b"\x81\xa3_id\xdd\xff\xff\xff\xff",  # array claiming 4 G elements
        b"\xdf\xff\xff\xff\xff",  # map claiming 4 G entries
        b"\x81\xa3_id\xdb\xff\xff\xff\xff",  # string claiming 4 GB
        _packb({"type": "Hello", "_id": msgpack.Timestamp(1, 0)}),
        _packb({"type": "Hello", "_id": [1, [2, {"a": None}]]}),
        _packb({"type": "Hello", "_id": 2**64 - 1}),
    )
)
_bodies = st.one_of(
    st.binary(max_size=48),
    st.binary(max_size=8).map(lambda b: b"\xc1" + b),  # 0xc1 is never used by msgpack
    hostile.map(_packb),
    requests_of(GE_FIELDS).map(_packb),
    _deep_bodies,
    _special_bodies,
    st.tuples(hostile, st.binary(min_size=1, max_size=4)).map(lambda t: _packb(t[0]) + t[1]),
)
_valid_frames = st.sampled_from(
    (
        _frame(_packb({"type": "Hello", "protocolVersion": PROTOCOL_VERSION, "_id": 1})),
        _frame(_packb({"type": "GameStateRequest", "_id": 2})),
    )
)
_pieces = st.one_of(
    _bodies.map(_frame),
    _deep_bodies.map(_frame),
    _valid_frames,
    # length prefix larger than the payload that follows
    st.tuples(_bodies, st.integers(1, 1000)).map(
        lambda t: struct.pack("!I", len(t[0]) + t[1]) + t[0]
    ),
    # length prefix smaller than the payload: the rest is read as the next frame
    st.tuples(_bodies.filter(lambda b: len(b) > 1), st.integers(0, 2**16)).map(
        lambda t: struct.pack("!I", 1 + t[1] % (len(t[0]) - 1)) + t[0]
    ),
    st.just(struct.pack("!I", 0)),
    st.tuples(oversized_header(), st.binary(max_size=16)).map(b"".join),
    st.binary(min_size=1, max_size=3),  # a truncated header
)
framing_cases = st.one_of(
    st.builds(
        FramingCase,
        st.lists(_pieces, min_size=1, max_size=4).map(b"".join),
        st.sampled_from(("half_close", "abort")),
        st.sampled_from(("GE", "VE")),
    ),
    st.builds(FramingCase, oversized_header(), st.just("keep_open"), st.sampled_from(("GE", "VE"))),
)

# ------------------------------------------------------------------------------ interleaving
#: requests every ready harness answers without an error: name -> (socket, message)
SAFE_REQUESTS: dict[str, tuple[str, dict[str, Any]]] = {
    "ge_hello": ("GE", {"type": "Hello", "protocolVersion": PROTOCOL_VERSION}),
    "gamestate": ("GE", {"type": "GameStateRequest"}),
    "vehicles": ("GE", {"type": "GetCurrentVehicles", "include_config": False}),
    "step": ("GE", {"type": "Step", "count": 1, "ack": True}),
    "timer": ("GE", {"type": "SensorRequest", "sensors": {"t": {"type": "Timer", "vehicle": EGO}}}),
    "update": ("GE", {"type": "UpdateScenario", "vehicles": [EGO]}),
    "ve_hello": ("VE", {"type": "Hello", "protocolVersion": PROTOCOL_VERSION}),
    "state": ("VE", {"type": "SensorRequest", "sensors": {"state": {"type": "State"}}}),
    "control": ("VE", {"type": "Control", "throttle": 0.2, "steering": -0.1}),
    "cog": ("VE", {"type": "GetCenterOfGravity", "withoutWheels": False}),
}


@dataclass(frozen=True)
class ClientScript:
    """One client of an interleaving case.

    Attributes:
        socket: ``"GE"`` or ``"VE"``.
        requests: names in :data:`SAFE_REQUESTS` of that socket, sent in order.
        abort_after: reset the connection once this many bytes are sent (``None``: never).
    """

    socket: str
    requests: tuple[str, ...]
    abort_after: int | None


@dataclass(frozen=True)
class InterleaveCase:
    """Clients whose byte streams are sent round-robin in chunks of the given sizes [bytes]."""

    clients: tuple[ClientScript, ...]
    chunks: tuple[int, ...]


def _script(socket: str) -> st.SearchStrategy[ClientScript]:
    """Client scripts of safe requests for one socket kind."""
    names_here = sorted(k for k, (sock, _) in SAFE_REQUESTS.items() if sock == socket)
    return st.builds(
        ClientScript,
        st.just(socket),
        st.lists(st.sampled_from(names_here), min_size=1, max_size=4).map(tuple),
        st.none() | st.integers(0, 200),
    )


interleave_cases = st.builds(
    InterleaveCase,
    st.lists(_script("GE") | _script("VE"), min_size=2, max_size=4).map(tuple),
    st.lists(st.integers(1, 80), min_size=1, max_size=12).map(tuple),
)

# ------------------------------------------------------------------------ hostile sequences
_ABSURD_COUNTS = (
    -1,
    6,
    1000,
    2**31,
    2**63 - 1,
    2**64 - 1,
    -(2**63),
    1e9,
    0.5,
    "10",
    None,
    True,
    float("nan"),
    float("inf"),
)
_number_or_hostile = st.one_of(finite, hostile_numbers, hostile)
_vectors = st.one_of(
    vec3,
    st.lists(st.one_of(finite, hostile_numbers), min_size=3, max_size=3),
    st.lists(st.sampled_from((0.0, -1.0, 1e-9, 1e308, 1e6)), min_size=3, max_size=3),
    hostile,
)
_quats = st.one_of(quats, st.lists(hostile_numbers, min_size=4, max_size=4), hostile)


def _op(socket: str, mtype: str, fields: dict[str, Any]) -> Any:
    """``(socket, request)`` of type ``mtype`` with any subset of the hostile ``fields``."""
    return st.fixed_dictionaries({}, optional=fields).map(
        lambda msg: (socket, {"type": mtype, **msg})
    )


_ops = st.one_of(
    _op(
        "VE",
        "Control",
        {k: _number_or_hostile for k in ("steering", "throttle", "brake")}
        | {"gear": st.integers(-2, 8) | hostile},
    ),
    _op(
        "GE",
        "Step",
        {"count": st.integers(0, 3) | st.sampled_from(_ABSURD_COUNTS), "ack": st.just(True)},
    ),
    _op(
        "GE",
        "Teleport",
        {"vehicle": st.just(EGO) | names, "pos": _vectors, "rot": _quats, "reset": st.booleans()},
    ),
    _op("VE", "SensorRequest", {"sensors": ve_sensor_maps.flatmap(perturbed) | hostile}),
    _op(
        "GE",
        "SpawnVehicle",
        {"name": names, "model": st.just("etk800"), "pos": _vectors, "rot": _quats},
    ),
    _op(
        "GE",
        "CreateCube",
        {
            "name": names,
            "pos": _vectors,
            "size": sizes | _vectors,
            "rot": _quats,
            "material": materials,
        },
    ),
    _op("GE", "QueueLuaCommandGE", {"chunk": lua_chunks | bad_lua_chunks() | hostile}),
    _op("VE", "SetVelocity", {"velocity": _number_or_hostile, "dt": finite}),
)


@dataclass(frozen=True)
class SequenceCase:
    """Requests ``(socket, message)`` sent in order after a fresh scenario load."""

    ops: tuple[tuple[str, dict[str, Any]], ...]


sequence_cases = st.builds(SequenceCase, st.lists(_ops, min_size=1, max_size=6).map(tuple))
