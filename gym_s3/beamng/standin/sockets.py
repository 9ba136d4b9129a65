"""Sockets of the stand-in server: connections, resilient listeners, the frame byte budget."""

from __future__ import annotations

import errno
import logging
import select
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

LOGGER = logging.getLogger(__name__)


@dataclass(eq=False)
class Connection:
    """One accepted client socket.

    Attributes:
        cid: connection id, unique for the server's lifetime.
        sock: the socket.
        vid: ``None`` for a GE connection, else the vehicle id of a vehicle socket.
        peer: client address, for log lines.
    """

    cid: int
    sock: socket.socket
    vid: str | None
    peer: str
    thread: threading.Thread | None = field(default=None, repr=False)

    @property
    def kind(self) -> str:
        """``"GE"`` or ``"VE"`` (as in the protocol notes)."""
        return "GE" if self.vid is None else "VE"


#: ``accept()`` errors after which the listener backs off and keeps accepting (the process is out
#: of file descriptors or memory, or the client gave up before being accepted).
_TRANSIENT_ACCEPT_ERRORS = frozenset(
    {errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM, errno.ECONNABORTED, errno.EPROTO,
     errno.EPERM, errno.EINTR, errno.EAGAIN}
)  # fmt: skip
#: First and longest wait after a failed ``accept()`` [s] (doubled after each further failure).
ACCEPT_BACKOFF_S = (0.01, 1.0)


class Listener:
    """A listening socket with its own accept thread, woken for shutdown through a socket pair.

    A failing ``accept()`` (out of file descriptors, ``EMFILE``) never ends the thread: the
    error is logged (once per streak), the thread waits (10 ms doubling up to 1 s, or until
    closed) and accepts again, so the server serves again as soon as descriptors are free.
    """

    def __init__(self, host: str, port: int, name: str, on_accept: Any) -> None:
        self.name = name
        self.sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self.sock.bind((host, port))
            # a short backlog dropped SYNs of connection bursts: those clients waited 1 s each
            self.sock.listen(socket.SOMAXCONN)
        except OSError:
            self.sock.close()
            raise
        self.port: int = self.sock.getsockname()[1]
        self._wake_r, self._wake_w = socket.socketpair()
        self._on_accept = on_accept
        #: ``accept()`` failures survived so far (tests and diagnostics)
        self.accept_failures = 0
        self.thread = threading.Thread(target=self._run, name=f"standin-accept-{name}", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        delay = 0.0
        try:
            while True:
                readable, _, _ = select.select([self.sock, self._wake_r], [], [], delay or None)
                if self._wake_r in readable:
                    break
                if delay and self.sock not in readable:
                    continue  # backed off; nothing waiting yet
                try:
                    client, address = self.sock.accept()
                except OSError as exc:
                    if exc.errno not in _TRANSIENT_ACCEPT_ERRORS:
                        LOGGER.error("%s listener: accept() failed for good: %s", self.name, exc)
                        break
                    self.accept_failures += 1
                    if not delay:
                        LOGGER.warning(
                            "%s listener: accept() failed (%s); backing off and retrying",
                            self.name, exc.strerror or exc,
                        )  # fmt: skip
                    delay = min(max(2 * delay, ACCEPT_BACKOFF_S[0]), ACCEPT_BACKOFF_S[1])
                    self._sleep(delay)
                    continue
                if delay:
                    LOGGER.info("%s listener: accepting again", self.name)
                    delay = 0.0
                try:
                    client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                except OSError:  # the client already left
                    client.close()
                    continue
                self._on_accept(client, f"{address[0]}:{address[1]}")
        finally:
            self.sock.close()
            self._wake_r.close()

    def _sleep(self, seconds: float) -> None:
        """Wait ``seconds`` or until :meth:`close` is called."""
        select.select([self._wake_r], [], [], seconds)

    def close(self) -> None:
        """Stop accepting; the accept thread closes the socket and exits."""
        try:
            self._wake_w.send(b"x")
        except OSError:  # already closed
            return
        self._wake_w.close()


class ByteBudget:
    """A server-wide cap on the bytes of frames being received, shared by all connections.

    A connection reserves a frame's announced length before reading its body and releases it
    after; a reservation beyond the cap fails, so many clients holding large partial frames
    cannot make the server buffer more than ``limit`` bytes in total. Frames of at most
    ``exempt`` bytes (every ordinary request) need no reservation, so clients holding the
    budget cannot stop ordinary clients from being served; their memory is bounded by the
    connection limit times ``exempt``.
    """

    def __init__(self, limit: int, exempt: int = 64 * 1024) -> None:
        self.limit = limit
        self.exempt = exempt
        self.in_use = 0
        self._lock = threading.Lock()

    @contextmanager
    def reserve(self, nbytes: int) -> Iterator[bool]:
        """Reserve ``nbytes`` for the block; yields False (nothing reserved) when over the cap."""
        if nbytes <= self.exempt:
            yield True
            return
        with self._lock:
            granted = self.in_use + nbytes <= self.limit
            if granted:
                self.in_use += nbytes
        try:
            yield granted
        finally:
            if granted:
                with self._lock:
                    self.in_use -= nbytes


def shutdown_socket(sock: socket.socket) -> None:
    """Wake a thread blocked in ``recv`` on ``sock`` (errors mean it is closed already)."""
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
