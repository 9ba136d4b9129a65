"""The open stand-in server: a loopback TCP server that speaks BeamNG's protocol.

The unmodified ``beamngpy`` client connects to it exactly as it would to BeamNG.tech: one
game-engine (GE) socket on the server port, and one extra socket per vehicle on a port the server
chooses in ``StartVehicleConnection``. Each accepted connection has its own reader thread; every
request is handled under one world lock, held only while the request is handled (never while
sending or waiting for a socket), so a Step on the GE socket and a poll on a vehicle socket see
one consistent world.

Robustness rules: an unknown request type gets a ``bngError`` reply (``strict=True`` also records
it, and :meth:`StandInServer.check` / leaving the ``with`` block raises); a request whose ``_id``
is not a number or string (beamngpy sends an integer counter) gets a ``bngError`` without ``_id``
and is not run; a frame that breaks the framing, or stalls for ``stall_timeout`` in its middle,
closes only that connection, with a log line; when every socket of a client is gone, the
vehicles it created are released (despawned), so a crashed client leaves no cars behind.

It is *not* BeamNG: it says so in ``GetSystemInfo``, in its log lines and on the command line.
"""

from __future__ import annotations

import itertools
import logging
import socket
import threading
from types import TracebackType
from typing import Any

from gym_s3.beamng.protocol import (
    MAX_FRAME_BYTES,
    SERVER_NAME,
    FrameError,
    RequestError,
    RequestValueError,
    encode_frame,
    read_frame,
    short_repr,
)
from gym_s3.beamng.standin import handlers, vehicle_handlers
from gym_s3.beamng.standin.config import WorldConfig
from gym_s3.beamng.standin.requests import RequestContext
from gym_s3.beamng.standin.sockets import ByteBudget, Connection, Listener, shutdown_socket
from gym_s3.beamng.standin.world import World
from gym_s3.errors import ConfigError, S3Error

LOGGER = logging.getLogger(__name__)
_JOIN_TIMEOUT_S = 2.0
#: Default cap on open connections (a client with 100 vehicles uses 101).
MAX_CONNECTIONS = 512
#: Default cap on the bytes of partially received frames of all connections together (16 frames
#: of the largest size) [bytes].
MAX_BUFFERED_BYTES = 256 * 2**20
_LOOPBACK = ("127.0.0.1", "localhost", "::1")
#: ``_id`` values echoed in replies (anything else is refused without running the request)
_SCALAR_ID_TYPES = (bool, int, float, str, bytes)
#: most entries of :attr:`StandInServer.unknown_requests`
MAX_UNKNOWN_RECORDED = 256


class StrictModeError(S3Error, AssertionError):
    """A strict stand-in received requests it does not implement (the message lists them)."""


class StandInServer:
    """Serve BeamNG's protocol on a loopback TCP port, simulating the world with our own physics.

    Args:
        host: address to bind; loopback by default. Another address exposes an unauthenticated
            simulator control port to the network, so it is only used when given explicitly (a
            warning is logged).
        port: GE port; ``0`` lets the OS choose (tests), BeamNG's usual port is 25252.
        strict: record unknown request types so tests fail on them (see :meth:`check`).
        exit_on_quit: stop the server on ``Quit``; by default it keeps serving, because
            ``bng.close()`` sends ``Quit`` even to a simulator it did not launch.
        world_config: physics and sensor settings of the simulated world.
        max_frame_bytes: largest accepted frame body [bytes].
        stall_timeout: a frame not complete this long after its first byte closes its
            connection [s] (a whole-frame deadline, so a client trickling bytes cannot hold a
            server thread forever; between frames a client may stay idle as long as it likes).
        max_connections: open connections served at once (GE and vehicle sockets); a client
            beyond it is accepted and closed at once (logged), so the server never runs out of
            threads or descriptors because of idle clients.
        max_buffered_bytes: cap on the bytes of partially received frames of all connections
            together [bytes]; a frame that does not fit closes its connection (logged).

    Received frame bytes are bounded by ``max_buffered_bytes`` for frames over 64 KiB plus
    64 KiB per connection for smaller ones: 256 MiB + 512 x 64 KiB = 288 MiB with the defaults.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        strict: bool = False,
        exit_on_quit: bool = False,
        world_config: WorldConfig | None = None,
        max_frame_bytes: int = MAX_FRAME_BYTES,
        stall_timeout: float = 30.0,
        max_connections: int = MAX_CONNECTIONS,
        max_buffered_bytes: int = MAX_BUFFERED_BYTES,
    ) -> None:
        if not 0 <= port <= 65535:
            raise ConfigError(f"port must be in [0, 65535] (0 = any free port), got {port}")
        if max_frame_bytes < 1024:
            raise ConfigError(f"max_frame_bytes must be at least 1024, got {max_frame_bytes}")
        if not 0 < stall_timeout < float("inf"):
            raise ConfigError(
                f"stall_timeout must be a finite number of seconds > 0, got {stall_timeout}"
            )
        if max_connections < 2:
            raise ConfigError(f"max_connections must be at least 2, got {max_connections}")
        if max_buffered_bytes < max_frame_bytes:
            raise ConfigError(
                f"max_buffered_bytes ({max_buffered_bytes}) must hold at least one frame of "
                f"max_frame_bytes ({max_frame_bytes})"
            )
        self.max_connections = max_connections
        self.budget = ByteBudget(max_buffered_bytes)
        #: connections refused because ``max_connections`` were open
        self.refused_connections = 0
        self.host = host
        self.requested_port = port
        self.strict = strict
        self.exit_on_quit = exit_on_quit
        self.max_frame_bytes = max_frame_bytes
        self.stall_timeout = stall_timeout
        self.world = World(world_config or WorldConfig())
        self.world.on_vehicle_removed = self._on_vehicle_removed
        #: ``"<GE|VE> <type>"`` of the unknown requests seen, each once (always recorded; fatal
        #: if strict); at most :data:`MAX_UNKNOWN_RECORDED` entries, so garbage cannot grow it
        self.unknown_requests: list[str] = []
        self.lock = threading.RLock()
        self._ids = itertools.count(1)
        self._ge_listener: Listener | None = None
        self._vehicle_listeners: dict[str, Listener] = {}
        self._connections: dict[int, Connection] = {}
        self._stopped = threading.Event()
        self._started = False
        #: connections whose ``Quit`` stops the server once it is acknowledged
        self._quit_after_reply: set[int] = set()

    # ----------------------------------------------------------------------------- lifecycle
    @property
    def port(self) -> int:
        """The bound GE port (valid after :meth:`start`)."""
        if self._ge_listener is None:
            raise RuntimeError("the stand-in server is not started; call start() first")
        return self._ge_listener.port

    def start(self) -> int:
        """Bind and start serving; returns the GE port."""
        if self._started:
            raise RuntimeError("a StandInServer can only be started once")
        if self.host not in _LOOPBACK:
            LOGGER.warning(
                "%s: binding %s exposes an unauthenticated simulator port beyond this machine",
                SERVER_NAME,
                self.host,
            )
        if self.world.config.compile:
            # compile the frame physics now (default and 20 Hz frames) instead of on a request
            for sps in sorted({self.world.config.steps_per_second, 20}):
                self.world.fleet.warm_up(sps)
        self._ge_listener = Listener(self.host, self.requested_port, "GE", self._accept_ge)
        self._started = True
        LOGGER.info("%s listening on %s:%d", SERVER_NAME, self.host, self.port)
        return self.port

    def stop(self) -> None:
        """Close every socket and wait for the server threads to end (idempotent)."""
        if self._stopped.is_set() or not self._started:
            self._stopped.set()
            return
        self._stopped.set()
        with self.lock:
            listeners = [self._ge_listener, *self._vehicle_listeners.values()]
            self._vehicle_listeners.clear()
            connections = list(self._connections.values())
        for listener in listeners:
            if listener is not None:
                listener.close()
        for conn in connections:
            shutdown_socket(conn.sock)
        current = threading.current_thread()
        for thread in [lis.thread for lis in listeners if lis] + [c.thread for c in connections]:
            if thread is not None and thread is not current:
                thread.join(_JOIN_TIMEOUT_S)
        LOGGER.info("%s stopped", SERVER_NAME)

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the server stops (``Quit`` with ``exit_on_quit``); ``True`` if it did."""
        return self._stopped.wait(timeout)

    def check(self) -> None:
        """In strict mode, raise :class:`StrictModeError` if unknown requests were received."""
        if self.strict and self.unknown_requests:
            raise StrictModeError(
                "the stand-in received requests it does not implement: "
                + ", ".join(sorted(set(self.unknown_requests)))
                + ". Implement them in gym_s3/beamng/standin/handlers.py (GE) or "
                "vehicle_handlers.py (VE)."
            )

    def __enter__(self) -> StandInServer:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
        if exc_type is None:
            self.check()

    # ------------------------------------------------------------------------ vehicle sockets
    def open_vehicle_listener(self, vid: str) -> int:
        """Port of the vehicle's socket, opening it on first use (call with :attr:`lock` held)."""
        listener = self._vehicle_listeners.get(vid)
        if listener is None:
            bind_host = self.host if self.host not in ("localhost",) else "127.0.0.1"
            listener = Listener(bind_host, 0, f"VE-{vid}", lambda s, p: self._accept_ve(vid, s, p))
            self._vehicle_listeners[vid] = listener
            LOGGER.debug("vehicle %s listening on port %d", vid, listener.port)
        return listener.port

    def vehicle_connection_count(self, vid: str) -> int:
        """Number of open sockets of vehicle ``vid``."""
        return sum(1 for conn in self._connections.values() if conn.vid == vid)

    def record_unknown(self, prefix: str, value: Any) -> None:
        """Remember an unknown request or sensor type once (see :attr:`unknown_requests`).

        Args:
            prefix: what it was, e.g. ``"GE "`` or ``"VE SensorRequest:"``.
            value: the type as received (any msgpack value; shown cut to 100 characters).
        """
        what = (prefix + (value if isinstance(value, str) else short_repr(value)))[:100]
        if len(self.unknown_requests) < MAX_UNKNOWN_RECORDED and what not in self.unknown_requests:
            self.unknown_requests.append(what)

    def connection_count(self) -> int:
        """Number of open client connections (GE and vehicle sockets)."""
        return len(self._connections)

    def is_connected(self, cid: int) -> bool:
        """Whether connection ``cid`` is still open."""
        return cid in self._connections

    def request_quit(self, conn: Connection) -> None:
        """Handle ``Quit`` on ``conn``: with ``exit_on_quit``, stop once its reply is sent.

        The acknowledgement goes out first (see :meth:`_serve`), so the client never sees the
        connection close before its ``Quit`` is answered; otherwise only log it.
        """
        if self.exit_on_quit:
            LOGGER.info("%s: Quit received, shutting down", SERVER_NAME)
            with self.lock:
                self._quit_after_reply.add(conn.cid)
        else:
            LOGGER.info("%s: Quit received; still serving (exit_on_quit=False)", SERVER_NAME)

    def _on_vehicle_removed(self, vid: str) -> None:
        listener = self._vehicle_listeners.pop(vid, None)
        if listener is not None:
            listener.close()
        for conn in list(self._connections.values()):
            if conn.vid == vid:
                shutdown_socket(conn.sock)

    # ---------------------------------------------------------------------------- connections
    def _accept_ge(self, sock: socket.socket, peer: str) -> None:
        self._register(sock, None, peer)

    def _accept_ve(self, vid: str, sock: socket.socket, peer: str) -> None:
        self._register(sock, vid, peer)

    def _register(self, sock: socket.socket, vid: str | None, peer: str) -> None:
        with self.lock:
            if self._stopped.is_set():
                sock.close()
                return
            if len(self._connections) >= self.max_connections:
                LOGGER.warning(
                    "%s: refused a connection from %s: %d connections are open (the limit, "
                    "max_connections)", SERVER_NAME, peer, len(self._connections),
                )  # fmt: skip
                self.refused_connections += 1
                sock.close()  # after the log line and the count: the client sees both done
                return
            conn = Connection(next(self._ids), sock, vid, peer)
            self._connections[conn.cid] = conn
            conn.thread = threading.Thread(
                target=self._serve,
                args=(conn,),
                name=f"standin-{conn.kind}-{conn.cid}",
                daemon=True,
            )
        LOGGER.debug(
            "%s connection %d from %s%s", conn.kind, conn.cid, peer, f" ({vid})" * bool(vid)
        )
        conn.thread.start()

    def _serve(self, conn: Connection) -> None:
        self.world.configure_thread()
        try:
            while not self._stopped.is_set():
                try:
                    message = read_frame(
                        conn.sock, self.max_frame_bytes, self.stall_timeout, self.budget
                    )
                except FrameError as exc:
                    LOGGER.warning(
                        "%s: closing %s connection %d from %s: %s",
                        SERVER_NAME, conn.kind, conn.cid, conn.peer, exc,
                    )  # fmt: skip
                    break
                except OSError:
                    break
                if message is None:
                    break
                reply = self._dispatch(conn, message)
                sent = reply is None or self._send(conn, message, reply)
                if conn.cid in self._quit_after_reply:  # Quit: acknowledged first, then stop
                    self.stop()
                    break
                if not sent:
                    break
        finally:
            shutdown_socket(conn.sock)
            conn.sock.close()
            self._unregister(conn)

    def _send(self, conn: Connection, message: dict[str, Any], reply: dict[str, Any]) -> bool:
        """Send the reply to ``message``; ``False`` if the connection is gone."""
        try:
            conn.sock.sendall(self._encode_reply(conn, message, reply))
        except OSError:
            return False
        return True

    def _unregister(self, conn: Connection) -> None:
        with self.lock:
            self._connections.pop(conn.cid, None)
            if self._stopped.is_set():
                return
            released = self.world.release_orphans(self.is_connected, self.vehicle_connection_count)
        for vid in released:
            LOGGER.info("%s: released vehicle %s (its client disconnected)", SERVER_NAME, vid)

    def _encode_reply(
        self, conn: Connection, message: dict[str, Any], reply: dict[str, Any]
    ) -> bytes:
        """The reply frame; a reply msgpack cannot carry becomes a ``bngError`` (a bug here)."""
        try:
            return encode_frame(reply)
        except (TypeError, ValueError, OverflowError, RecursionError):
            LOGGER.exception(
                "%s: the reply to %s %s cannot be encoded", SERVER_NAME, conn.kind,
                short_repr(message.get("type")),
            )  # fmt: skip
            error = {"bngError": f"{SERVER_NAME} internal error: the reply could not be encoded"}
            return encode_frame({**error, "_id": reply["_id"]} if "_id" in reply else error)

    def _dispatch(self, conn: Connection, message: dict[str, Any]) -> dict[str, Any] | None:
        """Run one request and build its reply (``None``: no reply is due)."""
        req_id = message.get("_id")
        if req_id is not None and not isinstance(req_id, _SCALAR_ID_TYPES):
            # beamngpy's _id is an integer counter; a nested or extension value could not be
            # echoed safely (depth, unencodable types), so the request is refused unrun.
            return {
                "bngError": f"the request's _id must be a number or a string (beamngpy sends an "
                f"integer counter), got a {type(req_id).__name__}; the request was not run"
            }
        mtype = message.get("type")
        table = handlers.GE_HANDLERS if conn.vid is None else vehicle_handlers.VE_HANDLERS
        handler = table.get(mtype) if isinstance(mtype, str) else None
        reply: dict[str, Any] | None
        if handler is None:
            shown = short_repr(mtype)
            self.record_unknown(f"{conn.kind} ", mtype)
            level = logging.ERROR if self.strict else logging.WARNING
            LOGGER.log(level, "%s: unknown %s request %s", SERVER_NAME, conn.kind, shown)
            reply = {
                "bngError": f"The request {shown} was not handled by the {SERVER_NAME}"
                + (" (strict mode)." if self.strict else ".")
            }
        else:
            try:
                with self.lock:
                    reply = handler(RequestContext(self, self.world, conn), message)
            except RequestValueError as exc:
                reply = {"bngValueError": str(exc)}
            except RequestError as exc:
                reply = {"bngError": str(exc)}
            except Exception as exc:  # a bug in the stand-in must not kill the connection
                LOGGER.exception("%s: %s %s failed", SERVER_NAME, conn.kind, mtype)
                reply = {"bngError": f"{SERVER_NAME} internal error in {mtype}: {exc!r}"}
            if reply is None:
                return None
        if req_id is not None:
            reply["_id"] = req_id
        return reply
