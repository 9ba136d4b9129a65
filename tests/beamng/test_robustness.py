"""Robustness: unknown requests, broken frames, several clients, vanished clients, dead server."""

from __future__ import annotations

import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import msgpack
import pytest
from standin_support import FAST_WORLD, SOCKET_TIMEOUT_S, make_scenario, speed

from gym_s3.beamng.protocol import encode_frame
from gym_s3.beamng.standin.server import StandInServer, StrictModeError

pytestmark = pytest.mark.timeout(60)
REPO = Path(__file__).resolve().parents[2]


def test_unknown_request_gets_bng_error(bngpy: Any, connect: Any) -> None:
    """An unknown type is answered with bngError and the connection keeps working."""
    with StandInServer(world_config=FAST_WORLD) as srv:
        bng = connect(srv)
        with pytest.raises(bngpy.logging.BNGError, match="not handled by the sim2sim2sim"):
            bng._send({"type": "SpawnMeteor"}).recv()
        assert bng.control.get_gamestate()["state"] == "menu"
        assert srv.unknown_requests == ["GE SpawnMeteor"]
        srv.check()  # not strict: no failure


def test_strict_mode_makes_unknown_requests_fail(bngpy: Any, connect: Any) -> None:
    """Strict mode still answers an unknown request, and leaving ``with`` raises."""
    srv = StandInServer(strict=True, world_config=FAST_WORLD)
    with pytest.raises(StrictModeError, match="SpawnMeteor"):
        with srv:
            bng = connect(srv)
            with pytest.raises(bngpy.logging.BNGError, match="strict mode"):
                bng._send({"type": "SpawnMeteor"}).recv()
            bng.disconnect()


def _raw_client(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=5.0)
    return sock


@pytest.mark.parametrize(
    "payload",
    [
        struct.pack("!I", 0xFFFFFFF0) + b"garbage",
        struct.pack("!I", 5) + b"\xc1\xc1\xc1\xc1\xc1",
        struct.pack("!I", 3) + msgpack.packb([1, 2]),
        b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
    ],
    ids=["oversized", "not-msgpack", "not-a-map", "http"],
)
def test_broken_frame_closes_only_that_connection(
    server: StandInServer, connect: Any, payload: bytes
) -> None:
    """A broken frame closes its own connection; an open client and a new client keep working."""
    bystander = connect(server)
    raw = _raw_client(server.port)
    raw.sendall(payload)
    assert raw.recv(1024) == b""  # closed by the server, nothing sent back
    raw.close()
    assert bystander.control.get_gamestate()["state"] == "menu"
    assert connect(server).control.get_gamestate()["state"] == "menu"


def test_frame_without_id_or_type(server: StandInServer) -> None:
    """A map without ``type`` gets a bngError (with its ``_id``); the connection stays open."""
    raw = _raw_client(server.port)
    raw.sendall(encode_frame({"_id": 4, "hello": 1}))
    header = raw.recv(4)
    body = raw.recv(struct.unpack("!I", header)[0])
    reply = msgpack.unpackb(body, raw=False)
    assert reply["_id"] == 4 and "not handled" in reply["bngError"]
    raw.sendall(encode_frame({"_id": 5, "type": "Hello"}))
    assert b"v1.27" in raw.recv(1024)
    raw.close()
    server.unknown_requests.clear()  # expected here; keep the strict fixture quiet


def test_step_without_ack_sends_no_reply(server: StandInServer, connect: Any, bngpy: Any) -> None:
    """``step(wait=False)`` is not answered (no stray reply is buffered by the client)."""
    bng = connect(server)
    _, vehicle = make_scenario(bngpy, bng, "noack")
    bng.control.step(4, wait=False)
    vehicle.sensors.poll("timer")
    assert vehicle.sensors["timer"]["time"] == pytest.approx(4 / 20)
    assert bng.connection.received_messages == {}
    bng.settings.set_steps_per_second(60)
    bng.control.step(6)
    vehicle.sensors.poll("timer")
    assert vehicle.sensors["timer"]["time"] == pytest.approx(4 / 20 + 6 / 60)


def test_two_clients_at_once_and_release_on_disconnect(
    server: StandInServer, connect: Any, bngpy: Any
) -> None:
    """Two clients drive their own cars concurrently; when one leaves, only its car is released."""
    bng_a = connect(server)
    _, ego = make_scenario(bngpy, bng_a, "two_clients")
    bng_b = connect(server)
    guest = bngpy.Vehicle("guest", model="etk800")
    assert bng_b.vehicles.spawn(guest, (0.0, 10.0, 0.0), rot_quat=(0, 0, 0, 1), safe_spawn=False)
    errors: list[BaseException] = []

    def drive_a() -> None:
        try:
            ego.control(throttle=1.0)
            for _ in range(20):
                bng_a.control.step(1)
                ego.sensors.poll("state")
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    def drive_b() -> None:
        try:
            guest.control(throttle=0.5)
            for _ in range(20):
                guest.sensors.poll("state")
                assert bng_b.control.get_gamestate()["state"] == "scenario"
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=drive_a), threading.Thread(target=drive_b)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert not errors
    ego.sensors.poll("state")
    guest.sensors.poll("state")
    assert speed(ego.state) > 1.0 and speed(guest.state) > 0.5

    guest.disconnect()  # every socket of client B goes away, as when its process dies
    bng_b.disconnect()
    deadline = time.monotonic() + 5.0
    while "guest" in bng_a.vehicles.get_current_info() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert set(bng_a.vehicles.get_current_info()) == {"ego"}
    bng_a.control.step(1)  # the remaining client is unaffected


def test_server_stopped_mid_episode_fails_fast(bngpy: Any, connect: Any) -> None:
    """Stopping the server under a client gives a disconnect error, not a hang."""
    srv = StandInServer(world_config=FAST_WORLD)
    srv.start()
    bng = connect(srv)
    _, vehicle = make_scenario(bngpy, bng, "stopped")
    bng.control.step(1)
    srv.stop()
    start = time.monotonic()
    with pytest.raises((bngpy.logging.BNGDisconnectedError, ConnectionError, OSError)):
        bng.control.step(1)
    assert time.monotonic() - start < 2 * SOCKET_TIMEOUT_S


def test_killed_server_process_gives_clear_error(bngpy: Any) -> None:
    """SIGKILL of a ``python -m gym_s3.beamng.standin.cli`` server mid-episode: a clear error."""
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gym_s3.beamng.standin.cli",
            "--port",
            "0",
            "--log-level",
            "WARNING",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        banner = proc.stdout.readline()
        assert "OPEN STAND-IN (not BeamNG)" in banner, banner
        port = int(banner.split(" on ")[1].split(" ")[0].rsplit(":", 1)[1])
        bng = bngpy.BeamNGpy("127.0.0.1", port, quit_on_close=False, socket_timeout=2.0)
        bng.open(launch=False)
        _, vehicle = make_scenario(bngpy, bng, "killed")
        vehicle.control(throttle=1.0)
        bng.control.step(1)
        vehicle.sensors.poll()
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        start = time.monotonic()
        with pytest.raises((bngpy.logging.BNGDisconnectedError, ConnectionError)) as info:
            bng.control.step(1)
        assert time.monotonic() - start < 2 * 2.0 + 3.0  # two timeouts plus reconnect tries
        assert "simulator" in str(info.value).lower() or isinstance(info.value, ConnectionError)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)
        if proc.stdout is not None:
            proc.stdout.close()


def test_stop_leaves_no_server_thread(bngpy: Any, connect: Any) -> None:
    """After stop(), every accept and connection thread of the server has ended."""
    srv = StandInServer(world_config=FAST_WORLD)
    srv.start()
    bng = connect(srv)
    make_scenario(bngpy, bng, "threads")
    assert any(t.name.startswith("standin-") for t in threading.enumerate())
    srv.stop()
    deadline = time.monotonic() + 5.0
    while any(t.name.startswith("standin-") for t in threading.enumerate()):
        assert time.monotonic() < deadline, [t.name for t in threading.enumerate()]
        time.sleep(0.01)
