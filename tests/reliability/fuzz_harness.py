"""The fuzz harness: a stand-in server with a baseline scenario, and one runner per input category.

:class:`Harness` keeps a baseline world ready (scenario ``fuzz_baseline`` with vehicle ``ego``, a
GE "owner" connection that loaded it and a raw socket on ego's vehicle port) and rebuilds
whatever a fuzzed request tore down. :class:`ServerWatch` turns an uncaught exception in a server
thread, or an ERROR log line of the stand-in, into a failure. The ``run_*`` functions send one
example of each category and check every reply they get.
"""

from __future__ import annotations

import logging
import math
import threading
from types import TracebackType
from typing import Any

import msgpack
from fuzz_strategies import (
    BASELINE_LEVEL,
    BASELINE_NAME,
    BASELINE_PATH,
    EGO,
    GE_FIELDS,
    VE_FIELDS,
    breaks_rule,
    msgpack_json,
)
from fuzz_streams import SAFE_REQUESTS, FramingCase, InterleaveCase, SequenceCase
from fuzz_wire import (
    GE_REPLY_TYPES,
    VE_REPLY_TYPES,
    FuzzFailure,
    RawClient,
    check_reply,
    check_world_finite,
    connection_threads,
    is_error,
    pack,
    wait_for_threads_gone,
)

from gym_s3.beamng.standin.config import WorldConfig
from gym_s3.beamng.standin.server import StandInServer

#: world of the fuzzed server: 200 Hz physics, 20 frames/s, and at most 0.25 s per Step so a
#: valid-but-large count stays cheap (the default limit is tested on its own)
FUZZ_WORLD = WorldConfig(steps_per_second=20, physics_rate_hz=200.0, max_step_seconds=0.25)
_SCALAR_IDS = (bool, int, float, str, bytes)
_REBUILD_AT_VEHICLES = 6
_REBUILD_AT_OBJECTS = 40


class ServerWatch:
    """Collect crashes of server threads and ERROR log records of the stand-in while active.

    While active, the stand-in's loggers are raised to ERROR so thousands of expected warnings
    (closed connections, unknown requests) are not kept in memory by the test runner.
    """

    def __init__(self) -> None:
        self.problems: list[str] = []
        self._handler = _ListHandler(self.problems)
        self._logger = logging.getLogger("gym_s3.beamng")
        self._saved_level = self._logger.level
        self._saved_hook = threading.excepthook

    def __enter__(self) -> ServerWatch:
        saved = self._saved_hook = threading.excepthook

        def hook(args: threading.ExceptHookArgs) -> None:
            if args.thread is not None and args.thread.name.startswith("standin-"):
                self.problems.append(
                    f"server thread {args.thread.name} died: {args.exc_type.__name__}: "
                    f"{args.exc_value!r:.300}"
                )
            else:
                saved(args)

        threading.excepthook = hook
        self._saved_level = self._logger.level
        self._logger.setLevel(logging.ERROR)
        self._logger.addHandler(self._handler)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        threading.excepthook = self._saved_hook
        self._logger.removeHandler(self._handler)
        self._logger.setLevel(self._saved_level)

    def check(self) -> None:
        """Raise :class:`FuzzFailure` (and forget them) if problems were recorded."""
        if self.problems:
            found, self.problems[:] = list(self.problems), []
            raise FuzzFailure("; ".join(found))


class _ListHandler(logging.Handler):
    """Append ERROR records (with their exception) to a list."""

    def __init__(self, sink: list[str]) -> None:
        super().__init__(logging.ERROR)
        self.sink = sink

    def emit(self, record: logging.LogRecord) -> None:
        """Record one ERROR line."""
        text = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            text += f" ({record.exc_info[1]!r:.300})"
        self.sink.append(f"stand-in logged an error: {text}")


class Harness:
    """A started stand-in plus the baseline scenario the fuzz inputs act on.

    Args:
        server: a started :class:`StandInServer`.
    """

    def __init__(self, server: StandInServer) -> None:
        self.server = server
        self.port = server.port
        self.owner: RawClient | None = None
        self.ve: RawClient | None = None
        self.ve_port = 0
        self._fuzz: RawClient | None = None
        self._ego_object = -1

    # ----------------------------------------------------------------------------- baseline
    def setup(self) -> None:
        """(Re)connect the owner, create the baseline scenario and load it."""
        self.close()
        self.owner = RawClient(self.port)
        self.owner.hello()
        prefab = msgpack_json(
            {
                "name": EGO,
                "class": "BeamNGVehicle",
                "position": [0.0, 0.0, 0.0],
                "rotationMatrix": [1, 0, 0, 0, 1, 0, 0, 0, 1],
                "jBeam": "etk800",
            }
        )
        reply = self.owner.request(
            {
                "type": "CreateScenario",
                "level": BASELINE_LEVEL,
                "name": BASELINE_NAME,
                "prefab": prefab,
                "info": {"vehicles": {EGO: {"startFocus": True}}},
            }
        )
        if reply.get("result") != BASELINE_PATH:
            raise FuzzFailure(f"baseline CreateScenario failed: {reply!r:.300}")
        self.reset_scenario()

    def reset_scenario(self) -> None:
        """Load and start the baseline scenario again and reconnect ego's vehicle socket."""
        assert self.owner is not None
        for message, ack in (
            ({"type": "LoadScenario", "path": BASELINE_PATH}, "MapLoaded"),
            ({"type": "RemoveFPSLimit"}, "RemovedFPSLimit"),
            ({"type": "StartScenario"}, "ScenarioStarted"),
        ):
            reply = self.owner.request(message)
            if reply.get("type") != ack:
                raise FuzzFailure(f"baseline {message['type']} failed: {reply!r:.300}")
        self.connect_vehicle()

    def connect_vehicle(self) -> None:
        """Open a fresh raw socket on ego's vehicle port."""
        assert self.owner is not None
        if self.ve is not None:
            self.ve.close()
        reply = self.owner.request({"type": "StartVehicleConnection", "vid": EGO})
        self.ve_port = int(reply["result"])
        self.ve = RawClient(self.ve_port)
        self.ve.hello()
        with self.server.lock:
            self._ego_object = self.server.world.entry(EGO).object_id

    def ensure_ready(self) -> None:
        """Rebuild the baseline if a fuzzed request removed, replaced or crowded it."""
        if self.owner is None or self.owner.closed:
            self.setup()
            return
        with self.server.lock:
            world = self.server.world
            ready = (
                world.scenario is not None
                and world.scenario.path == BASELINE_PATH
                and world.has_vehicle(EGO)
                and world.entry(EGO).object_id == self._ego_object
                and len(world.entries) <= _REBUILD_AT_VEHICLES
                and len(world.cubes) + len(world.objects) <= _REBUILD_AT_OBJECTS
            )
        if not ready:
            self.reset_scenario()
        elif self.ve is None or self.ve.closed:
            self.connect_vehicle()

    def client(self, socket: str) -> RawClient:
        """The persistent fuzz GE connection (reopened when closed), or ego's vehicle socket."""
        if socket == "VE":
            assert self.ve is not None
            return self.ve
        if self._fuzz is None or self._fuzz.closed:
            self._fuzz = RawClient(self.port)
        return self._fuzz

    def close(self) -> None:
        """Close every harness socket (the server then releases the vehicles they owned)."""
        for client in (self._fuzz, self.ve, self.owner):
            if client is not None:
                client.close()
        self._fuzz = self.ve = self.owner = None

    # ----------------------------------------------------------------------------- exchange
    def exchange(self, socket: str, message: dict[Any, Any], *, must_fail: bool) -> None:
        """Send one map, check its reply (if one is due), then a sentinel ``Hello``.

        The sentinel proves the connection is still in step: a missing, extra or duplicated
        reply would arrive where the ``Hello`` reply is expected.
        """
        client = self.client(socket)
        seen = msgpack.unpackb(pack(message)[4:], raw=False, strict_map_key=False)
        req_id = seen.get("_id")
        scalar_id = req_id is None or isinstance(req_id, _SCALAR_IDS)
        no_ack = socket == "GE" and seen.get("type") == "Step" and not bool(seen.get("ack", True))
        client.send_raw(pack(message))
        if not scalar_id or not no_ack:
            table = GE_REPLY_TYPES if socket == "GE" else VE_REPLY_TYPES
            check_reply(client.recv_frame(), seen, table, must_fail=must_fail)
        client.hello()


# ------------------------------------------------------------------------------------ runners
def run_framing(h: Harness, case: FramingCase) -> None:
    """(a) Send raw bytes on a new socket; the server answers well-formed maps, then closes."""
    before = connection_threads()
    client = RawClient(h.port if case.socket == "GE" else h.ve_port)
    client.send_raw(case.data)
    if case.ending == "abort":
        client.close(abort=True)
        wait_for_threads_gone(before)
        return
    if case.ending == "keep_open":
        replies = []
        while (reply := client.recv_frame()) is not None:
            replies.append(reply)
    else:
        replies = client.drain_until_closed()
    client.close()
    wait_for_threads_gone(before)
    for reply in replies:
        if is_error(reply):
            text = reply.get("bngError", reply.get("bngValueError"))
            if not isinstance(text, str) or "internal error" in text:
                raise FuzzFailure(f"framing input reached the catch-all: {reply!r:.300}")
        elif not isinstance(reply.get("type"), str):
            raise FuzzFailure(f"reply without a type: {reply!r:.300}")
        if "_id" in reply and not isinstance(reply["_id"], _SCALAR_IDS):
            raise FuzzFailure(f"reply echoes a non-scalar _id: {reply!r:.300}")


def run_request(h: Harness, case: tuple[str, dict[Any, Any]]) -> None:
    """(b) A known request type with mutated fields; rule-breaking ones must be refused."""
    socket, message = case
    fields = (GE_FIELDS if socket == "GE" else VE_FIELDS)[message["type"]]
    seen = msgpack.unpackb(pack(message)[4:], raw=False, strict_map_key=False)
    h.exchange(socket, message, must_fail=breaks_rule(fields, seen))


def run_refused(h: Harness, case: tuple[str, dict[Any, Any]]) -> None:
    """(c, d) An unknown type, or a type sent on the wrong socket: only an error is right."""
    socket, message = case
    h.exchange(socket, message, must_fail=True)


def run_interleaved(h: Harness, case: InterleaveCase) -> None:
    """(e) Clients send valid requests in interleaved chunks; some reset mid-stream."""
    before = connection_threads()
    streams = []
    for script in case.clients:
        client = RawClient(h.port if script.socket == "GE" else h.ve_port)
        expected = []
        data = b""
        for name in script.requests:
            req_id = client.next_id()
            expected.append((req_id, SAFE_REQUESTS[name][1]))
            data += pack({**SAFE_REQUESTS[name][1], "_id": req_id})
        streams.append([client, data, 0, expected, script.abort_after, script.socket])
    turn = 0
    while any(s[2] < len(s[1]) and not s[0].closed for s in streams):
        for stream in streams:
            client, data, sent, _, abort_after, _ = stream
            if client.closed or sent >= len(data):
                continue
            size = case.chunks[turn % len(case.chunks)]
            turn += 1
            client.send_raw(data[sent : sent + size])
            stream[2] = sent = sent + size
            if abort_after is not None and abort_after <= sent < len(data):
                client.close(abort=True)
    for client, _, _, expected, _, socket in streams:
        if client.closed:
            continue
        table = GE_REPLY_TYPES if socket == "GE" else VE_REPLY_TYPES
        for req_id, message in expected:
            reply = client.recv_frame()
            check_reply(reply, {**message, "_id": req_id}, table)
            assert reply is not None
            if is_error(reply):
                raise FuzzFailure(f"valid interleaved request {message} failed: {reply!r:.300}")
        client.close()
    wait_for_threads_gone(before)


def run_sequence(h: Harness, case: SequenceCase) -> None:
    """(f) Fresh scenario, hostile requests, then the world must be finite and still step."""
    h.reset_scenario()
    for socket, message in case.ops:
        fields = (GE_FIELDS if socket == "GE" else VE_FIELDS)[message["type"]]
        seen = msgpack.unpackb(pack(message)[4:], raw=False, strict_map_key=False)
        h.exchange(socket, {**message, "_id": 7}, must_fail=breaks_rule(fields, seen))
    check_world_finite(h.server)
    if h.ve is not None and not h.ve.closed:
        reply = h.ve.request({"type": "SensorRequest", "sensors": {"s": {"type": "State"}}})
        state = reply.get("data", {}).get("s", {}).get("state", {})
        numbers = [v for key in ("pos", "vel", "dir") for v in state.get(key, [math.nan])]
        if not all(isinstance(v, float) and math.isfinite(v) for v in numbers):
            raise FuzzFailure(f"State of ego is not finite after {case.ops!r:.400}: {reply!r:.300}")
    assert h.owner is not None
    reply = h.owner.request({"type": "Step", "count": 1, "ack": True})
    if reply.get("type") != "Stepped":
        raise FuzzFailure(f"Step after the sequence failed: {reply!r:.300}")
    check_world_finite(h.server)
