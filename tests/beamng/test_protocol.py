"""BeamNG framing: length prefix + msgpack map, and conversion of numpy/torch values."""

from __future__ import annotations

import socket
import struct

import msgpack
import numpy as np
import pytest
import torch

from gym_s3.beamng.protocol import (
    HEADER_BYTES,
    FrameError,
    decode_body,
    encode_frame,
    read_frame,
    to_wire,
)


def _pair() -> tuple[socket.socket, socket.socket]:
    a, b = socket.socketpair()
    a.settimeout(5.0)
    b.settimeout(5.0)
    return a, b


def test_frame_round_trip_matches_client_encoding() -> None:
    """A frame is a 4-byte big-endian length followed by what the client's unpacker reads."""
    message = {"type": "SensorData", "_id": 7, "data": {"state": {"pos": (1.0, 2.0, 3.0)}}}
    frame = encode_frame(message)
    (length,) = struct.unpack("!I", frame[:HEADER_BYTES])
    assert length == len(frame) - HEADER_BYTES
    decoded = msgpack.unpackb(frame[HEADER_BYTES:], raw=False, strict_map_key=False)
    assert decoded == {"type": "SensorData", "_id": 7, "data": {"state": {"pos": [1.0, 2.0, 3.0]}}}


def test_to_wire_converts_numpy_and_torch() -> None:
    """numpy/torch scalars and arrays become plain numbers and lists; int keys survive."""
    value = {
        1: np.float32(0.5),
        "a": np.arange(3),
        "t": torch.tensor([[1.0, 2.0]]),
        "b": np.bool_(True),
        "s": (torch.tensor(3),),
    }
    wire = to_wire(value)
    assert wire == {1: 0.5, "a": [0, 1, 2], "t": [[1.0, 2.0]], "b": True, "s": [3]}
    assert type(wire[1]) is float and type(wire["b"]) is bool
    with pytest.raises(TypeError, match="cannot send a object"):
        to_wire({"x": object()})


def test_read_frame_reads_split_frames_and_clean_eof() -> None:
    """Frames arriving in pieces are reassembled; EOF between frames returns None."""
    a, b = _pair()
    frame = encode_frame({"type": "Hello", "_id": 0})
    for i in range(len(frame)):
        a.sendall(frame[i : i + 1])
    assert read_frame(b) == {"type": "Hello", "_id": 0}
    a.close()
    assert read_frame(b) is None
    b.close()


@pytest.mark.parametrize(
    ("payload", "match"),
    [
        (struct.pack("!I", 1 << 30) + b"xx", "limit"),
        (struct.pack("!I", 0), "empty body"),
        (struct.pack("!I", 3) + b"\xc1\xc1\xc1", "not valid msgpack"),
        (struct.pack("!I", 2) + msgpack.packb([1]), "expected a map"),
        (struct.pack("!I", 10) + b"abc", "middle of a frame"),
    ],
)
def test_bad_frames_raise_frame_error(payload: bytes, match: str) -> None:
    """Oversized, empty, non-msgpack, non-map and truncated frames raise FrameError."""
    a, b = _pair()
    a.sendall(payload)
    a.shutdown(socket.SHUT_WR)
    with pytest.raises(FrameError, match=match):
        read_frame(b, max_bytes=1024)
    a.close()
    b.close()


def test_decode_body_rejects_trailing_bytes() -> None:
    """Two msgpack objects in one body are not one message."""
    with pytest.raises(FrameError):
        decode_body(msgpack.packb({"a": 1}) + b"\x01")
