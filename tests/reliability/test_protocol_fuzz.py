"""Protocol fuzzing of the open stand-in server (issue 11): hypothesis against real sockets.

Six categories of malformed input (raw bytes and framing errors, known request types with bad
fields, unknown types, requests on the wrong socket, interleaved clients with resets, hostile
request sequences after a valid scenario setup) are sent to an in-process ``StandInServer`` on
port 0. After every input the server must still answer a fresh client, have no crashed thread
and hold a finite world; every reply must be a well-formed map with the echoed ``_id``; the real
``beamngpy`` client must still drive an episode; memory, threads and connections must return to
bounds once the clients leave.

The default test run sends a tenth of the default campaign (about 150 inputs); the ``slow``
tests send the default campaign's 1,500 derandomized inputs (reproducible, about 40 s) and more
than 10,000 (``tools/fuzz_standin.py`` runs the same campaign from the shell).
"""

from __future__ import annotations

import pytest
from fuzz_campaign import CATEGORIES, CampaignReport, run_campaign
from fuzz_strategies import GE_FIELDS, VE_FIELDS
from fuzz_wire import GE_REPLY_TYPES, VE_REPLY_TYPES

from gym_s3.beamng.standin.handlers import GE_HANDLERS
from gym_s3.beamng.standin.server import MAX_UNKNOWN_RECORDED
from gym_s3.beamng.standin.vehicle_handlers import VE_HANDLERS

pytestmark = pytest.mark.timeout(600)
#: resident memory the server may gain over three replays of the kept inputs [bytes]
REPLAY_GROWTH_LIMIT = 50 * 2**20
#: most CPU time the idle process may use in one second once every client left [s]
IDLE_CPU_LIMIT_S = 0.2


@pytest.fixture(scope="module")
def default_report() -> CampaignReport:
    """The default campaign (about 1,500 inputs), run once for the tests of this module."""
    pytest.importorskip("beamngpy")
    return run_campaign("default")


def _assert_bounded(report: CampaignReport) -> None:
    """Memory, threads, connections, vehicles, recorded unknowns and idle CPU within bounds."""
    growth_mb = report.replay_growth / 2**20
    assert report.replay_growth < REPLAY_GROWTH_LIMIT, f"memory grew {growth_mb:.1f} MB"
    assert report.threads_after == ["standin-accept-GE"], report.threads_after
    assert report.connections_after == 0
    assert report.vehicles_after == 0  # every vehicle released when its clients left
    assert report.unknown_recorded <= MAX_UNKNOWN_RECORDED
    assert report.idle_cpu < IDLE_CPU_LIMIT_S, f"{report.idle_cpu:.3f} s CPU in an idle second"


def test_oracle_tables_cover_the_dispatch_tables() -> None:
    """The fuzzer knows every request type the server dispatches (and no other), on both sockets.

    A handler added without a reply type and a field schema here would go unfuzzed.
    """
    assert set(GE_REPLY_TYPES) == set(GE_HANDLERS) == set(GE_FIELDS)
    assert set(VE_REPLY_TYPES) == set(VE_HANDLERS) == set(VE_FIELDS)


def test_smoke_campaign_keeps_the_server_alive_and_the_client_driving() -> None:
    """A tenth of the default campaign (about 150 inputs, every category) in the default run."""
    pytest.importorskip("beamngpy")
    report = run_campaign("default", multiplier=0.1, replays=1)
    failures = [f for r in report.results for f in r.failures]
    assert not failures, "\n\n".join(failures)
    assert {r.key for r in report.results} == {c.key for c in CATEGORIES}
    assert report.inputs >= 100 and report.beamngpy_runs == 3


@pytest.mark.slow  # the default campaign takes ~40 s (pytest -m slow runs it)
@pytest.mark.parametrize("key", [c.key for c in CATEGORIES])
def test_category_finds_no_failure(default_report: CampaignReport, key: str) -> None:
    """Every input of the category kept the server alive, correct and finite (none failed)."""
    (result,) = [r for r in default_report.results if r.key == key]
    (category,) = [c for c in CATEGORIES if c.key == key]
    assert result.inputs >= category.default_examples
    assert not result.failures, "\n\n".join(result.failures)


@pytest.mark.slow  # the default campaign takes ~40 s (pytest -m slow runs it)
def test_default_campaign_is_reproducible_size(default_report: CampaignReport) -> None:
    """The default run tries at least 1,500 inputs over the six categories."""
    assert default_report.inputs >= sum(c.default_examples for c in CATEGORIES) == 1500


@pytest.mark.slow  # the default campaign takes ~40 s (pytest -m slow runs it)
def test_resources_are_bounded_after_fuzzing(default_report: CampaignReport) -> None:
    """Memory stays flat over replays; threads, connections, vehicles return; nothing spins."""
    _assert_bounded(default_report)
    assert 0 < default_report.peak_threads < 40


@pytest.mark.slow  # the default campaign takes ~40 s (pytest -m slow runs it)
def test_real_client_drives_episodes_after_fuzzing(default_report: CampaignReport) -> None:
    """The real beamngpy client opened, made a scenario, stepped and polled a moving car."""
    assert default_report.beamngpy_runs == 3  # warm-up, after "unknown", after the replays


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_full_campaign_of_ten_thousand_inputs() -> None:
    """More than 10,000 inputs (fixed seed, other inputs than the default run) all pass."""
    pytest.importorskip("beamngpy")
    report = run_campaign("full", seed=20260511)
    assert report.inputs >= 10_000
    assert not report.failures, "\n\n".join(report.failures)
    _assert_bounded(report)
