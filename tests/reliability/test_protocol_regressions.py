"""Regression tests for the failures the protocol fuzzer found in the stand-in, and its limits.

Each test sends the shrunk input (or a close relative) over a real socket and checks the fixed
behaviour: a clear ``bngError`` / ``bngValueError`` with the echoed ``_id`` (or none for an
unusable ``_id``), a server that keeps answering, and a world that stays finite and bounded.
"""

from __future__ import annotations

import gc
import math
import time
from collections.abc import Iterator
from typing import Any

import fuzz_regressions
import pytest
from fuzz_campaign import CATEGORIES, checked_run
from fuzz_harness import FUZZ_WORLD, Harness, ServerWatch
from fuzz_strategies import BASELINE_LEVEL, EGO, msgpack_json
from fuzz_wire import (
    RawClient,
    check_world_finite,
    connection_threads,
    pack,
    rss_bytes,
    wait_for_threads_gone,
)

from gym_s3.beamng.standin import world as world_module
from gym_s3.beamng.standin.config import WorldConfig
from gym_s3.beamng.standin.server import MAX_UNKNOWN_RECORDED, StandInServer
from gym_s3.beamng.standin.vehicle_handlers import MAX_SET_SPEED
from gym_s3.errors import ConfigError

pytestmark = pytest.mark.timeout(120)
_CATEGORY = {c.key: c for c in CATEGORIES}


def _start(config: WorldConfig = FUZZ_WORLD) -> Iterator[tuple[Harness, ServerWatch]]:
    """Start a server with ``config`` and its fuzz harness; stop both afterwards."""
    server = StandInServer(world_config=config)
    server.start()
    harness = Harness(server)
    try:
        with ServerWatch() as watch:
            harness.setup()
            yield harness, watch
            watch.check()
    finally:
        harness.close()
        server.stop()


@pytest.fixture
def fuzzed() -> Iterator[tuple[Harness, ServerWatch]]:
    """A fuzz harness (baseline scenario with ``ego``) on a fresh server, watched for crashes."""
    yield from _start()


def _vehicle_line(name: str) -> str:
    """A prefab line of vehicle ``name`` at the origin."""
    return msgpack_json(
        {"name": name, "class": "BeamNGVehicle", "position": [0, 0, 0], "jBeam": "etk800"}
    )


@pytest.mark.parametrize(
    ("key", "value"),
    [("framing", v) for v in fuzz_regressions.FRAMING]
    + [("fields", v) for v in fuzz_regressions.FIELDS]
    + [("sequences", v) for v in fuzz_regressions.SEQUENCES],
)
def test_regression_input_now_passes_every_check(
    fuzzed: tuple[Harness, ServerWatch], key: str, value: Any
) -> None:
    """A once-failing input passes the campaign's checks (reply, liveness, finite world)."""
    checked_run(*fuzzed, _CATEGORY[key], value)


def test_unusable_id_is_refused_without_running_the_request(
    fuzzed: tuple[Harness, ServerWatch],
) -> None:
    """A list ``_id`` gets a bngError without ``_id``; the cube it asked for is not created."""
    harness, _ = fuzzed
    client = harness.client("GE")
    request = {"type": "CreateCube", "name": "c", "pos": [0, 0, 0], "size": [1, 1, 1], "_id": [1]}
    client.send_raw(pack(request))
    reply = client.recv_frame()
    assert reply is not None and "_id" not in reply and "integer counter" in reply["bngError"]
    assert "c" not in harness.server.world.cubes
    client.hello()  # the connection still works


def test_deep_type_gets_a_short_error_and_the_connection_stays(
    fuzzed: tuple[Harness, ServerWatch],
) -> None:
    """A ``type`` nested 1010 deep is answered with a bounded bngError instead of a dead thread."""
    harness, _ = fuzzed
    client = RawClient(harness.port)
    client.send_raw(fuzz_regressions.DEEP_TYPE)
    reply = client.recv_frame()
    assert reply is not None and "not handled" in reply["bngError"]
    assert len(reply["bngError"]) < 300
    client.hello()
    client.close()


def test_unknown_requests_are_recorded_once_and_bounded(
    fuzzed: tuple[Harness, ServerWatch],
) -> None:
    """Distinct unknown types are kept once each, at most 256, each at most 100 characters."""
    harness, _ = fuzzed
    client = harness.client("GE")
    for i in range(MAX_UNKNOWN_RECORDED + 40):
        client.request({"type": f"Unknown{i}"})
        client.request({"type": "Unknown0"})
    reply = client.request({"type": "x" * 1_000_000})
    assert len(reply["bngError"]) < 300
    recorded = harness.server.unknown_requests
    assert len(recorded) == MAX_UNKNOWN_RECORDED == len(set(recorded))
    assert max(map(len, recorded)) <= 100


def test_step_beyond_the_time_limit_is_refused_at_once() -> None:
    """With the default 600 s limit, 12,001 frames at 20/s and 2**63-1 frames fail fast."""
    config = WorldConfig(steps_per_second=20, physics_rate_hz=200.0)
    assert config.max_step_seconds == 600.0
    for harness, _ in _start(config):
        assert harness.owner is not None
        for count in (12_001, 2**63 - 1, 2**64 - 1):
            start = time.monotonic()
            reply = harness.owner.request({"type": "Step", "count": count, "ack": True})
            assert "max_step_seconds" in reply["bngValueError"]
            assert time.monotonic() - start < 1.0
        assert harness.owner.request({"type": "Step", "count": 2, "ack": True})["type"] == "Stepped"


@pytest.mark.parametrize("bad", [0, -1.0, math.inf, math.nan, "600"])
def test_max_step_seconds_is_validated(bad: Any) -> None:
    """WorldConfig refuses a step limit that is not a finite positive number of seconds."""
    with pytest.raises(ConfigError, match="max_step_seconds"):
        WorldConfig(max_step_seconds=bad)


def test_set_velocity_is_bounded_and_the_world_stays_finite(
    fuzzed: tuple[Harness, ServerWatch],
) -> None:
    """+-200 m/s is accepted and steps finitely; 1e308 and 200.1 m/s are refused."""
    harness, _ = fuzzed
    assert harness.ve is not None and harness.owner is not None
    for speed in (1e308, MAX_SET_SPEED + 0.1, -1e6):
        reply = harness.ve.request({"type": "SetVelocity", "velocity": speed, "dt": 1.0})
        assert "SetVelocity" in reply["bngValueError"]
    reply = harness.ve.request({"type": "SetVelocity", "velocity": MAX_SET_SPEED, "dt": 1.0})
    assert reply["type"] == "VelocitySet"
    assert harness.owner.request({"type": "Step", "count": 5, "ack": True})["type"] == "Stepped"
    check_world_finite(harness.server)


def test_prefab_with_two_vehicles_of_one_name_is_refused(
    fuzzed: tuple[Harness, ServerWatch],
) -> None:
    """Two prefab vehicles named ``ego`` are a bngError, not two world entries with one id."""
    harness, _ = fuzzed
    assert harness.owner is not None
    prefab = "\n".join([_vehicle_line(EGO), _vehicle_line(EGO)])
    reply = harness.owner.request(
        {"type": "CreateScenario", "level": BASELINE_LEVEL, "name": "dup", "prefab": prefab}
    )
    assert "second vehicle named 'ego'" in reply["bngError"]


def test_world_limits_on_vehicles_objects_and_scenarios(
    fuzzed: tuple[Harness, ServerWatch], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the vehicle and object limits requests fail clearly; old scenarios are forgotten."""
    harness, _ = fuzzed
    owner = harness.owner
    assert owner is not None
    monkeypatch.setattr(world_module, "MAX_VEHICLES", 3)
    monkeypatch.setattr(world_module, "MAX_OBJECTS", 2)
    monkeypatch.setattr(world_module, "MAX_SCENARIOS", 3)
    spawn = {"type": "SpawnVehicle", "model": "etk800", "pos": [0, 5, 0]}
    assert owner.request({**spawn, "name": "a"})["success"] is True
    assert owner.request({**spawn, "name": "b"})["success"] is True
    assert "at most 3 vehicles" in owner.request({**spawn, "name": "c"})["bngError"]
    prefab = "\n".join(_vehicle_line(f"v{i}") for i in range(4))
    make = {"type": "CreateScenario", "level": BASELINE_LEVEL, "prefab": prefab, "name": "big"}
    assert "4 vehicles" in owner.request(make)["bngError"]
    cube = {"type": "CreateCube", "pos": [0, 0, 0], "size": [1, 1, 0.1]}
    for name in ("k1", "k2", "k1"):  # replacing an existing name needs no room
        assert owner.request({**cube, "name": name})["type"] == "CreatedCube"
    assert "at most 2 procedural" in owner.request({**cube, "name": "k3"})["bngError"]
    for i in range(5):
        owner.request({**make, "name": f"s{i}", "prefab": _vehicle_line(EGO)})
    scenarios = harness.server.world.scenarios
    assert len(scenarios) == 3 and harness.server.world.scenario.path in scenarios


def test_connection_bursts_are_accepted_at_once_and_leave_nothing_behind(
    fuzzed: tuple[Harness, ServerWatch],
) -> None:
    """300 clients connecting back to back are accepted within 0.5 s each and all answered.

    After they leave, their threads end, and a repeated burst does not grow memory. A 16-deep
    accept backlog used to drop SYNs of such a burst (clients waited 1 s each).
    """
    harness, _ = fuzzed
    baseline = connection_threads()
    rss: list[int] = []
    for _ in range(3):
        clients, slowest = [], 0.0
        for _ in range(300):
            start = time.monotonic()
            clients.append(RawClient(harness.port))
            slowest = max(slowest, time.monotonic() - start)
        for client in clients:
            client.hello()
        assert slowest < 0.5, f"a connect took {slowest:.2f} s"
        for client in clients:
            client.close()
        wait_for_threads_gone(baseline)
        gc.collect()
        rss.append(rss_bytes())
    assert rss[-1] - rss[1] < 10 * 2**20


def test_a_stalled_frame_is_closed_but_an_idle_client_is_not() -> None:
    """Half a header then silence is closed after ``stall_timeout``; idling between frames is not.

    Before, a client that stopped in the middle of a frame held its server thread forever.
    """
    with StandInServer(world_config=FUZZ_WORLD, stall_timeout=0.3) as server:
        baseline = connection_threads()
        stalled, idle = RawClient(server.port), RawClient(server.port)
        stalled.send_raw(b"\x00\x00")
        start = time.monotonic()
        assert stalled.recv_frame() is None  # closed by the server
        assert 0.25 < time.monotonic() - start < 3.0
        time.sleep(0.5)
        idle.hello()
        idle.close()
        stalled.close()
        wait_for_threads_gone(baseline)
    with pytest.raises(ConfigError, match="stall_timeout"):
        StandInServer(stall_timeout=0.0)
