"""Evaluation: the same Putnam Park laps in both envs, labelled scenario sets, ``s3 evaluate``."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from policy_helpers import untrained_policy

from gym_s3.cli import main
from gym_s3.envs.config import ScenarioConfig
from gym_s3.envs.pools import scenario_source
from gym_s3.errors import ConfigError
from gym_s3.tracks.lap_layouts import lap_layout
from gym_s3.tracks.registry import cached_track
from policies.checkpoint import Policy
from policies.evaluate import METRICS
from policies.evaluate_distilled import evaluate_distilled_laps, evaluate_labels


@pytest.fixture
def policy(tmp_path) -> Policy:
    """An untrained bicycle policy saved to disk and loaded back (the real checkpoint path)."""
    return untrained_policy(tmp_path)


def test_lap_layout_is_the_beamng_env_layout():
    """The distilled laps use exactly the layout S3BeamNG-v0 builds (same patch placement)."""
    pytest.importorskip("beamngpy")
    from gym_s3.envs.beamng import S3BeamNGEnv

    putnam = cached_track("putnam")
    env = S3BeamNGEnv(standin=True, surface="gravel", ice_patches=4, layout_seed=3)
    try:
        assert env.layout == lap_layout(putnam, "gravel", 4, 3)
        assert len(env.layout.bands) == 4
        assert env.config.task.complete_laps == 1.0
    finally:
        env.close()


def test_explicit_layouts_and_starts_build_one_scenario_per_layout_and_start():
    """``layouts`` replace the drawn layouts and ``starts`` the start spacing of the pool."""
    putnam = cached_track("putnam")
    layouts = (lap_layout(putnam, "asphalt"), lap_layout(putnam, "snow", 2, 1))
    cfg = ScenarioConfig(tracks=("putnam",), layouts=layouts, starts=(0.0, 500.0))
    pool = scenario_source(cfg).pool
    assert pool.layouts == layouts
    assert pool.scenario_variant.tolist() == [0, 0, 1, 1]
    assert pool.scenario_start.tolist() == [0.0, 500.0, 0.0, 500.0]


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(tracks=("putnam", "town:0"), layouts=("x",)), "one track"),
        (dict(tracks=("putnam",), layouts=("asphalt",)), "SurfaceLayout"),
        (dict(tracks=("putnam",), starts=(-1.0,)), "starts"),
        (dict(tracks=("putnam",), starts=(math.nan,)), "starts"),
    ],
)
def test_bad_explicit_layouts_or_starts_are_refused(kwargs, match):
    """Layouts for several tracks, non-layouts and negative or NaN starts raise clearly."""
    with pytest.raises(ConfigError, match=match):
        ScenarioConfig(**kwargs)


def test_distilled_laps_drive_the_lap_from_a_standing_start(policy):
    """One run per surface × patch count, from s = 0 at rest, on the lap layout."""
    results = evaluate_distilled_laps(policy, surfaces=("asphalt", "ice"), ice_patches=(0, 3),
                                      max_steps=25, progress=False, expert=False)  # fmt: skip
    assert [(r.condition["surface"], r.condition["ice_patches"]) for r in results] == [
        ("asphalt", 0), ("asphalt", 3), ("ice", 0), ("ice", 3)]  # fmt: skip
    putnam = cached_track("putnam")
    for r in results:
        assert r.env == "S3Distilled-v0/bicycle"
        assert r.layout == lap_layout(putnam, r.condition["surface"], r.condition["ice_patches"])
        assert r.metrics["steps"] == 25 and len(r.trajectory) == 25
        assert all(math.isfinite(r.metrics[k]) for k in METRICS)
        # a standing start at s = 0: the first positions are next to the start of the reference
        start = putnam.sample(torch.tensor([0.0], dtype=putnam.dtype))
        d0 = math.hypot(
            r.trajectory[0, 0] - float(start.x[0]), r.trajectory[0, 1] - float(start.y[0])
        )
        assert d0 < 1.0
        assert abs(r.s[0]) < 1.0 or abs(r.s[0] - putnam.length) < 1.0


def test_label_sets_report_mean_metrics_per_label(policy):
    """Each label gets its own batch; unknown labels fail before any env is built."""
    results = evaluate_labels(policy, ["hard_braking", "intersection"], num_envs=8, progress=False)
    assert [r.condition for r in results] == [
        {"label": "hard_braking", "episodes": 8},
        {"label": "intersection", "episodes": 8},
    ]
    for r in results:
        assert all(math.isfinite(r.metrics[k]) for k in METRICS)
        assert 0.0 <= r.metrics["completion"] <= 1.0
        assert r.metrics["steps"] >= 1
    with pytest.raises(ConfigError, match="valid labels"):
        evaluate_labels(policy, ["hard_breaking"], num_envs=2, progress=False)


def test_cli_evaluates_distilled_laps_and_labels(policy, tmp_path, capsys):
    """``s3 evaluate --env distilled --labels`` writes one JSON row per lap and per label."""
    out = tmp_path / "eval"
    rc = main(["evaluate", str(policy.path), "--env", "distilled", "--surfaces", "asphalt",
               "--ice-patches", "2", "--max-steps", "10", "--labels", "sharp_turn",
               "--episodes", "4", "--out", str(out)])  # fmt: skip
    assert rc == 0
    runs = json.loads((out / "results.json").read_text())["runs"]
    assert [r["condition"].get("label", r["condition"].get("surface")) for r in runs] == [
        "asphalt", "asphalt", "sharp_turn"]  # fmt: skip
    assert [r["driver"] for r in runs] == ["expert", "policy", "policy"]
    assert (out / "trajectory_asphalt_p2.png").stat().st_size > 0
    assert (out / "labels.png").stat().st_size > 0  # label sets get their bar plot
    assert "asphalt +2 ice" in capsys.readouterr().out


@pytest.mark.parametrize(
    "extra, match",
    [
        (["--no-laps"], "pass --labels"),
        (["--beamng", "--env", "distilled"], "--env beamng"),
        (["--episodes", "0", "--labels", "all"], "--episodes"),
        (["--labels", "nonsense"], "valid labels"),
        (["--launch"], "add --beamng"),
    ],
)
def test_cli_refuses_contradictory_options(policy, tmp_path, capsys, extra, match):
    """Option mistakes exit with status 2 and a message naming the option."""
    rc = main(["evaluate", str(policy.path), "--out", str(tmp_path / "e"), *extra])
    assert rc == 2
    assert match in capsys.readouterr().err
    assert not (tmp_path / "e" / "results.json").exists()


@pytest.mark.parametrize("backend", ["bicycle", "ddm"])
def test_batched_distilled_laps_are_the_env_laps(policy, backend):
    """Batched distilled laps (no frames) are the laps the env drives one by one (GIFs).

    Without frames every lap and driver is one car of one batch; with frames (GIFs) the laps
    run one after another in the env itself. Both drive the same laps: the same trajectories,
    ends and metrics up to float32 rounding (a learned backend's batched matrix products round
    differently), for the expert and the policy, on ice and on asphalt with patches.
    """
    laps = dict(backend=backend, surfaces=("ice", "asphalt"), ice_patches=(2,), max_steps=60,
                progress=False)  # fmt: skip
    batched = evaluate_distilled_laps(policy, **laps)
    one_by_one = evaluate_distilled_laps(policy, render_every=30, **laps)
    assert len(one_by_one[0].frames) == 2 and one_by_one[0].frames[0].ndim == 3
    assert [(r.driver, r.condition, r.env) for r in batched] == [
        (r.driver, r.condition, r.env) for r in one_by_one]  # fmt: skip
    assert [r.driver for r in batched] == ["expert", "policy"] * 2
    for a, b in zip(batched, one_by_one, strict=True):
        assert a.layout == b.layout and a.terminated_by == b.terminated_by
        np.testing.assert_allclose(a.trajectory, b.trajectory, atol=1e-3)
        np.testing.assert_allclose(a.actions, b.actions, atol=1e-3)
        assert a.metrics == pytest.approx(b.metrics, rel=1e-3, abs=1e-4)
    assert not np.allclose(batched[0].trajectory, batched[1].trajectory, atol=1e-2)


def test_batched_distilled_table_over_two_tracks_and_every_obs_mode_is_the_env_table(
    policy, tmp_path
):
    """Every row of a batched table is the row of its lap driven alone in the env.

    Two tracks (a padded path bank), 0 and 2 patches in one pool, a default, an oracle (whose
    first observation carries the friction under the wheels) and a history policy (whose
    observations carry the cars' last steps, kept per row of its own batch).
    """
    from policies.evaluate_distilled import lap_backend
    from policies.evaluate_model import Lap, evaluate_model

    oracle = untrained_policy(tmp_path, obs_mode="oracle")
    history = untrained_policy(tmp_path, obs_mode="history")
    laps = [Lap("putnam", "ice", 0), Lap("procedural:201", "asphalt", 2)]
    drivers = [("policy", policy), ("oracle", oracle), ("history", history)]
    rows = evaluate_model(drivers, laps, max_steps=40, progress=False,
                          dynamics=lap_backend("ddm"))  # fmt: skip
    names = ("expert", "policy", "oracle", "history")
    assert [(r.driver, r.condition["track"]) for r in rows] == [
        (d, lap.track) for lap in laps for d in names]  # fmt: skip
    for row in rows:
        driver = dict(drivers).get(row.driver)
        alone = evaluate_distilled_laps(
            driver if driver is not None else policy, backend="ddm", track=row.condition["track"],
            surfaces=(row.condition["surface"],), ice_patches=(row.condition["ice_patches"],),
            max_steps=40, render_every=41, progress=False, expert=driver is None,
        )[0]  # fmt: skip
        assert alone.driver == ("expert" if driver is None else "policy")
        np.testing.assert_allclose(row.trajectory, alone.trajectory, atol=1e-3)
        assert row.metrics == pytest.approx(alone.metrics, rel=1e-3, abs=1e-4)


def test_a_non_finite_action_in_a_batched_table_names_the_driver_and_lap(policy):
    """A policy that outputs NaN is refused as the envs refuse it, naming driver and lap."""
    from gym_s3.errors import ActionError

    policy.act = lambda obs: torch.full((obs.shape[0], 2), float("nan"))
    with pytest.raises(ActionError, match="driver 'policy' gave a non-finite action on lap"):
        evaluate_distilled_laps(policy, surfaces=("asphalt",), ice_patches=(0,), max_steps=5,
                                progress=False)  # fmt: skip


def test_label_sets_run_in_the_standin_from_the_same_pool(policy):
    """``evaluate_beamng_labels`` drives pool scenarios of the label in S3BeamNG-v0 (stand-in)."""
    pytest.importorskip("beamngpy")
    from policies.evaluate_labels import evaluate_beamng_labels

    (res,) = evaluate_beamng_labels(
        policy, ["sharp_turn"], episodes=2, fast=False, max_steps=6, progress=False,
        scenario={"tracks": ("putnam",), "layouts_per_track": 1},
    )  # fmt: skip
    assert res.env == "S3BeamNG-v0 (open stand-in)"
    assert res.condition == {"label": "sharp_turn", "episodes": 2}
    assert res.metrics["steps"] == 6
    assert all(math.isfinite(res.metrics[k]) for k in METRICS)
    with pytest.raises(ConfigError, match="valid labels"):
        evaluate_beamng_labels(policy, ["drifting"], episodes=1, progress=False)


def test_launch_opens_the_simulator_once_and_spares_one_already_running(tmp_path):
    """With ``launch``, the runs only connect; a simulator that was already running survives.

    The stand-in stops on ``Quit`` here, so quitting it would make ``wait`` return True.
    """
    pytest.importorskip("beamngpy")
    from gym_s3.beamng.standin.config import WorldConfig
    from gym_s3.beamng.standin.server import StandInServer
    from policies.evaluate import simulator

    server = StandInServer(world_config=WorldConfig(), exit_on_quit=True)
    port = server.start()
    try:
        with simulator(False, False, host="127.0.0.1", port=port, launch=True,
                       home=str(tmp_path)) as (name, options):  # fmt: skip
            assert name == "S3BeamNG-v0" and options["launch"] is False
            assert options["port"] == port
        assert not server.wait(timeout=0.5)
    finally:
        server.stop()
