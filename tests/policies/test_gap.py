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
