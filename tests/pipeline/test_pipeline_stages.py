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


def _runs(completion: float, cte: float, spread: float = 0.02, n: int = 4) -> list[dict]:
    """``n`` runs whose completion and cte scatter by about ``spread`` around the given means."""
    offsets = [spread * (k - (n - 1) / 2) for k in range(n)]
    end = "completed" if completion >= 1.0 else "off_track"
    return [{"metrics": {"completion": completion + o, "cte_mean": cte + o}, "terminated_by": end}
            for o in offsets]  # fmt: skip


def test_scorecard_ranks_accuracy_and_policy_quality_separately():
    """The most accurate backend need not give the best policy; the card says so."""
    rows = build_scorecard(
        _open_loop({"bicycle": 0.4, "ddm": 0.05, "trans": 0.03}),
        {"bicycle": _runs(0.2, 2.0), "ddm": _runs(0.98, 0.1), "trans": _runs(0.6, 0.3)},
        budgets={"ddm": "1.2 M frames, 300 s, this run"},
    )
    by = {r["backend"]: r for r in rows}
    assert by["trans"]["rank_accuracy"] == 1 and by["ddm"]["rank_policy"] == 1
    assert by["bicycle"]["failed"] == 4 and by["ddm"]["runs"] == 4
    assert by["ddm"]["completion_ci"] < 0.05
    text = scorecard_markdown(rows)
    assert "rank some backends differently" in text and "ddm over trans" in text
    assert "1.2 M frames, 300 s, this run" in text and "±" in text


def test_scorecard_does_not_rank_noise():
    """0.3225 vs 0.3208 completion with run-to-run scatter of 0.05: same rank, no conclusion."""
    rows = build_scorecard(
        _open_loop({"trans": 0.03, "dytr": 0.05}),
        {"trans": _runs(0.3225, 1.0, spread=0.05), "dytr": _runs(0.3208, 0.9, spread=0.05)},
    )
    assert {r["rank_policy"] for r in rows} == {1}
    text = scorecard_markdown(rows)
    assert "cannot be told apart" in text and "rank some backends differently" not in text
    single = {"trans": _runs(0.9, 0.1, n=1), "dytr": _runs(0.1, 2.0, n=1)}
    one_run = build_scorecard(_open_loop({"trans": 0.03, "dytr": 0.05}), single)
    assert {r["rank_policy"] for r in one_run} == {1}, "one run per backend gives no interval"
    copies = {"trans": _runs(0.9, 0.1, spread=0.0), "dytr": _runs(0.1, 2.0, spread=0.0)}
    repeated = build_scorecard(_open_loop({"trans": 0.03, "dytr": 0.05}), copies)
    assert {r["runs"] for r in repeated} == {1}, "identical (deterministic) runs count once"
    assert {r["rank_policy"] for r in repeated} == {1}


def test_scorecard_leaves_out_backends_without_an_evaluated_policy():
    """Backends whose policy was not evaluated get no row (nothing to compare)."""
    rows = build_scorecard(_open_loop({"bicycle": 0.4, "ddm": 0.05}), {"ddm": _runs(0.99, 0.1)})
    assert [r["backend"] for r in rows] == ["ddm"]
    assert "no ranking to compare" in scorecard_markdown(rows)


def test_report_marks_unreached_patches_captions_figures_and_renders_markdown(tmp_path):
    """Patch runs equal to the plain lap are flagged; figures get captions; HTML has tables."""
    import json

    from policies.pipeline.config import VALIDATION_SIMULATORS
    from policies.pipeline.report import _policy_table, _to_html, figure_caption

    def run(patches: int, completion: float, seed: int | None = None) -> dict:
        cond = {"track": "putnam", "surface": "asphalt", "ice_patches": patches}
        if seed is not None:
            cond["seed"] = seed
        metrics = {"completion": completion, "cte_mean": 0.5, "cte_max": 1.0,
                   "heading_error_mean": 0.01, "speed_error_mean": 1.0,
                   "action_smoothness": 0.01, "off_track_steps": 0.0}  # fmt: skip
        return {"condition": cond, "metrics": metrics, "terminated_by": "max_steps"}

    path = tmp_path / "results.json"
    cornering = run(4, 0.25, 1)
    cornering["metrics"]["corner_offset_mean"] = 0.042
    path.write_text(json.dumps({"runs": [run(0, 0.32), run(4, 0.32, 0), cornering]}))
    table = _policy_table({"ddm": str(path)})
    # the signed corner offset where the run has it, "-" in results saved before the metric
    assert "| 1.00 | +0.042 | 0.010 |" in table and "| 1.00 | - | 0.010 |" in table
    assert table.count("(no patch reached)") == 1 and "1 run(s) with ice patches" in table
    assert "asphalt +4 ice (seed 1) |" in table
    caption = figure_caption("evaluate/ddm/errors_asphalt_p4_s1.png")
    assert caption == ("Policy 'ddm' in S3BeamNG-v0 on the open stand-in (asphalt, 4 ice patches, "
                       "patch seed 1): cross-track error, speed against the target and the "
                       "driver's steering and pedal along the lap.")  # fmt: skip
    # laps driven in the batched vehicle model (the quick preset) say so, not S3BeamNG-v0
    batched = figure_caption("evaluate/ddm/trajectory_ice_p0.png",
                             VALIDATION_SIMULATORS["model"][1])  # fmt: skip
    assert batched.startswith("Policy 'ddm' in the open stand-in's vehicle model, batched "
                              "in-process (ice, no ice patches): driven line")  # fmt: skip
    page = _to_html("# T\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n![x](x.png)\n\n*Figure 1. c*\n")
    assert "<table>" in page and "<td>1</td>" in page and '<img src="x.png"' in page
    assert "<em>Figure 1. c</em>" in page


def test_the_report_counts_every_training_of_a_shipped_ensemble():
    """A shipped ensemble's budget is K trainings (frames per member, wall time summed)."""
    from gym_s3.checkpoints import read_sidecar
    from policies.checkpoint import shipped_policy
    from policies.pipeline.report import training_budget

    path = str(shipped_policy("ddm"))
    members = read_sidecar(path)["meta"]["member_training"]
    minutes = sum(m["wall_s"] for m in members) / 60
    text = training_budget("ddm", {"policies": {"ddm": path}})
    assert text == f"{len(members)} x 48.0 M frames, {minutes:.0f} min in all, shipped ensemble"
    single = training_budget("bicycle", {"policies": {"bicycle": str(shipped_policy("bicycle"))}})
    assert single.endswith(", shipped") and " x " not in single


def test_swapping_a_shipped_checkpoint_reruns_the_stages_that_read_it(tmp_path, monkeypatch):
    """A shipped policy or dynamics checkpoint replaced at the same path is never reused stale.

    The stage bodies are recorders; the real ``run_pipeline`` builds the keys. A new policy
    sidecar or weights file re-runs train and evaluate only, a new dynamics sidecar everything
    after the data.
    Fails if a stage's inputs leave out the identity of the shipped files it reads.
    """
    import policies.checkpoint
    from gym_s3.dynamics import io as dynamics_io
    from policies.pipeline import run as pipeline_run
    from policies.pipeline import steps

    policy_dir, dynamics_dir = tmp_path / "policies", tmp_path / "dynamics"
    policy_dir.mkdir()
    dynamics_dir.mkdir()
    monkeypatch.setattr(policies.checkpoint, "POLICY_ASSETS", policy_dir)
    monkeypatch.setattr(dynamics_io, "ASSET_DIR", dynamics_dir)
    (policy_dir / "ddm.json").write_text('{"weights": {"sha256": "aa"}}')
    (dynamics_dir / "trans.json").write_text('{"weights": {"sha256": "bb"}}')
    ran: list[str] = []
    for stage in ("data", "distill", "train", "evaluate", "speedup"):
        monkeypatch.setattr(steps, f"stage_{stage}",
                            lambda *a, stage=stage, **k: ran.append(stage) or {})  # fmt: skip
    monkeypatch.setattr(pipeline_run, "write_report", lambda *a, **k: tmp_path / "report.md")
    config = pipeline_run.preset("tiny", eval_policies=("bicycle", "ddm"))
    out = tmp_path / "run"

    def stages_run() -> list[str]:
        ran.clear()
        pipeline_run.run_pipeline(config, out, log=lambda _: None)
        return list(ran)

    assert stages_run() == ["data", "distill", "train", "evaluate", "speedup"]
    assert stages_run() == []
    (policy_dir / "ddm.json").write_text('{"weights": {"sha256": "cc"}}')
    assert stages_run() == ["train", "evaluate"]
    (policy_dir / "ddm.safetensors").write_bytes(b"other weights")  # the weights alone
    assert stages_run() == ["train", "evaluate"]
    (dynamics_dir / "trans.json").write_text('{"weights": {"sha256": "dd"}}')
    assert stages_run() == ["distill", "train", "evaluate", "speedup"]
    assert stages_run() == []
