"""Raw-socket client, reply oracles and resource probes of the stand-in protocol fuzzer.

Everything here talks to the server through real loopback sockets with timeouts, so a hang shows
up as a :class:`FuzzFailure` after :data:`REPLY_TIMEOUT_S` instead of blocking the test run.
The oracles encode the server's documented rules: every reply is one msgpack map; it echoes a
scalar ``_id``; it is a ``bngError`` / ``bngValueError`` or carries the reply ``type`` BeamNG uses
for that request (:data:`GE_REPLY_TYPES`, :data:`VE_REPLY_TYPES`); it is never an "internal
error" (the catch-all that means a handler did not validate its input).
"""

from __future__ import annotations

import math
import os
import socket
import struct
import threading
import time
from collections.abc import Mapping
from typing import Any

import msgpack
import torch

from gym_s3.beamng.protocol import PROTOCOL_VERSION

#: longest wait for any single reply or for the server to close a connection [s]
REPLY_TIMEOUT_S = 5.0
#: reply ``type`` of every game-engine request (checked against the server's dispatch table)
GE_REPLY_TYPES: dict[str, str] = {
    "Hello": "Hello",
    "GetSystemInfo": "GetSystemInfo",
    "GetEnvironmentPaths": "GetEnvironmentPaths",
    "CreateScenario": "CreateScenario",
    "LoadScenario": "MapLoaded",
    "StartScenario": "ScenarioStarted",
    "RestartScenario": "ScenarioRestarted",
    "StopScenario": "ScenarioStopped",
    "GameStateRequest": "GameState",
    "GetCurrentVehicles": "GetCurrentVehicles",
    "GetPlayerVehicleID": "getPlayerVehicleID",
    "StartVehicleConnection": "StartVehicleConnection",
    "Step": "Stepped",
    "Pause": "Paused",
    "Resume": "Resumed",
    "SetPhysicsDeterministic": "SetPhysicsDeterministic",
    "SetPhysicsNonDeterministic": "SetPhysicsNonDeterministic",
    "FPSLimit": "SetFPSLimit",
    "RemoveFPSLimit": "RemovedFPSLimit",
    "SpawnVehicle": "VehicleSpawned",
    "DespawnVehicle": "VehicleDespawned",
    "Teleport": "Teleported",
    "UpdateScenario": "ScenarioUpdate",
    "SensorRequest": "SensorData",
    "QueueLuaCommandGE": "ExecutedLuaChunkGE",
    "CreateCube": "CreatedCube",
    "CreateCylinder": "CreatedCylinder",
    "CreateBump": "CreatedBump",
    "CreateCone": "CreatedCone",
    "CreateRing": "CreatedRing",
    "RemoveObject": "RemovedObject",
    "Quit": "Quit",
}
#: reply ``type`` of every vehicle-socket request
VE_REPLY_TYPES: dict[str, str] = {
    "Hello": "Hello",
    "Control": "Controlled",
    "SetShiftMode": "ShiftModeSet",
    "SensorRequest": "SensorData",
    "QueueLuaCommandVE": "ExecutedLuaChunkVE",
    "Recover": "Recovered",
    "SetVelocity": "VelocitySet",
    "SetAiMode": "AiModeSet",
    "GetCenterOfGravity": "GetCenterOfGravity",
}
_ERROR_KEYS = ("bngError", "bngValueError")
_SCALAR_ID_TYPES = (bool, int, float, str, bytes)


class FuzzFailure(AssertionError):
    """The server broke a robustness invariant (the message says which and how)."""


def pack(message: Any) -> bytes:
    """One frame: 4-byte big-endian length + msgpack body (``message`` may be any value)."""
    body = msgpack.packb(message, use_bin_type=True)
    return struct.pack("!I", len(body)) + body


def same_value(a: Any, b: Any) -> bool:
    """Equality that treats NaN as equal to itself (compares the msgpack encodings)."""
    try:
        return msgpack.packb(a, use_bin_type=True) == msgpack.packb(b, use_bin_type=True)
    except (TypeError, ValueError, OverflowError):
        return False


class RawClient:
    """A plain TCP client of the stand-in that speaks the framing by hand.

    Args:
        port: server port (GE port or a vehicle's port).
        timeout: per-operation socket timeout [s].
    """

    def __init__(self, port: int, timeout: float = REPLY_TIMEOUT_S) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.closed = False
        self._next_id = 1

    def next_id(self) -> int:
        """A fresh integer request id."""
        self._next_id += 1
        return self._next_id

    def send_raw(self, data: bytes) -> None:
        """Write bytes; a server that already closed the socket makes this a no-op."""
        try:
            self.sock.sendall(data)
        except OSError:
            self.closed = True

    def recv_frame(self) -> dict[str, Any] | None:
        """Read one reply frame; ``None`` when the server closed the connection.

        Raises:
            FuzzFailure: no complete reply within the timeout, or a reply that is not a map.
        """
        header = self._recv_exactly(4)
        if header is None:
            return None
        body = self._recv_exactly(struct.unpack("!I", header)[0])
        try:
            reply = msgpack.unpackb(body, raw=False, strict_map_key=False)
        except Exception as exc:  # noqa: BLE001 - any decode error is the finding
            raise FuzzFailure(f"the server sent a reply that is not msgpack: {exc!r}") from exc
        if not isinstance(reply, dict):
            raise FuzzFailure(f"the server sent a {type(reply).__name__} reply, not a map")
        return reply

    def _recv_exactly(self, length: int) -> bytes | None:
        """``length`` bytes, or ``None`` on EOF before the first (EOF later is a failure)."""
        chunks, remaining = [], length
        while remaining:
            try:
                chunk = self.sock.recv(min(remaining, 1 << 16))
            except TimeoutError as exc:
                raise FuzzFailure(f"no reply from the server within {REPLY_TIMEOUT_S} s") from exc
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                self.closed = True
                if remaining == length:
                    return None
                raise FuzzFailure("the server closed the connection in the middle of a reply")
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks)

    def request(self, message: dict[str, Any]) -> dict[str, Any]:
        """Send ``message`` with a fresh ``_id`` and return the reply (which must echo it)."""
        req_id = self.next_id()
        self.send_raw(pack({**message, "_id": req_id}))
        reply = self.recv_frame()
        if reply is None:
            raise FuzzFailure(f"the server closed the connection instead of answering {message}")
        if reply.get("_id") != req_id:
            raise FuzzFailure(f"reply {reply!r:.200} does not echo _id {req_id}")
        return reply

    def hello(self) -> None:
        """Send ``Hello`` and check the protocol version of the reply."""
        reply = self.request({"type": "Hello", "protocolVersion": PROTOCOL_VERSION})
        if reply.get("type") != "Hello" or reply.get("protocolVersion") != PROTOCOL_VERSION:
            raise FuzzFailure(f"bad Hello reply {reply!r:.200}")

    def drain_until_closed(self) -> list[dict[str, Any]]:
        """Half-close our side and read replies until the server closes the connection.

        Raises:
            FuzzFailure: the server keeps the connection open longer than the timeout.
        """
        try:
            self.sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        replies = []
        while (reply := self.recv_frame()) is not None:
            replies.append(reply)
        return replies

    def close(self, *, abort: bool = False) -> None:
        """Close the socket; ``abort`` resets the connection (RST) instead of a clean FIN."""
        if abort:
            try:
                self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            except OSError:
                pass
        self.sock.close()
        self.closed = True


# ----------------------------------------------------------------------------------- oracles
def is_error(reply: Mapping[Any, Any]) -> bool:
    """Whether ``reply`` is a ``bngError`` or ``bngValueError``."""
    return any(key in reply for key in _ERROR_KEYS)


def check_reply(
    reply: Mapping[Any, Any] | None,
    request: Mapping[Any, Any],
    reply_types: Mapping[str, str],
    *,
    must_fail: bool = False,
) -> None:
    """Check one reply against the request it answers.

    Args:
        reply: what the server sent back (``None``: it closed the connection).
        request: the request as sent.
        reply_types: request type -> reply type of the socket the request went to.
        must_fail: the request broke a documented field rule, so only an error reply is right.

    Raises:
        FuzzFailure: the reply breaks a rule; the message names the request and the reply.
    """
    shown = f"request {dict(request)!r:.300} got reply {reply!r:.300}"
    if reply is None:
        raise FuzzFailure(f"connection closed on a well-framed map: {shown}")
    for key in _ERROR_KEYS:
        text = reply.get(key)
        if key in reply and (not isinstance(text, str) or "internal error" in text):
            raise FuzzFailure(f"unvalidated input reached the catch-all: {shown}")
    req_id = request.get("_id")
    if req_id is not None and not isinstance(req_id, _SCALAR_ID_TYPES):
        if "bngError" not in reply or "_id" in reply:
            raise FuzzFailure(f"a non-scalar _id must get a bngError without _id: {shown}")
        return
    if req_id is not None and not same_value(reply.get("_id"), req_id):
        raise FuzzFailure(f"_id not echoed: {shown}")
    if req_id is None and "_id" in reply:
        raise FuzzFailure(f"_id invented: {shown}")
    if is_error(reply):
        return
    if must_fail:
        raise FuzzFailure(f"malformed request accepted: {shown}")
    mtype = request.get("type")
    expected = reply_types.get(mtype) if isinstance(mtype, str) else None
    if expected is None or reply.get("type") != expected:
        raise FuzzFailure(f"unexpected reply type (wanted {expected!r}): {shown}")


def check_fresh_client(port: int) -> None:
    """A brand-new GE client gets a correct ``Hello`` and ``GameState`` reply."""
    client = RawClient(port)
    try:
        client.hello()
        state = client.request({"type": "GameStateRequest"})
        if state.get("type") != "GameState" or state.get("state") not in ("menu", "scenario"):
            raise FuzzFailure(f"fresh client got a bad GameState reply {state!r:.200}")
    finally:
        client.close()


def check_world_finite(server: Any) -> None:
    """Every vehicle state and control of the server's world is finite; ids are unique."""
    with server.lock:
        world = server.world
        fleet = world.fleet
        vids = [entry.vid for entry in world.entries]
        if len(set(vids)) != len(vids) or fleet.n != len(vids):
            raise FuzzFailure(f"world bookkeeping broken: vehicles {vids}, fleet rows {fleet.n}")
        tensors = {"controls": fleet.controls, "accel_smooth": fleet.accel_smooth}
        if fleet.state is not None:
            tensors.update({name: getattr(fleet.state, name) for name in fleet.state.field_names()})
        bad = [name for name, value in tensors.items() if not bool(torch.isfinite(value).all())]
        if bad or not math.isfinite(world.sim_time):
            raise FuzzFailure(f"non-finite world state in {bad or ['sim_time']} (vehicles {vids})")


# ----------------------------------------------------------------------------------- probes
def rss_bytes() -> int:
    """Resident set size of this process [bytes] (from ``/proc/self/status``)."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("VmRSS not found in /proc/self/status")


def cpu_seconds() -> float:
    """CPU time used by every thread of this process so far [s]."""
    times = os.times()
    return times.user + times.system


def server_threads() -> list[str]:
    """Names of the stand-in's live threads (accept and connection threads)."""
    return sorted(t.name for t in threading.enumerate() if t.name.startswith("standin-"))


def connection_threads() -> set[threading.Thread]:
    """The stand-in's live per-connection threads (``standin-GE-<id>``, ``standin-VE-<id>``)."""
    return {
        t
        for t in threading.enumerate()
        if t.name.startswith(("standin-GE-", "standin-VE-")) and t.is_alive()
    }


def wait_for_threads_gone(before: set[threading.Thread]) -> None:
    """Wait until every connection thread started since ``before`` has ended.

    A thread that dies of an exception ends only after ``threading.excepthook`` ran, so waiting
    here also pins a crash on the input that caused it.

    Raises:
        FuzzFailure: a thread of a closed connection is still running after the timeout.
    """
    if not wait_for(lambda: not (connection_threads() - before), REPLY_TIMEOUT_S):
        left = sorted(t.name for t in connection_threads() - before)
        raise FuzzFailure(
            f"server threads {left} still run {REPLY_TIMEOUT_S} s after their client left"
        )


def wait_for(predicate: Any, timeout: float) -> bool:
    """Poll ``predicate()`` every 10 ms until it is true or ``timeout`` [s] passes."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True
