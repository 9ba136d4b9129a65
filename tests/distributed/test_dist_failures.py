"""A failing or stalled rank ends the job with a clear message instead of a hang."""

from __future__ import annotations

import json

import pytest
from dist_harness import RankRun, run_ranks


def _outcome(run: RankRun, name: str) -> dict:
    """A JSON file a rank wrote."""
    return json.loads((run.results / name).read_text())


@pytest.mark.timeout(180)
def test_a_rank_that_raises_ends_every_rank_within_the_timeout(tmp_path, dist_dataset):
    """A rank that raises ends the job: no rank hangs.

    Rank 1 raises on its 3rd batch: it names itself and the cause on stderr; rank 0 stops with
    ``PeerFailedError`` naming its rank, within the 20 s collective timeout.
    """
    timeout = 20.0
    run = run_ranks("failing", tmp_path, args=(str(dist_dataset), "raise", timeout),
                    deadline_s=150.0)  # fmt: skip
    assert run.exitcodes == [1, 1], run.errors()
    fault = _outcome(run, "fault.json")
    o0, o1 = _outcome(run, "outcome_rank0.json"), _outcome(run, "outcome_rank1.json")
    assert o1["type"] == "ValueError" and "injected fault" in o1["message"]
    assert "[rank 1/2] failed: ValueError: injected fault" in run.stderr(1)
    assert o0["type"] == "PeerFailedError"
    assert "rank 0/2 stopped: a peer rank failed" in o0["message"]
    assert "20 s collective timeout" in o0["message"]
    assert o0["t"] - fault["t"] < timeout


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_a_rank_that_stalls_makes_the_others_time_out(tmp_path, dist_dataset):
    """A rank that stops answering makes the others' collectives time out.

    Rank 1 sleeps for 2 collective timeouts: rank 0 raises ``PeerFailedError`` about one timeout
    (5 s) after the stall began, and rank 1 then ends too instead of waiting forever.
    """
    timeout = 5.0
    run = run_ranks("failing", tmp_path, args=(str(dist_dataset), "stall", timeout),
                    deadline_s=150.0)  # fmt: skip
    assert None not in run.exitcodes and run.exitcodes[0] == 1, run.errors()
    fault = _outcome(run, "fault.json")
    o0 = _outcome(run, "outcome_rank0.json")
    assert o0["type"] == "PeerFailedError" and "5 s collective timeout" in o0["message"]
    assert timeout * 0.8 < o0["t"] - fault["t"] < timeout + 10.0
    assert _outcome(run, "outcome_rank1.json")["type"] == "PeerFailedError"
