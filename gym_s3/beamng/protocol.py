"""BeamNG's wire framing: a 4-byte big-endian length, then one msgpack map.

This is the framing the real ``beamngpy`` client speaks on the game-engine (GE) socket and on every
per-vehicle socket (see ``shared/reference/beamngpy-protocol.md`` §2). The client packs with
``use_bin_type=True`` and unpacks with ``raw=False, strict_map_key=False``; the same settings are
used here. Everything sent goes through :func:`to_wire` first, so numpy and torch scalars or arrays
(and tuples) arrive as plain msgpack numbers and arrays.
"""

from __future__ import annotations

import reprlib
import socket
import struct
import time
from collections.abc import Mapping
from contextlib import nullcontext
from typing import Any

import msgpack

from gym_s3.errors import S3Error

#: bytes of the length prefix (``struct`` format ``"!I"``)
HEADER_BYTES = 4
#: largest frame body the stand-in accepts [bytes]; a longer length prefix closes the connection.
#: A scenario prefab with long roads is well under 1 MiB, so 16 MiB only stops garbage.
MAX_FRAME_BYTES = 16 * 1024 * 1024
#: protocol version string the beamngpy 1.36 client requires in every ``Hello`` reply
PROTOCOL_VERSION = "v1.27"
#: how the stand-in names itself in replies, logs and on the command line
SERVER_NAME = "sim2sim2sim open stand-in (not BeamNG)"
#: key of the stand-in's ``Hello`` reply that names the server; BeamNG.tech answers only
#: ``protocolVersion`` (beamngpy ignores other keys), so a reply without it is BeamNG.tech
HELLO_SERVER_KEY = "server"
#: short labels of the two simulators, as headings, tables and GIFs show them
STANDIN_LABEL = "open stand-in"
BEAMNG_LABEL = "BeamNG.tech"

_HEADER = struct.Struct("!I")
_RECV_CHUNK = 1 << 16
_SHORT_CHARS = 80
_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother = 3, _SHORT_CHARS, _SHORT_CHARS


class FrameError(S3Error, ValueError):
    """A frame broke BeamNG's framing (bad length prefix, truncated body, or not a msgpack map)."""


def to_wire(obj: Any) -> Any:
    """Convert ``obj`` recursively into types msgpack packs the way BeamNG's server does.

    numpy / torch scalars become Python numbers, arrays and tensors become (nested) lists, tuples
    become lists, and mapping keys are kept as they are (msgpack allows int keys).

    Args:
        obj: any nesting of dicts, lists, tuples, numbers, strings, ``None``, numpy values or
            torch tensors.

    Returns:
        The same structure built only from ``dict``, ``list``, ``str``, ``bytes``, ``int``,
        ``float``, ``bool`` and ``None``.
    """
    if obj is None or isinstance(obj, (str, bytes, bool, int, float)):
        return obj
    if isinstance(obj, Mapping):
        return {key: to_wire(value) for key, value in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_wire(value) for value in obj]
    tolist = getattr(obj, "tolist", None)  # numpy arrays/scalars and torch tensors
    if callable(tolist):
        return to_wire(tolist())
    raise TypeError(
        f"cannot send a {type(obj).__name__} over the BeamNG protocol; convert it to numbers, "
        "strings, lists or dicts first"
    )


def short_repr(value: Any) -> str:
    """A bounded ``repr`` of a request value, for error replies and log lines.

    Request values are untrusted: a 16 MiB string or a list nested a thousand deep would make
    ``repr`` huge or raise ``RecursionError``. Long strings are cut, nesting below three levels
    is shown as ``...``.
    """
    if isinstance(value, (str, bytes)) and len(value) > _SHORT_CHARS:
        return f"{value[:_SHORT_CHARS]!r}... ({len(value)} long)"
    return _REPR.repr(value)


def encode_frame(message: Mapping[str, Any]) -> bytes:
    """Pack one message as a complete frame (length prefix + msgpack body).

    Args:
        message: the map to send; converted with :func:`to_wire`.

    Returns:
        The bytes to write to the socket.
    """
    body = msgpack.packb(to_wire(message), use_bin_type=True)
    return _HEADER.pack(len(body)) + body


def decode_body(body: bytes) -> dict[str, Any]:
    """Unpack one frame body into a message map.

    Args:
        body: the bytes after the length prefix.

    Returns:
        The decoded map.

    Raises:
        FrameError: the bytes are not msgpack, or not a single map.
    """
    try:
        message = msgpack.unpackb(body, raw=False, strict_map_key=False)
    except (ValueError, TypeError, msgpack.UnpackException) as exc:
        # ValueError: ExtraData, FormatError, StackError, bad UTF-8, oversized lengths;
        # TypeError: a map key that is a list or a map (unhashable)
        raise FrameError(f"frame body is not valid msgpack ({type(exc).__name__}: {exc})") from exc
    if not isinstance(message, dict):
        raise FrameError(f"frame body is a msgpack {type(message).__name__}, expected a map")
    return message


def _recv_exactly(
    sock: socket.socket, length: int, *, at_boundary: bool, frame: _FrameClock | None
) -> bytes | None:
    """Read exactly ``length`` bytes; ``None`` on a clean EOF before the first byte of a frame.

    With ``frame``, the first byte of a frame starts its clock and every later read waits only
    until the frame's deadline (``TimeoutError``); the wait for the first byte stays unbounded.
    """
    chunks: list[bytes] = []
    remaining = length
    while remaining:
        if frame is not None and frame.started:
            sock.settimeout(frame.remaining())
        chunk = sock.recv(min(_RECV_CHUNK, remaining))
        if not chunk:
            if at_boundary and remaining == length:
                return None
            raise FrameError(
                f"connection closed in the middle of a frame ({length - remaining} of {length} "
                "bytes received)"
            )
        if frame is not None and not frame.started:
            frame.start()  # a frame has begun: all of it must arrive before the deadline
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


class _FrameClock:
    """The deadline of one frame: ``seconds`` after its first byte arrived."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.deadline: float | None = None

    @property
    def started(self) -> bool:
        return self.deadline is not None

    def start(self) -> None:
        self.deadline = time.monotonic() + self.seconds

    def remaining(self) -> float:
        """Seconds left (``TimeoutError`` once the deadline has passed)."""
        assert self.deadline is not None
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        return left


def read_frame(
    sock: socket.socket,
    max_bytes: int = MAX_FRAME_BYTES,
    stall_timeout: float | None = None,
    budget: Any = None,
) -> dict[str, Any] | None:
    """Read and decode one frame from a blocking socket.

    Args:
        sock: a connected stream socket.
        max_bytes: largest accepted body [bytes].
        stall_timeout: once a frame has begun, the longest time the WHOLE frame may take to
            arrive [s] (a client trickling one byte at a time is cut off too); ``None`` waits
            forever. Between frames the wait is never bounded (clients idle at will).
        budget: a shared :class:`~gym_s3.beamng.standin.sockets.ByteBudget`; the body's
            announced length
            is reserved from it while the body is received (refused when over its cap).

    Returns:
        The decoded message, or ``None`` when the peer closed the connection between frames.

    Raises:
        FrameError: oversized or empty length prefix, truncated or stalled frame, a server
            buffer budget exhausted, or a body that is not a msgpack map.
        OSError: the socket failed.
    """
    previous = sock.gettimeout()
    frame = _FrameClock(stall_timeout) if stall_timeout is not None else None
    try:
        header = _recv_exactly(sock, HEADER_BYTES, at_boundary=True, frame=frame)
        if header is None:
            return None
        (length,) = _HEADER.unpack(header)
        if length == 0:
            raise FrameError("frame with an empty body (length prefix 0)")
        if length > max_bytes:
            raise FrameError(
                f"length prefix announces {length} bytes, more than the {max_bytes}-byte limit "
                "(is this client speaking BeamNG's framing?)"
            )
        with budget.reserve(length) if budget is not None else nullcontext(True) as granted:
            if not granted:
                raise FrameError(
                    f"a {length}-byte frame does not fit the server's receive buffer budget "
                    f"({budget.limit} bytes for all partial frames at once); send it again later"
                )
            body = _recv_exactly(sock, length, at_boundary=False, frame=frame)
    except TimeoutError as exc:
        raise FrameError(
            f"the frame stalled: not complete {stall_timeout} s after its first byte"
        ) from exc
    finally:
        if stall_timeout is not None:
            try:
                sock.settimeout(previous)
            except OSError:  # closed meanwhile
                pass
    assert body is not None  # at_boundary=False never returns None
    return decode_body(body)


class RequestError(S3Error, RuntimeError):
    """A request failed; the server answers ``{"bngError": message}`` (``BNGError`` client-side)."""


class RequestValueError(S3Error, ValueError):
    """A request carried a bad value; the server answers ``{"bngValueError": message}``."""
