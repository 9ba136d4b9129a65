"""The fuzz campaign: six input categories, a runner that counts inputs, resource measurements.

The resources measured around the campaign are memory, threads, connections and idle CPU.

After every input the server must (1) have no crashed thread and no ERROR log line, (2) answer a
brand-new client's ``Hello`` and ``GameStateRequest``, and (3) hold a finite world with unique
vehicle ids. The real ``beamngpy`` client runs a whole episode (open, scenario, step, poll)
between categories. Used by ``test_protocol_fuzz.py`` (reduced and full) and
``tools/fuzz_standin.py``.
"""

from __future__ import annotations

import gc
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import fuzz_regressions
from fuzz_harness import (
    FUZZ_WORLD,
    Harness,
    ServerWatch,
    run_framing,
    run_interleaved,
    run_refused,
    run_request,
    run_sequence,
)
from fuzz_strategies import GE_FIELDS, VE_FIELDS, hostile, request_ids, requests_of
from fuzz_streams import framing_cases, interleave_cases, sequence_cases
from fuzz_wire import (
    check_fresh_client,
    check_world_finite,
    cpu_seconds,
    rss_bytes,
    server_threads,
    wait_for,
)
from hypothesis import HealthCheck, example, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

from gym_s3.beamng.frames import yaw_to_quat
from gym_s3.beamng.standin.server import StandInServer

_GE_ONLY = sorted(set(GE_FIELDS) - set(VE_FIELDS))
_VE_ONLY = sorted(set(VE_FIELDS) - set(GE_FIELDS))
_KNOWN = set(GE_FIELDS) | set(VE_FIELDS)


@st.composite
def _unknown(draw: st.DrawFn) -> tuple[str, dict[Any, Any]]:
    """A map whose ``type`` is no request type (or missing), for either socket."""
    mtype = draw(
        st.sampled_from(("hello", "HELLO", "Step ", "SpawnMeteor", "GetLevels", "SetGravity", ""))
        | st.text(max_size=16).filter(lambda t: t not in _KNOWN)
        | hostile.filter(lambda v: not isinstance(v, str))
    )
    message = draw(st.dictionaries(st.text(max_size=6), hostile, max_size=3))  # str keys only
    message.pop("type", None)
    if draw(st.integers(0, 9)):
        message["type"] = mtype
    message["_id"] = draw(request_ids)
    return draw(st.sampled_from(("GE", "VE"))), message


_wrong_socket = st.one_of(
    requests_of({t: VE_FIELDS[t] for t in _VE_ONLY}).map(lambda m: ("GE", m)),
    requests_of({t: GE_FIELDS[t] for t in _GE_ONLY}).map(lambda m: ("VE", m)),
)
_known = st.one_of(
    requests_of(GE_FIELDS).map(lambda m: ("GE", m)),
    requests_of(VE_FIELDS).map(lambda m: ("VE", m)),
)


@dataclass(frozen=True)
class Category:
    """One category of fuzz inputs.

    Attributes:
        key: short name.
        title: what the inputs are.
        strategy: hypothesis strategy of one input.
        run: sends one input and checks the replies.
        default_examples: ``max_examples`` of the default (fast) test run.
        full_examples: ``max_examples`` of the full campaign.
        regressions: inputs that once failed; always run first.
    """

    key: str
    title: str
    strategy: Any
    run: Callable[[Harness, Any], None]
    default_examples: int
    full_examples: int
    regressions: tuple[Any, ...] = ()


CATEGORIES: tuple[Category, ...] = (
    Category("framing", "(a) raw bytes, framing errors", framing_cases, run_framing, 400, 3000,
             fuzz_regressions.FRAMING),
    Category("fields", "(b) known types, bad fields", _known, run_request, 400, 3000,
             fuzz_regressions.FIELDS),
    Category("unknown", "(c) unknown types", _unknown(), run_refused, 150, 1000),
    Category("wrong_socket", "(d) wrong socket", _wrong_socket, run_refused, 150, 1000),
    Category("interleaved", "(e) interleaved, resets", interleave_cases, run_interleaved, 200,
             1000),
    Category("sequences", "(f) hostile sequences", sequence_cases, run_sequence, 200, 1200,
             fuzz_regressions.SEQUENCES),
)  # fmt: skip


@dataclass
class CategoryResult:
    """Outcome of one category: inputs actually sent, failures (hypothesis reports), time [s]."""

    key: str
    title: str
    inputs: int
    failures: list[str]
    seconds: float
    rss_after: int = 0


@dataclass
class CampaignReport:
    """Counts and resource measurements of a campaign.

    Attributes:
        results: one per category, in order.
        rss_start: resident memory after warm-up [bytes].
        rss_end: resident memory after the last input [bytes].
        peak_threads: most live server threads seen between inputs.
        threads_after: server threads alive once every client disconnected (and settled).
        connections_after: open server connections at that point.
        vehicles_after: vehicles left in the world at that point (all clients gone).
        unknown_recorded: length of ``server.unknown_requests`` at the end.
        idle_cpu: CPU time the process used during one idle second at the end [s].
        beamngpy_runs: real-client episodes completed (warm-up, between categories, final).
        replayed: inputs sent again in the replays (not counted in :attr:`inputs`).
        replay_rss: resident memory after each replay [bytes].
    """

    results: list[CategoryResult] = field(default_factory=list)
    rss_start: int = 0
    rss_end: int = 0
    peak_threads: int = 0
    threads_after: list[str] = field(default_factory=list)
    connections_after: int = -1
    vehicles_after: int = -1
    unknown_recorded: int = 0
    idle_cpu: float = math.nan
    beamngpy_runs: int = 0
    replayed: int = 0
    replay_rss: list[int] = field(default_factory=list)

    @property
    def replay_growth(self) -> int:
        """Resident memory growth from the first to the last replay [bytes]."""
        return self.replay_rss[-1] - self.replay_rss[0] if self.replay_rss else 0

    @property
    def inputs(self) -> int:
        """Fuzz inputs sent over all categories."""
        return sum(r.inputs for r in self.results)

    @property
    def failures(self) -> list[str]:
        """Every failure report, prefixed with its category."""
        return [f"{r.key}: {text}" for r in self.results for text in r.failures]


def checked_run(harness: Harness, watch: ServerWatch, category: Category, value: Any) -> None:
    """Send one input of ``category`` and check every invariant that must hold after it."""
    harness.ensure_ready()
    category.run(harness, value)
    watch.check()
    check_fresh_client(harness.port)
    check_world_finite(harness.server)


def run_category(
    harness: Harness,
    watch: ServerWatch,
    category: Category,
    max_examples: int,
    *,
    seed: int | None = None,
    on_input: Callable[[], None] | None = None,
    corpus: list[tuple[Category, Any]] | None = None,
    keep: int = 0,
) -> CategoryResult:
    """Run one category under hypothesis and count every input sent (shrinking included).

    Args:
        harness: the fuzzed server and its baseline.
        watch: the active :class:`ServerWatch`.
        category: what to send.
        max_examples: hypothesis ``max_examples``.
        seed: hypothesis seed; ``None`` derandomizes (the same inputs on every run).
        on_input: called after each input (resource sampling).
        corpus: the first ``keep`` inputs are appended here (for replays).
        keep: how many inputs to keep.
    """
    count = 0

    def body(value: Any) -> None:
        nonlocal count
        count += 1
        if corpus is not None and count <= keep:
            corpus.append((category, value))
        checked_run(harness, watch, category, value)
        if on_input is not None:
            on_input()

    test = given(category.strategy)(body)
    for value in reversed(category.regressions):
        test = example(value)(test)
    test = settings(
        max_examples=max_examples,
        deadline=None,
        derandomize=seed is None,
        database=None,
        suppress_health_check=list(HealthCheck),
        print_blob=False,
    )(test)
    if seed is not None:
        test = hypothesis_seed(seed)(test)
    failures = []
    start = time.perf_counter()
    try:
        test()
    except Exception as exc:  # noqa: BLE001 - reported with the falsifying example
        failures.extend(_describe(exc))
    seconds = time.perf_counter() - start
    return CategoryResult(category.key, category.title, count, failures, seconds, rss_bytes())


def _describe(exc: BaseException) -> list[str]:
    """One text per distinct failure: the error and hypothesis's falsifying example."""
    inner = getattr(exc, "exceptions", None)  # an ExceptionGroup: several distinct failures
    if isinstance(inner, (list, tuple)):
        return [text for sub in inner for text in _describe(sub)]
    notes = "\n".join(getattr(exc, "__notes__", ()))
    return [f"{type(exc).__name__}: {exc}\n{notes}".strip()]


def beamngpy_episode(port: int, name: str) -> None:
    """Drive one short episode with the real ``beamngpy`` client and check it went forward."""
    import beamngpy

    bng = beamngpy.BeamNGpy("127.0.0.1", port, quit_on_close=False, socket_timeout=5.0)
    bng.open(launch=False)
    try:
        scenario = beamngpy.Scenario("smallgrid", name)
        vehicle = beamngpy.Vehicle("probe", model="etk800")
        scenario.add_vehicle(vehicle, pos=(0.0, 0.0, 0.0), rot_quat=yaw_to_quat(0.0))
        scenario.make(bng)
        bng.settings.set_deterministic(20)
        bng.scenario.load(scenario)
        bng.scenario.start()
        vehicle.control(throttle=1.0)
        bng.control.step(4)
        vehicle.sensors.poll("state")
        velocity = vehicle.state["vel"]
        if not (all(math.isfinite(v) for v in velocity) and velocity[0] > 0.05):
            raise AssertionError(f"beamngpy episode after fuzzing did not move: {vehicle.state}")
        vehicle.disconnect()
    finally:
        bng.disconnect()


def run_campaign(
    scale: str = "default",
    *,
    seed: int | None = None,
    keys: tuple[str, ...] | None = None,
    multiplier: float = 1.0,
    replays: int = 3,
    progress: Callable[[CategoryResult], None] | None = None,
) -> CampaignReport:
    """Fuzz a fresh in-process stand-in with every category and measure its resources.

    Memory is judged on replays: the first inputs of every category are kept and sent again
    ``replays`` times after the campaign; the resident memory after each replay is recorded, so
    the growth between replays is the server's (hypothesis's own bookkeeping is not replayed).

    Args:
        scale: ``"default"`` (about 1,500 inputs) or ``"full"`` (more than 10,000).
        seed: hypothesis seed (``None``: derandomized, reproducible).
        keys: only these categories (default: all).
        multiplier: scales every ``max_examples``.
        replays: how often the kept inputs are replayed.
        progress: called after each category.
    """
    report = CampaignReport()
    server = StandInServer(world_config=FUZZ_WORLD)
    server.start()
    harness = Harness(server)
    corpus: list[tuple[Category, Any]] = []
    keep = 150 if scale == "full" else 40

    def sample() -> None:
        report.peak_threads = max(report.peak_threads, len(server_threads()))

    def episode(name: str) -> None:
        beamngpy_episode(harness.port, name)
        report.beamngpy_runs += 1

    try:
        with ServerWatch() as watch:
            harness.setup()
            # warm up torch, sockets, hypothesis and the beamngpy import before measuring
            run_category(harness, watch, CATEGORIES[1], 30, seed=12345)
            episode("probe_warmup")
            report.rss_start = rss_bytes()
            for category in CATEGORIES:
                if keys is not None and category.key not in keys:
                    continue
                count = category.full_examples if scale == "full" else category.default_examples
                result = run_category(
                    harness,
                    watch,
                    category,
                    max(1, round(count * multiplier)),
                    seed=seed,
                    on_input=sample,
                    corpus=corpus,
                    keep=keep,
                )
                report.results.append(result)
                if progress is not None:
                    progress(result)
                if scale == "full" or category.key == "unknown":
                    episode(f"probe_{category.key}")
            report.rss_end = rss_bytes()
            for _ in range(replays):
                for category, value in corpus:
                    checked_run(harness, watch, category, value)
                    report.replayed += 1
                gc.collect()
                report.replay_rss.append(rss_bytes())
            episode("probe_final")
            harness.close()
            wait_for(lambda: server_threads() == ["standin-accept-GE"], 2.0)
            report.threads_after = server_threads()
            report.connections_after = server.connection_count()
            with server.lock:
                report.vehicles_after = len(server.world.entries)
            report.unknown_recorded = len(server.unknown_requests)
            time.sleep(0.5)  # let torch's worker threads go to sleep
            before = cpu_seconds()
            time.sleep(1.0)
            report.idle_cpu = cpu_seconds() - before
            watch.check()
    finally:
        harness.close()
        server.stop()
    return report
