"""Inputs that once broke the stand-in, replayed first in every fuzz run (``@example``).

Each constant is the (shrunk) input hypothesis reported, with the failure it caused; the fix is
named in the commit message of the same words. ``test_protocol_regressions.py`` also checks each
of them on its own.
"""

from __future__ import annotations

import struct
from typing import Any

import msgpack
from fuzz_strategies import EGO
from fuzz_streams import FramingCase, SequenceCase


def frame(body: bytes) -> bytes:
    """A well-framed body (correct length prefix)."""
    return struct.pack("!I", len(body)) + body


#: ``_id`` = msgpack Timestamp: the reply could not be encoded, the connection thread died
TIMESTAMP_ID = frame(msgpack.packb({"type": "Hello", "_id": msgpack.Timestamp(1, 0)}))
#: ``_id`` = a list: echoed back as is (a 500-deep one overflowed the encoder)
LIST_ID = frame(b"\x81\xa3_id\x91\xc0")
#: a map whose key is a list: TypeError (unhashable) escaped the frame reader
LIST_KEY = frame(b"\x81\x91\x01\x01")
#: ``type`` nested 1010 deep: ``repr`` raised RecursionError and killed the connection thread
DEEP_TYPE = frame(b"\x81\xa4type" + b"\x91" * 1010 + b"\x01")

FRAMING: tuple[FramingCase, ...] = tuple(
    FramingCase(data, "half_close", "GE") for data in (TIMESTAMP_ID, LIST_ID, LIST_KEY, DEEP_TYPE)
)

#: accepted although malformed, or answered with an internal error
FIELDS: tuple[tuple[str, dict[Any, Any]], ...] = (
    # no 'vehicles' list: accepted (an int raised TypeError -> internal error)
    ("GE", {"type": "UpdateScenario", "_id": 0}),
    ("GE", {"type": "UpdateScenario", "vehicles": 5, "_id": 0}),
    # a string as a vector: '123' became (1, 2, 3)
    ("GE", {"type": "CreateCube", "name": EGO, "size": "123", "pos": [0.0, 0.0, 0.0], "_id": 0}),
    ("GE", {"type": "CreateCube", "name": "c", "size": [1, 1, 1], "pos": b"abc", "_id": 0}),
    # a prefab line nested 5000 deep: RecursionError in json.loads -> internal error
    (
        "GE",
        {
            "type": "CreateScenario",
            "level": "smallgrid",
            "name": "s1",
            "prefab": "[" * 5000,
            "_id": 0,
        },
    ),  # fmt: skip
    # a nested _id was echoed
    ("GE", {"type": "CreateBump", "name": EGO, "_id": [[[0]]]}),
)

#: poisoned the physics or blocked the world
SEQUENCES: tuple[SequenceCase, ...] = (
    SequenceCase((("VE", {"type": "SetVelocity", "velocity": 1e308}),)),
    SequenceCase((("GE", {"type": "Step", "count": 2**63 - 1, "ack": True}),)),
    SequenceCase((("GE", {"type": "Teleport", "vehicle": EGO, "pos": [float("nan"), 0, 0]}),)),
)
