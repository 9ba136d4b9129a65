"""Lap tables: the scripted expert's row, each policy's ratio to it, and the lap time limit."""

from __future__ import annotations

import json

import numpy as np
import pytest
from policy_helpers import untrained_policy

from gym_s3.cli import main
from policies.checkpoint import Policy
from policies.evaluate import RunResult, compare_with_expert
from policies.evaluate_distilled import evaluate_distilled_laps
from policies.report import runs_to_plot


@pytest.fixture
def policy(tmp_path) -> Policy:
    """An untrained bicycle policy saved to disk and loaded back (the real checkpoint path)."""
    return untrained_policy(tmp_path)


def _row(driver: str, surface: str, end: str, cte: float, steps: float) -> RunResult:
    empty = np.zeros(0)
    metrics = {"cte_mean": cte, "cte_max": 2 * cte, "steps": steps}
    return RunResult("S3BeamNG-v0", {"surface": surface}, metrics, end, np.zeros((0, 2)),
                     empty, empty, empty, empty, driver=driver)  # fmt: skip


def test_ratios_pair_each_policy_row_with_the_expert_on_the_same_lap():
    """Ratios are policy / expert on the same env and lap; lap time only when both completed."""
    rows = compare_with_expert([
        _row("expert", "ice", "completed", 0.2, 100.0),
        _row("policy", "ice", "completed", 0.3, 130.0),
        _row("expert", "snow", "completed", 0.5, 80.0),
        _row("policy", "snow", "off_track", 1.0, 40.0),
        _row("policy", "gravel", "completed", 1.0, 40.0),  # no expert lap: no ratios
    ])  # fmt: skip
    assert rows[1].vs_expert == pytest.approx({"cte_mean": 1.5, "cte_max": 1.5, "lap_time": 1.3})
    assert rows[3].vs_expert["cte_mean"] == pytest.approx(2.0)
    assert rows[3].vs_expert["lap_time"] is None
    assert rows[0].vs_expert == {} and rows[4].vs_expert == {}


def test_distilled_lap_table_has_the_expert_row_on_the_same_lap(policy):
    """The expert drives the same lap first (same layout and task); the expert follows the line."""
    results = evaluate_distilled_laps(policy, surfaces=("asphalt",), ice_patches=(2,),
                                      max_steps=60, progress=False)  # fmt: skip
    expert, pol = results
    assert (expert.driver, pol.driver) == ("expert", "policy")
    assert expert.condition == pol.condition and expert.layout == pol.layout
    assert np.allclose(expert.trajectory[0], pol.trajectory[0], atol=0.5)  # same standing start
    assert expert.metrics["steps"] == pol.metrics["steps"] == 60
    assert expert.metrics["cte_max"] < 0.5 and expert.s[-1] > 5.0  # it drives along the line
    assert set(pol.vs_expert) == {"cte_mean", "cte_max", "lap_time"}
    ref = expert.metrics["cte_max"]  # exactly 0 on this straight start in the bicycle model
    expected = pol.metrics["cte_max"] / ref if ref > 0 else None
    assert pol.vs_expert["cte_max"] == (pytest.approx(expected) if expected else None)


def test_cli_time_limit_ends_laps_as_time_limit_with_expert_rows(policy, tmp_path):
    """``--time-limit 1.5`` ends every lap after 30 steps as ``time_limit``; JSON has both rows."""
    out = tmp_path / "eval"
    rc = main(["evaluate", str(policy.path), "--env", "distilled", "--surfaces", "ice",
               "--ice-patches", "0", "--time-limit", "1.5", "--out", str(out)])  # fmt: skip
    assert rc == 0
    runs = json.loads((out / "results.json").read_text())["runs"]
    assert [r["driver"] for r in runs] == ["expert", "policy"]
    assert all(r["terminated_by"] == "time_limit" and r["metrics"]["steps"] == 30 for r in runs)
    assert runs[1]["vs_expert"]["lap_time"] is None  # neither lap completed
    table = (out / "results.md").read_text()
    assert "lap time / expert" in table and "| expert |" in table
    assert (out / "trajectory_ice_p0_expert.png").exists()
    assert (out / "trajectory_ice_p0.png").exists()


def test_plot_choice_keeps_every_driver_of_a_failed_lap():
    """``failed``: every driver's run of a lap that one driver did not complete; ``none``: none."""
    rows = [
        _row("expert", "ice", "completed", 0.2, 100.0),
        _row("policy", "ice", "off_track", 0.3, 50.0),
        _row("expert", "snow", "completed", 0.5, 80.0),
        _row("policy", "snow", "completed", 1.0, 90.0),
    ]
    assert runs_to_plot(rows, "failed") == [True, True, False, False]
    assert runs_to_plot(rows, "all") == [True] * 4
    assert runs_to_plot(rows, "none") == [False] * 4
    with pytest.raises(ValueError, match="plots must be one of"):
        runs_to_plot(rows, "some")


def test_cli_plots_none_writes_the_tables_without_plots(policy, tmp_path):
    """``--plots none``: results.json and results.md, not one PNG."""
    out = tmp_path / "eval"
    rc = main(["evaluate", str(policy.path), "--env", "distilled", "--surfaces", "ice",
               "--ice-patches", "0", "--time-limit", "1.5", "--plots", "none",
               "--out", str(out)])  # fmt: skip
    assert rc == 0
    assert (out / "results.json").is_file() and (out / "results.md").is_file()
    assert not list(out.glob("*.png"))


def test_scorecard_policy_quality_leaves_out_the_expert_and_counts_stalls_as_failures():
    """Expert reference rows do not count for the policy; a stalled lap is a failed one."""
    from policies.scorecard import policy_quality

    rows = [
        _row("expert", "ice", "completed", 0.1, 100.0),
        _row("policy", "ice", "stalled", 0.4, 90.0),
    ]
    for r in rows:
        r.metrics["completion"] = 1.0 if r.driver == "expert" else 0.3
    quality = policy_quality([r.to_json() for r in rows])
    assert quality["runs"] == 1 and quality["failed"] == 1 and quality["completed"] == 0
    assert quality["cte_mean"] == pytest.approx(0.4)


def test_lap_plots_break_the_line_where_the_arc_length_wraps():
    """A completed lap ends past the start line (s back to ~0): no line across the plot there."""
    from policies.report import lap_traces

    # over the start line, rolled back over it (a forward jump of the wrapped s), over it again
    s = np.array([3290.0, 3300.0, 0.4, 1.0, 3299.5, 0.2])
    actions = np.stack([np.linspace(-1.0, 1.0, 6), np.linspace(0.5, -0.5, 6)], axis=-1)
    run = RunResult("x", {}, {}, "completed", np.zeros((6, 2)), s * 0.01, s, s + 1.0, s + 2.0,
                    actions=actions)  # fmt: skip
    lap = lap_traces(run)
    assert np.flatnonzero(np.isnan(lap["s"])).tolist() == [2, 5, 7]
    for key in ("cte", "speed", "target"):
        kept = lap[key][~np.isnan(lap["s"])]
        assert np.isnan(lap[key][[2, 5, 7]]).all() and np.allclose(kept, getattr(run, key))
    # the actions break with them: steer is column 0, accel column 1
    for key, column in (("steer", 0), ("accel", 1)):
        kept = lap[key][~np.isnan(lap["s"])]
        assert np.isnan(lap[key][[2, 5, 7]]).all() and np.allclose(kept, actions[:, column])
    # small backward steps (projection noise, a car sliding back) are not wraps
    noisy = np.array([100.0, 100.4, 99.9, 101.0])
    kept = lap_traces(RunResult("x", {}, {}, "off_track", np.zeros((4, 2)), *[noisy] * 4))
    assert not np.isnan(kept["s"]).any()
    empty = lap_traces(RunResult("x", {}, {}, "off_track", np.zeros((0, 2)), *[np.zeros(0)] * 4))
    assert all(v.shape == (0,) for v in empty.values())
    assert "steer" not in kept and "steer" not in empty  # runs without recorded actions


def test_results_saved_before_a_metric_existed_still_make_a_table():
    """A run without ``corner_offset_mean`` (older results.json) shows ``-`` in its column."""
    from policies.evaluate import METRICS, RunResult
    from policies.report import markdown_table

    old = {k: 1.0 for k in METRICS if k != "corner_offset_mean"}
    new = {**old, "corner_offset_mean": 0.25}
    empty = np.zeros(0)
    arrays = dict(trajectory=np.zeros((0, 2)), cte=empty, s=empty, speed=empty, target=empty)
    runs = [RunResult(env="S3BeamNG-v0", driver=d, condition={"surface": "snow"}, metrics=m,
                      terminated_by="completed", **arrays)
            for d, m in (("old", old), ("new", new))]  # fmt: skip
    rows = markdown_table(runs).splitlines()[2:]
    column = list(METRICS).index("corner_offset_mean") + 3
    assert [row.split(" | ")[column].strip(" |") for row in rows] == ["-", "+0.250"]


def test_distilled_lap_tables_say_when_a_policy_trained_in_other_dynamics():
    """The shipped ddm trained in ``ddm:ice``: a note names its models; dytr needs none."""
    from policies.checkpoint import resolve_policy
    from policies.evaluate_cli import training_dynamics_notes

    named = [resolve_policy("ddm"), resolve_policy("dytr")]
    (note,) = training_dynamics_notes(named, None)
    assert note.startswith("note: ddm trained in 3 dynamics model(s) (ddm:ice/s0, ddm:ice/s1,")
    assert "drive the shipped ddm model" in note
    assert training_dynamics_notes(named[:1], "trans") == []  # driven in another backend


def test_every_backend_of_a_distilled_table_gets_its_own_expert_row(policy, tmp_path):
    """Policies of two backends: the expert drives each backend's laps, so every row has ratios.

    The expert's laps differ per dynamics model; a table that drove it in the first backend
    only left the other policies without a ratio ("expert did not finish").
    """
    other = save_policy_as(policy, tmp_path / "pol_ddm", backend="ddm")
    # the batched path, and one lap at a time (with GIFs); every file of both experts is kept
    for extra in (["--plots", "none"], ["--plots", "all", "--gif-every", "5"]):
        out = tmp_path / f"eval{len(extra)}"
        rc = main(["evaluate", str(policy.path), str(other), "--env", "distilled",
                   "--surfaces", "ice", "--ice-patches", "0", "--max-steps", "20",
                   "--out", str(out), *extra])  # fmt: skip
        assert rc == 0
        assert "| expert (S3Distilled-v0/ddm) |" in (out / "results.md").read_text()
        if "all" in extra:
            assert len(list(out.glob("trajectory_*_expert_*.png"))) == 2
            assert len(list(out.glob("run_*_expert_*.gif"))) == 2
        runs = json.loads((out / "results.json").read_text())["runs"]
        envs = {r["driver"]: r["env"] for r in runs if r["driver"] != "expert"}
        experts = [r["env"] for r in runs if r["driver"] == "expert"]
        assert sorted(experts) == sorted(envs.values()) and len(set(experts)) == 2
        for r in runs:  # the ratios exist (a ratio to an expert value of exactly 0 is None)
            assert r["driver"] == "expert" or set(r["vs_expert"]) == {"cte_mean", "cte_max",
                                                                      "lap_time"}  # fmt: skip


def save_policy_as(policy: Policy, stem, *, backend: str):
    """The same actor saved as a policy of another backend; returns its sidecar path."""
    from policies.checkpoint import save_policy

    return save_policy(stem, policy.actor, backend=backend, obs_mode=policy.obs_mode, training={})
