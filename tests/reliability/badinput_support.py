"""Shared pieces of the bad-input catalogue: the case record, CLI runners, hostile peers.

A :class:`Case` is one row of the catalogue: a small callable that feeds one bad input to the real
code, the exception class it must raise, and two regular expressions its message must match, one
naming the problem and one naming the fix. The CLI runners turn a non-zero exit into a
:class:`CliExit` carrying the exit code and the text printed to stderr, so command-line cases are
checked like every other case. :class:`SilentServer` accepts TCP connections and never answers;
:class:`FreezableProxy` forwards a simulator connection until it is frozen, which makes a server
that stops answering in the middle of an episode.
"""

from __future__ import annotations

import contextlib
import io
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Case:
    """One bad input and the error it must produce.

    Attributes:
        id: short unique name (the pytest id), ``<area>-<what>``.
        run: feeds the bad input; receives a fresh empty folder and must raise.
        error: the exception class the input must raise (a subclass is accepted).
        problem: regex the message must match that names what was wrong.
        fix: regex the message must match that says what to do about it.
        timeout_s: the case fails (instead of hanging) after this long [s].
    """

    id: str
    run: Callable[[Path], object]
    error: type[BaseException]
    problem: str
    fix: str
    timeout_s: float = 60.0


class CliExit(Exception):
    """A command line ended with a non-zero exit code.

    Attributes:
        code: the exit code.
        stderr: everything the command printed to stderr.
    """

    def __init__(self, code: int, stderr: str) -> None:
        super().__init__(stderr)
        self.code = code
        self.stderr = stderr


def run_cli(argv: Sequence[str]) -> str:
    """Run ``s3 <argv>`` in this process; raise :class:`CliExit` on a non-zero exit.

    argparse errors (``SystemExit``) count as exits. Any other exception propagates as it would
    reach a user: as a traceback, which the catalogue counts as a failure.

    Returns:
        What the command printed to stdout.
    """
    from gym_s3.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    if code:
        raise CliExit(code, err.getvalue())
    return out.getvalue()


def run_cli_process(argv: Sequence[str], *, timeout_s: float = 60.0) -> str:
    """Run ``python -m gym_s3.cli <argv>`` as a child process; raise :class:`CliExit` on failure.

    Returns:
        What the command printed to stdout.
    """
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run(
        [sys.executable, "-m", "gym_s3.cli", *argv],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        env=env,
        cwd=REPO,
    )
    if proc.returncode:
        raise CliExit(proc.returncode, proc.stderr)
    return proc.stdout


def unwritable_dir(root: Path) -> Path:
    """A folder path under ``root`` that this process cannot create files in.

    A read-only folder where permissions apply; as root, whom ``chmod`` does not stop, a path
    below a regular file (no process can create it).
    """
    folder = root / "read_only"
    folder.mkdir()
    folder.chmod(0o555)
    probe = folder / "probe"
    try:
        probe.touch()
    except PermissionError:
        return folder
    probe.unlink()
    folder.chmod(0o755)
    blocker = root / "a_file"
    blocker.write_text("not a folder\n")
    return blocker / "out"


def free_port() -> int:
    """A loopback TCP port that nothing listens on (bound, read and released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _close_listener(sock: socket.socket) -> None:
    """Close a listening socket and wake a thread blocked in its ``accept`` (Linux)."""
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()


class SilentServer:
    """A loopback TCP server that accepts every connection and never sends a byte.

    Use as a context manager; :attr:`port` is the listening port and :attr:`accepted` counts the
    connections taken.
    """

    def __init__(self) -> None:
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(16)
        self.port: int = self._sock.getsockname()[1]
        self._conns: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, name="silent-server", daemon=True)

    @property
    def accepted(self) -> int:
        """Connections accepted so far."""
        return len(self._conns)

    def _accept(self) -> None:
        """Take connections until the listening socket closes."""
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            self._conns.append(conn)

    def __enter__(self) -> SilentServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        _close_listener(self._sock)
        for conn in self._conns:
            conn.close()
        self._thread.join(5.0)


class FreezableProxy:
    """Forward loopback TCP connections to ``upstream_port`` until :meth:`freeze` is called.

    After :meth:`freeze`, bytes in both directions are dropped and new connections are accepted
    but never connected upstream: to the client, the simulator stopped answering.
    """

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(16)
        self.port: int = self._sock.getsockname()[1]
        self._frozen = threading.Event()
        self._open: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self._accepter = threading.Thread(target=self._accept, name="proxy-accept", daemon=True)

    def freeze(self) -> None:
        """Stop forwarding (connections stay open, silent)."""
        self._frozen.set()

    def _accept(self) -> None:
        """Pair every client with an upstream connection while not frozen."""
        while True:
            try:
                client, _ = self._sock.accept()
            except OSError:
                return
            self._open.append(client)
            if self._frozen.is_set():
                continue
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port), timeout=5.0)
            upstream.settimeout(None)
            self._open.append(upstream)
            for src, dst in ((client, upstream), (upstream, client)):
                thread = threading.Thread(target=self._pump, args=(src, dst), daemon=True)
                thread.start()
                self._threads.append(thread)

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        """Copy bytes from ``src`` to ``dst`` until either side closes (drop them once frozen)."""
        while True:
            try:
                data = src.recv(65536)
            except OSError:
                return
            if not data:
                return
            if self._frozen.is_set():
                continue
            try:
                dst.sendall(data)
            except OSError:
                return

    def __enter__(self) -> FreezableProxy:
        self._accepter.start()
        return self

    def __exit__(self, *exc: object) -> None:
        _close_listener(self._sock)
        for sock in self._open:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        for thread in (self._accepter, *self._threads):
            thread.join(5.0)
