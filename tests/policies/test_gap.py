"""``s3 gap``: the same laps in S3Distilled-v0 and S3BeamNG-v0 (stand-in), and their ratio."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("beamngpy")

from policy_helpers import untrained_policy  # noqa: E402

from gym_s3.cli import main  # noqa: E402
from gym_s3.errors import ConfigError  # noqa: E402
from policies.checkpoint import Policy  # noqa: E402
from policies.gap import gap_metrics, measure_gap  # noqa: E402
from policies.gap_report import write_gap  # noqa: E402
from policies.scorecard import gap_markdown  # noqa: E402

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def policy(tmp_path) -> Policy:
    """An untrained bicycle policy saved to disk and loaded back (the real checkpoint path)."""
    return untrained_policy(tmp_path)


def test_gap_drives_the_same_lap_in_both_simulators_and_writes_the_ratio(policy, tmp_path):
    """One short lap with 2 ice patches: same start and layout; ratio = high-fi / distilled."""
    report, pairs = measure_gap(policy, surfaces=("snow",), ice_patches=(2,), seed=3,
                                max_steps=40, fast=False, progress=False)  # fmt: skip
    (((distilled,), highfi),) = pairs
    assert distilled.env == "S3Distilled-v0/bicycle"
    assert highfi.env == "S3BeamNG-v0 (open stand-in)"
    assert distilled.layout == highfi.layout and len(distilled.layout.bands) == 2
    assert np.allclose(distilled.trajectory[0], highfi.trajectory[0], atol=0.5)
    assert len(distilled.trajectory) == len(highfi.trajectory) == 40
    run = report["runs"][0]
    assert run["condition"] == {"track": "putnam", "surface": "snow", "ice_patches": 2}
    assert report["simulator"].startswith("open stand-in")
    for key in ("cte_mean", "cte_max", "progress_120s"):
        assert run["ratio"][key] == pytest.approx(run["highfi"][key] / run["distilled"][key])
    assert run["ratio"]["lap_time"] is None  # neither lap completed in 40 steps
    assert run["highfi"]["progress_120s"] == pytest.approx(
        (highfi.s[-1] - highfi.s[0]) / highfi.reference.length
    )
    files = write_gap(report, pairs, tmp_path / "gap")
    saved = json.loads((tmp_path / "gap" / "gap.json").read_text())
    assert saved["runs"][0]["ratio"] == run["ratio"]
    md = (tmp_path / "gap" / "gap.md").read_text()
    assert "open stand-in" in md and "| snow +2 ice |" in md
    assert (tmp_path / "gap" / "gap_snow_p2.png") in files
    card = gap_markdown({"bicycle": saved})
    assert "| bicycle | policy | open stand-in" in card
    assert f"{run['ratio']['cte_mean']:.2f}" in card


def test_gap_metrics_lap_time_only_for_completed_laps_and_progress_at_120_s(policy):
    """lap_time is the driven time of a completed lap; progress_120s reads s at 120 s."""
    from gym_s3.tracks.registry import cached_track
    from policies.evaluate import RunResult

    putnam = cached_track("putnam")
    s = np.linspace(0.0, putnam.length * 2.0, 3000) % putnam.length  # wraps before 120 s
    empty = np.zeros(3000)
    done = RunResult("x", {}, {"cte_mean": 0.1, "cte_max": 0.2, "completion": 1.0, "steps": 3000,
                               "speed_error_mean": 0.0, "action_smoothness": 0.0},
                     "completed", np.zeros((3000, 2)), empty, s, empty, empty,
                     reference=putnam)  # fmt: skip
    m = gap_metrics(done)
    assert m["lap_time"] == pytest.approx(150.0)
    assert m["progress_120s"] == pytest.approx(2.0 * 2399 / 2999, rel=1e-6)
    done.terminated_by = "off_track"
    assert gap_metrics(done)["lap_time"] is None


@pytest.mark.slow
def test_cli_gap_writes_its_files(policy, tmp_path):
    """``s3 gap`` end to end (compiled stand-in physics, as users run it)."""
    out = tmp_path / "gap"
    rc = main(["gap", str(policy.path), "--surfaces", "ice", "--ice-patches", "0",
               "--max-steps", "30", "--out", str(out)])  # fmt: skip
    assert rc == 0
    assert json.loads((out / "gap.json").read_text())["runs"][0]["condition"]["surface"] == "ice"
    assert (out / "gap_ice_p0.png").stat().st_size > 0


def test_batched_high_fidelity_side_gives_the_stand_in_rows(policy):
    """``--simulator model``: the batched vehicle model gives the stand-in's high-fidelity side.

    Same laps, float64 physics on both sides: equal trajectories, metrics and ratios.
    """
    laps = dict(surfaces=("snow",), ice_patches=(2,), seed=3, max_steps=40, fast=False,
                progress=False)  # fmt: skip
    report, pairs = measure_gap(policy, **laps)
    batched_report, batched_pairs = measure_gap(policy, batched=True, **laps)
    ((_, highfi),), ((_, model),) = pairs, batched_pairs
    assert "batched in-process" in batched_report["simulator"]
    assert np.allclose(model.trajectory, highfi.trajectory, atol=1e-3)
    assert model.metrics == pytest.approx(highfi.metrics, rel=1e-5, abs=1e-6)
    assert batched_report["runs"][0]["ratio"] == pytest.approx(report["runs"][0]["ratio"])
    with pytest.raises(Exception, match="stand-in's physics"):
        measure_gap(policy, batched=True, standin=False, **laps)


def test_cli_gap_takes_shipped_names_and_names_them_on_a_typo(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``s3 gap ddm`` resolves the shipped policy like ``s3 evaluate``; a typo lists the names."""
    import policies.gap as gap

    seen: dict[str, dict] = {}

    def fake_measure(policy: Policy, **_: object) -> None:
        seen["meta"] = policy.meta
        raise SystemExit(0)

    monkeypatch.setattr(gap, "measure_gap", fake_measure)
    with pytest.raises(SystemExit):
        main(["gap", "ddm", "--surfaces", "ice", "--out", "unused"])
    assert seen["meta"]["backend"] == "ddm"
    assert main(["gap", "dddm", "--surfaces", "ice"]) != 0
    assert "bicycle, ddm, trans, dytr, oracle" in capsys.readouterr().err


def _entry(track: str, distilled_end: str, highfi_end: str) -> dict:
    return {"condition": {"track": track, "surface": "ice", "ice_patches": 0},
            "distilled": {"end": distilled_end}, "highfi": {"end": highfi_end}}  # fmt: skip


def test_gap_ends_name_the_laps_the_distilled_env_let_through():
    """Optimistic: completed distilled, failed high-fi; pessimistic the reverse; agree: same end.

    Two different failures (stalled / off_track) do not agree; neither is optimistic.
    """
    from policies.gap_bar import ends_line, gap_ends

    runs = [_entry("town:1", "completed", "stalled"), _entry("town:2", "completed", "completed"),
            _entry("town:3", "off_track", "completed"), _entry("town:4", "stalled", "stalled"),
            _entry("town:5", "stalled", "off_track")]  # fmt: skip
    ends = gap_ends(runs)
    assert ends["laps"] == 5 and ends["agree"] == 2
    assert ends["optimistic"] == ["town:1: ice"]
    assert ends["pessimistic"] == ["town:3: ice"]
    assert "completed 1 the high-fidelity side failed" in ends_line(ends)


def test_gap_over_several_tracks_is_one_report(policy):
    """``measure_gap_tracks``: every condition on every track, runs in track order, ends counted."""
    from policies.gap import measure_gap_tracks

    report, pairs = measure_gap_tracks(policy, ["putnam", "procedural:201"], surfaces=("ice",),
                                       ice_patches=(0,), max_steps=20, batched=True, fast=False,
                                       progress=False)  # fmt: skip
    assert [r["condition"]["track"] for r in report["runs"]] == ["putnam", "procedural:201"]
    assert len(pairs) == 2 and report["ends"]["laps"] == 2
    assert report["ends"]["agree"] == 2  # 20 steps: both sides end by the step cap


def test_the_expert_gap_drives_the_scripted_expert_on_both_sides(policy):
    """``policy=None``: the expert drives both sides, as its rows in the two lap tables.

    Its distilled run is the expert row of ``evaluate_distilled_laps`` on the named backend and
    its high-fidelity run the expert row of the batched vehicle model, lap for lap.
    """
    from policies.evaluate_distilled import evaluate_distilled_laps
    from policies.evaluate_model import evaluate_model, lap_grid

    laps = dict(surfaces=("ice",), ice_patches=(0,), seed=3, max_steps=40, progress=False)
    report, (((distilled,), highfi),) = measure_gap(None, backend="bicycle", batched=True,
                                                 fast=False, **laps)  # fmt: skip
    assert report["policy"] == report["driver"] == "expert"
    assert distilled.driver == highfi.driver == "expert"
    assert distilled.env == "S3Distilled-v0/bicycle"
    expert_distilled = evaluate_distilled_laps(policy, backend="bicycle", **laps)[0]
    assert expert_distilled.driver == "expert"
    assert np.array_equal(distilled.trajectory, expert_distilled.trajectory)
    grid = lap_grid(["putnam"], ("ice",), (0,))
    expert_model = evaluate_model([], grid, seed=3, max_steps=40, fast=False, progress=False)[0]
    assert np.array_equal(highfi.trajectory, expert_model.trajectory)
    with pytest.raises(ConfigError, match="--backend"):
        measure_gap(None, batched=True, fast=False, **laps)
    assert "| bicycle | expert | open stand-in" in gap_markdown({"bicycle": report})


def test_cli_gap_expert_needs_no_checkpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    """``s3 gap expert --backend ddm`` passes no policy and the backend through."""
    import policies.gap as gap

    seen: dict[str, object] = {}

    def fake_measure(policy: Policy | None, **options: object) -> None:
        seen.update(policy=policy, backend=options["backend"])
        raise SystemExit(0)

    monkeypatch.setattr(gap, "measure_gap", fake_measure)
    with pytest.raises(SystemExit):
        main(["gap", "expert", "--backend", "ddm", "--surfaces", "ice", "--out", "unused"])
    assert seen == {"policy": None, "backend": "ddm"}


def _ddm_policy(folder, training: dict) -> Policy:
    """An untrained ddm-backend policy whose record holds ``training``."""
    import torch

    from gym_s3.spec import observation_size
    from policies.checkpoint import load_policy, save_policy
    from policies.networks import ActorNet, RunningNorm

    torch.manual_seed(0)
    size = observation_size("default")
    actor = ActorNet(RunningNorm(size), size, (16, 16))
    return load_policy(save_policy(folder / "ddm_pol", actor, backend="ddm", obs_mode="default",
                                   training=training))  # fmt: skip


def test_the_distilled_side_is_the_env_the_policy_trained_in(tmp_path):
    """Default: the models its record names (by hash); a named checkpoint or backend overrides."""
    from gym_s3 import dynamics
    from gym_s3.dynamics.io import expand_checkpoints
    from policies.gap import distilled_models

    ice = expand_checkpoints("ddm:ice")
    trained = _ddm_policy(tmp_path, {"dynamics_sources": [dynamics.source(m) for m in ice[:2]]})
    assert distilled_models(trained, "ddm", None) == ice[:2]
    assert distilled_models(trained, "ddm", "ddm") == ("ddm",)
    assert distilled_models(trained, "ddm", ["ddm:ice"]) == ice
    assert distilled_models(trained, "trans", None) == ("trans",)  # another backend: its default
    assert distilled_models(None, "dytr", None) == ("dytr",)  # the expert
    untraceable = _ddm_policy(tmp_path, {"dynamics_checkpoint": str(tmp_path / "gone")})
    assert distilled_models(untraceable, "ddm", None) == ("ddm",)


def test_an_ensemble_distilled_side_drives_each_lap_in_every_model_and_averages(tmp_path):
    """Two models: two runs per lap, each the single-model run; metrics their mean; sources."""
    policy = _ddm_policy(tmp_path, {})
    laps = dict(surfaces=("ice",), ice_patches=(0,), seed=3, max_steps=40, batched=True,
                fast=False, progress=False)  # fmt: skip
    report, (((first, second), highfi),) = measure_gap(policy, checkpoint="ddm:ice/s0 ddm:ice/s2"
                                                       .split(), **laps)  # fmt: skip
    single, (((alone,), _),) = measure_gap(policy, checkpoint="ddm:ice/s2", **laps)
    assert report["distilled"] == "S3Distilled-v0/ddm (ensemble of 2 models)"
    assert single["distilled"] == "S3Distilled-v0/ddm"
    assert [d["sha256"] for d in report["dynamics"]][1] == single["dynamics"][0]["sha256"]
    assert np.array_equal(second.trajectory, alone.trajectory)
    assert not np.array_equal(first.trajectory, second.trajectory)
    run = report["runs"][0]
    for key in ("cte_mean", "cte_max", "progress_120s"):
        mean = (gap_metrics(first)[key] + gap_metrics(second)[key]) / 2
        assert run["distilled"][key] == pytest.approx(mean)
        assert run["ratio"][key] == pytest.approx(run["highfi"][key] / mean)
    assert [m["end"] for m in run["distilled"]["models"]] == ["running", "running"]
    files = write_gap(report, [((first, second), highfi)], tmp_path / "gap")
    assert (tmp_path / "gap" / "gap_ice_p0.png") in files
    assert "ensemble of 2 models" in (tmp_path / "gap" / "gap.md").read_text()


def test_an_ensemble_lap_ends_completed_only_if_every_model_completed():
    """The most common failure otherwise (ties: the first model's)."""
    from policies.gap import ensemble_end

    assert ensemble_end(["completed", "completed"]) == "completed"
    assert ensemble_end(["completed", "off_track"]) == "off_track"
    assert ensemble_end(["stalled", "off_track", "off_track", "completed"]) == "off_track"
    assert ensemble_end(["stalled", "off_track"]) == "stalled"


def _bar_run(track: str, surface: str, patches: int, **ratios: float | None) -> dict:
    ratio = {"cte_mean": 1.0, "cte_max": 1.0, "lap_time": 1.0, "progress_120s": 1.0, **ratios}
    return {"condition": {"track": track, "surface": surface, "ice_patches": patches},
            "ratio": ratio}  # fmt: skip


def test_the_gap_bar_judges_the_named_conditions_only():
    """Asphalt +6, snow and ice count; each ratio in [0.8, 1.25]; ice progress within 10 %."""
    from policies.gap_bar import bar_line, gap_bar

    runs = [
        _bar_run("putnam", "asphalt", 0, cte_mean=3.0),  # not a bar condition
        _bar_run("putnam", "asphalt", 6, cte_max=1.26),
        _bar_run("putnam", "snow", 0, cte_mean=0.8, cte_max=1.25),  # the band's edges are in
        _bar_run("putnam", "ice", 0, progress_120s=1.11),
        _bar_run("procedural:201", "ice", 0, progress_120s=0.91, lap_time=None),
        _bar_run("procedural:201", "snow", 0, cte_mean=0.79),
        _bar_run("procedural:201", "snow", 6, cte_mean=9.0),  # not a bar condition
        _bar_run("procedural:202", "ice", 0, progress_120s=0.9),
    ]
    bar = gap_bar({"runs": runs})
    assert len(bar["cells"]) == 6 and bar["within"] == 2
    misses = {c["condition"]: c["misses"] for c in bar["cells"] if not c["within"]}
    assert misses == {
        "asphalt +6 ice": ["cte_max 1.26"],
        "ice": ["progress_120s 1.11"],
        "procedural:201: ice": ["lap_time -"],
        "procedural:201: snow": ["cte_mean 0.79"],
    }
    assert "2 / 6 cells within" in bar_line(bar) and "procedural:201: snow (cte_mean" in bar_line(
        bar
    )


def test_the_scorecard_states_each_backends_bar_under_its_gap_table():
    """``s3 scorecard --gap``: one line per backend whose report drove the bar's conditions."""
    runs = [_bar_run("putnam", "ice", 0), _bar_run("putnam", "snow", 0, cte_max=2.0)]
    for run in runs:
        run["condition"]["track"] = "putnam"
    report = {"runs": runs, "simulator": "open stand-in", "distilled": "S3Distilled-v0/ddm (x)"}
    card = gap_markdown({"ddm": report, "trans": {**report, "runs": []}})
    assert "- ddm (distilled side: S3Distilled-v0/ddm (x)): Gap bar" in card
    assert "1 / 2 cells within. Misses: snow (cte_max 2.00)." in card
    assert "- trans" not in card


def test_an_empty_list_of_dynamics_models_is_refused_before_any_lap(policy):
    """``checkpoint=[]`` names no model: a ConfigError, not a late zip error."""
    from policies.gap import distilled_models

    with pytest.raises(ConfigError, match="empty list"):
        distilled_models(policy, "bicycle", [])
