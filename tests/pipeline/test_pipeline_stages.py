"""Resumable pipeline stages and the scorecard."""

from __future__ import annotations

import json

import pytest

from policies.pipeline.stages import MARKER, content_hash, run_stage
from policies.scorecard import build_scorecard, scorecard_markdown


def test_stage_runs_once_and_is_reused_while_inputs_are_unchanged(tmp_path):
    """A finished stage with the same inputs is skipped; other inputs run it again."""
    calls = []

    def body(folder):
        calls.append(folder)
        (folder / "out.txt").write_text("x")
        return {"n": len(calls)}

    first = run_stage(tmp_path, "s", {"a": 1}, body, log=lambda _: None)
    again = run_stage(tmp_path, "s", {"a": 1}, body, log=lambda _: None)
    other = run_stage(tmp_path, "s", {"a": 2}, body, log=lambda _: None)
    assert (first.skipped, again.skipped, other.skipped) == (False, True, False)
    assert again.result == {"n": 1} and other.result == {"n": 2} and len(calls) == 2
    assert first.key != other.key == content_hash({"stage": "s", "a": 2})


def test_interrupted_stage_is_cleared_and_rerun(tmp_path):
    """A stage that raised leaves no marker; the next run clears its folder and runs it again."""

    def crash(folder):
        (folder / "partial.bin").write_text("half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_stage(tmp_path, "s", {"a": 1}, crash, log=lambda _: None)
    assert not (tmp_path / "s" / MARKER).exists()
    out = run_stage(tmp_path, "s", {"a": 1}, lambda f: {"ok": True}, log=lambda _: None)
    assert not out.skipped and not (tmp_path / "s" / "partial.bin").exists()
    assert json.loads((tmp_path / "s" / MARKER).read_text())["result"] == {"ok": True}


def test_an_interrupted_stage_keeps_its_finished_sub_stages(tmp_path):
    """An interrupted stage rerun with the same inputs reuses its finished sub-stages.

    One trained policy of two is kept, the rest of the folder is cleared; with other inputs
    nothing is reused.
    """
    calls: list[str] = []

    def sub(name, fail=False):
        def body(folder):
            calls.append(name)
            (folder / "weights.bin").write_text(name)
            if fail:
                raise KeyboardInterrupt
            return {"policy": name}

        return body

    def stage(fail_second):
        def body(folder):
            (folder / "scratch.tmp").write_text("x")
            a = run_stage(folder, "a", {"p": 1}, sub("a"), log=lambda _: None).result
            b = run_stage(folder, "b", {"p": 2}, sub("b", fail_second), log=lambda _: None).result
            return {"a": a, "b": b}

        return body

    with pytest.raises(KeyboardInterrupt):
        run_stage(tmp_path, "train", {"x": 1}, stage(True), log=lambda _: None)
    assert calls == ["a", "b"]
    out = run_stage(tmp_path, "train", {"x": 1}, stage(False), log=lambda _: None)
    assert calls == ["a", "b", "b"]  # "a" was reused, "b" ran again
    assert (tmp_path / "train" / "a" / "weights.bin").read_text() == "a"  # kept from run 1
    assert out.result == {"a": {"policy": "a"}, "b": {"policy": "b"}}
    run_stage(tmp_path, "train", {"x": 2}, stage(False), log=lambda _: None)
    assert calls == ["a", "b", "b", "a", "b"]  # other inputs: nothing reused


def _open_loop(errors: dict[str, float]) -> dict:
    return {
        "results": {b: {"all": {"position": {"20": e, "60": 3 * e}}} for b, e in errors.items()}
    }


def _runs(completion: float, cte: float) -> list[dict]:
    end = "completed" if completion >= 1.0 else "off_track"
    return [{"metrics": {"completion": completion, "cte_mean": cte}, "terminated_by": end}]


def test_scorecard_ranks_accuracy_and_policy_quality_separately():
    """The most accurate backend need not give the best policy; the card says so."""
    rows = build_scorecard(
        _open_loop({"bicycle": 0.4, "ddm": 0.05, "trans": 0.03}),
        {"bicycle": _runs(0.2, 2.0), "ddm": _runs(1.0, 0.1), "trans": _runs(0.6, 0.3)},
    )
    by = {r["backend"]: r for r in rows}
    assert by["trans"]["rank_accuracy"] == 1 and by["ddm"]["rank_policy"] == 1
    assert by["bicycle"]["failed"] == 1 and by["ddm"]["completed"] == 1
    assert "rank the backends differently" in scorecard_markdown(rows)


def test_scorecard_leaves_out_backends_without_an_evaluated_policy():
    """Backends whose policy was not evaluated get no row (nothing to compare)."""
    rows = build_scorecard(_open_loop({"bicycle": 0.4, "ddm": 0.05}), {"ddm": _runs(1.0, 0.1)})
    assert [r["backend"] for r in rows] == ["ddm"]
    assert "no ranking to compare" in scorecard_markdown(rows)
