"""Sockets of the stand-in server: accepted connections, listeners with their accept threads."""

from __future__ import annotations

import select
import socket
import threading
from dataclasses import dataclass, field
from typing import Any


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


class Listener:
    """A listening socket with its own accept thread, woken for shutdown through a socket pair."""

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
        self.thread = threading.Thread(target=self._run, name=f"standin-accept-{name}", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while True:
            readable, _, _ = select.select([self.sock, self._wake_r], [], [])
            if self._wake_r in readable:
                break
            try:
                client, address = self.sock.accept()
            except OSError:
                break
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._on_accept(client, f"{address[0]}:{address[1]}")
        self.sock.close()
        self._wake_r.close()

    def close(self) -> None:
        """Stop accepting; the accept thread closes the socket and exits."""
        try:
            self._wake_w.send(b"x")
        except OSError:  # already closed
            return
        self._wake_w.close()


def shutdown_socket(sock: socket.socket) -> None:
    """Wake a thread blocked in ``recv`` on ``sock`` (errors mean it is closed already)."""
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
