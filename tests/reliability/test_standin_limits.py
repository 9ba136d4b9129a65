"""The stand-in cannot be knocked out (issue 23): descriptors, connections, slow and big frames.

Each test attacks a real :class:`~gym_s3.beamng.standin.server.StandInServer` over TCP and
then drives a
short episode with the real ``beamngpy`` client on it:

* the server process runs out of file descriptors (``RLIMIT_NOFILE`` = 128, 200 clients): its
  listener logs the failed ``accept()``, backs off and serves again once clients leave;
* 400 idle connections are open while the ``beamngpy`` client drives;
* a frame trickled one byte at a time is cut off by the whole-frame deadline;
* clients holding large partial frames reserve at most ``max_buffered_bytes`` in total.
"""

from __future__ import annotations

import logging
import os
import resource
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from fuzz_campaign import beamngpy_episode
from fuzz_harness import FUZZ_WORLD
from fuzz_wire import wait_for

from gym_s3.beamng.standin.server import StandInServer

pytest.importorskip("beamngpy")
pytestmark = pytest.mark.timeout(120)
REPO = Path(__file__).resolve().parents[2]


@contextmanager
def clients(port: int, n: int) -> Iterator[list[socket.socket]]:
    """``n`` idle TCP connections to ``port`` (closed afterwards)."""
    socks = []
    try:
        for _ in range(n):
            socks.append(socket.create_connection(("127.0.0.1", port), timeout=5.0))
        yield socks
    finally:
        for sock in socks:
            sock.close()


def _closed_by_server(sock: socket.socket, within_s: float) -> bool:
    """True when the server closes ``sock`` within ``within_s`` seconds."""
    sock.settimeout(within_s)
    try:
        while sock.recv(4096):
            pass
    except TimeoutError:
        return False
    except OSError:
        return True
    return True


def _limit_descriptors() -> None:
    """In the child: at most 128 open files."""
    resource.setrlimit(resource.RLIMIT_NOFILE, (128, 128))


def test_serves_again_after_running_out_of_file_descriptors(tmp_path: Path) -> None:
    """200 clients exhaust a 128-descriptor server; after they leave, beamngpy is served."""
    log = tmp_path / "standin.log"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    with open(log, "w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "gym_s3.beamng.standin.cli", "--port", "0"]
        + ["--log-level", "INFO"],
            stdout=subprocess.PIPE, stderr=err, text=True, env=env,
            preexec_fn=_limit_descriptors,
        )  # fmt: skip
    try:
        assert proc.stdout is not None
        banner = proc.stdout.readline()
        port = int(banner.split(" on ")[1].split(" ")[0].rsplit(":", 1)[1])
        with clients(port, 200):
            assert wait_for(lambda: "accept() failed" in log.read_text(), 10.0), log.read_text()
            time.sleep(1.0)  # several failed accepts while out of descriptors
        assert proc.poll() is None
        start = time.monotonic()
        beamngpy_episode(port, "after_emfile")
        text = log.read_text()
        assert "Too many open files" in text and "accepting again" in text
        assert time.monotonic() - start < 15.0
    finally:
        proc.kill()
        proc.wait(10)
        if proc.stdout is not None:
            proc.stdout.close()


def test_serves_beamngpy_while_400_connections_are_open() -> None:
    """400 idle clients hold connections; a beamngpy client still drives an episode."""
    with StandInServer(world_config=FUZZ_WORLD) as server, clients(server.port, 400):
        assert wait_for(lambda: server.connection_count() >= 400, 20.0)
        beamngpy_episode(server.port, "crowded")
        assert server.refused_connections == 0


def test_connections_beyond_the_limit_are_refused_and_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """With ``max_connections=8``, the ninth client is closed at once; the first eight stay."""
    caplog.set_level(logging.WARNING, logger="gym_s3.beamng.standin.server")
    with StandInServer(world_config=FUZZ_WORLD, max_connections=8) as server:
        with clients(server.port, 8) as held:
            assert wait_for(lambda: server.connection_count() == 8, 5.0)
            with clients(server.port, 1) as (extra,):
                assert _closed_by_server(extra, 5.0)
            assert server.refused_connections == 1 and "max_connections" in caplog.text
            assert not _closed_by_server(held[0], 0.2)
        assert wait_for(lambda: server.connection_count() == 0, 5.0)
        beamngpy_episode(server.port, "after_limit")


def test_a_trickled_frame_is_cut_off_by_the_whole_frame_deadline() -> None:
    """One byte every 0.2 s keeps every read short, but the frame must end within 1 s."""
    with StandInServer(world_config=FUZZ_WORLD, stall_timeout=1.0) as server:
        with clients(server.port, 1) as (slow,):
            frame = struct.pack("!I", 100) + b"\x80" * 100
            start = time.monotonic()
            slow.settimeout(0.05)
            closed = False
            for byte in frame:
                try:
                    slow.sendall(bytes([byte]))
                    if slow.recv(1) == b"":
                        closed = True
                        break
                except TimeoutError:
                    pass
                except OSError:
                    closed = True
                    break
                time.sleep(0.2)
            elapsed = time.monotonic() - start
            assert closed and elapsed < 3.0, f"still open after {elapsed:.1f} s"
            beamngpy_episode(server.port, "after_trickle")


def test_partial_large_frames_are_bounded_by_the_buffer_cap() -> None:
    """12 clients each start a 1 MiB frame; a 4 MiB cap lets 4 buffer, closes the others."""
    mib = 2**20
    with StandInServer(world_config=FUZZ_WORLD, max_frame_bytes=mib,
                       max_buffered_bytes=4 * mib) as server:  # fmt: skip
        with clients(server.port, 12) as socks:
            refused = []  # the server may close an over-budget client while it is still sending
            for sock in socks:
                try:
                    sock.sendall(struct.pack("!I", mib) + b"\x00" * (mib // 2))
                    refused.append(False)
                except (BrokenPipeError, ConnectionResetError):
                    refused.append(True)
            closed = [r or _closed_by_server(s, 1.0) for r, s in zip(refused, socks, strict=True)]
            assert sum(closed) == 8, closed
            assert server.budget.in_use == 4 * mib
            beamngpy_episode(server.port, "beside_partial_frames")
        assert wait_for(lambda: server.budget.in_use == 0, 5.0)
