"""Expert trajectories from driving logs as references of the scenario pool."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch

import gym_s3  # noqa: F401  (registers the ids)
from gym_s3.data.dataset import DrivingDataset
from gym_s3.data.generate import generate_dataset, preset
from gym_s3.envs.config import ScenarioConfig
from gym_s3.envs.pools import scenario_source
from gym_s3.errors import ConfigError, DataFormatError
from gym_s3.scenarios.expert import expert_trajectories, expert_trajectory
from gym_s3.spec import feature_index
from gym_s3.tracks.registry import cached_track


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small dataset of 10 s scripted-expert episodes (real generator, real Parquet files)."""
    root = tmp_path_factory.mktemp("logs") / "data"
    generate_dataset(root, preset("tiny", episode_s=10.0), seed=0, preset_name="tiny")
    return root


def _episode(logs: Path, k: int = 0):
    """Columns (numpy) and metadata of episode ``k`` of the dataset."""
    ds = DrivingDataset.load(logs)
    ep = ds.episodes[k]
    return {c: v[ep.start : ep.stop].numpy() for c, v in ds.columns.items()}, ep.meta


def test_the_path_follows_the_driven_line_and_the_target_is_the_driven_speed(logs):
    """Logged positions lie on the path (|d| < 0.3 m); the target speed is the logged speed."""
    cols, meta = _episode(logs)
    traj = expert_trajectory(cols, meta)
    assert traj is not None and traj.path.name == f"log:{meta.session_id}/{meta.episode_id}"
    pts = torch.as_tensor(np.column_stack([cols["x"], cols["y"]]), dtype=torch.float64)
    fr = traj.path.project(pts)
    inside = (fr.s > 5.0) & (fr.s < traj.path.length - 5.0)  # away from the smoothed ends
    assert float(fr.d[inside].abs().max()) < 0.3
    logged = np.hypot(cols["v_long"], cols["v_lat"])[inside.numpy()]
    target = np.interp(fr.s[inside].numpy(), np.arange(len(traj.speed)) * traj.path.ds, traj.speed)
    assert np.abs(target - logged).max() < 0.5
    assert traj.layout == meta.surface_layout


def test_road_edges_stay_where_the_track_has_them(logs):
    """The path's edges are the logged track's edges, moved by the driven lateral offset."""
    cols, meta = _episode(logs, 1)  # drives up to 0.44 m off the track's centreline
    traj = expert_trajectory(cols, meta)
    track = cached_track(meta.track)
    probe = torch.linspace(10.0, traj.path.length - 10.0, 200, dtype=torch.float64)
    smp = traj.path.sample(probe)
    left_edge = torch.stack([smp.x - smp.width_left * torch.sin(smp.heading),
                             smp.y + smp.width_left * torch.cos(smp.heading)], -1)  # fmt: skip
    fr = track.project(left_edge)
    # the expert's left road edge is the track's left road edge (within smoothing; without the
    # offset the edges of this episode would be off by 0.43 m)
    assert float((fr.d - fr.width_left).abs().max()) < 0.1


def test_short_and_faulty_episodes_are_skipped(logs):
    """An episode cut before it drove ``min_length_m`` gives no trajectory."""
    cols, meta = _episode(logs)
    cut = {k: v.copy() for k, v in cols.items()}
    cut["fault"][10:] = True
    assert expert_trajectory(cut, meta) is None
    assert expert_trajectory(cols, meta, min_length_m=1e6) is None


def test_logs_join_the_pool_and_the_env_tracks_them(logs):
    """``S3Distilled-v0(logs=...)`` draws scenarios on expert paths whose target is the expert's.

    The first observation's speed-error feature equals start speed minus the expert speed there.
    """
    n_traj = len(expert_trajectories(logs))
    src = scenario_source(ScenarioConfig(tracks=(), logs=(str(logs),)))
    assert len(src.paths) == n_traj and all(p.name.startswith("log:") for p in src.paths)
    env = gym.make("S3Distilled-v0", num_envs=32, tracks=(), logs=logs, backend="bicycle", seed=0)
    obs, _ = env.reset(seed=0)
    task = env.unwrapped.core.task
    target = obs[:, feature_index("v_long")] - obs[:, feature_index("speed_error")]
    for k in range(32):  # the target is what the expert drove where the car starts
        path = src.paths[int(task.pid[k])]
        expert = next(t for t in expert_trajectories(logs) if t.path.name == path.name).speed
        driven = np.interp(float(task.s[k]), np.arange(len(expert)) * path.ds, expert)
        assert abs(float(target[k]) - driven) < 0.05
    for _ in range(20):
        obs, reward, *_ = env.step(torch.zeros(32, 2))
    assert bool(torch.isfinite(obs).all()) and bool(torch.isfinite(reward).all())
    env.close()


def test_missing_or_empty_logs_are_clear_errors(tmp_path, logs):
    """A folder without logs, no track and no logs, or only too-short episodes, say what to do."""
    with pytest.raises(DataFormatError):
        expert_trajectories(tmp_path)
    with pytest.raises(ConfigError, match="or give logs"):
        ScenarioConfig(tracks=())
    with pytest.raises(ConfigError, match="record longer episodes"):
        expert_trajectories(logs, min_length_m=1e6)


def test_the_standin_drives_an_expert_scenario_at_the_expert_speed(logs):
    """``scenario_placement`` carries the expert speeds: S3BeamNG-v0 targets equal the pool's."""
    pytest.importorskip("beamngpy")
    from gym_s3.envs.beamng import S3BeamNGEnv
    from gym_s3.envs.pools import scenario_placement

    src = scenario_source(ScenarioConfig(tracks=(), logs=(str(logs),)))
    place = scenario_placement(src, 0)
    env = S3BeamNGEnv(standin=True, **place)
    path = place["reference"]
    expert = next(t for t in expert_trajectories(logs) if t.path.name == path.name).speed
    s = torch.linspace(0.0, path.length - 1.0, 50, dtype=torch.float64)
    variant = torch.zeros(50, dtype=torch.int64)
    beamng = env.task.pool.target_speed(variant, s.to(env.task.pool.speed.dtype)).double()
    driven = np.interp(s.numpy(), np.arange(len(expert)) * path.ds, expert)
    np.testing.assert_allclose(beamng.numpy(), driven, atol=0.05)
    env.close()


def test_a_log_whose_first_row_is_a_fault_is_skipped(logs):
    """A fault from the first rows (or an empty episode) gives no trajectory, not a crash."""
    cols, meta = _episode(logs)
    bad = {k: v.copy() for k, v in cols.items()}
    bad["fault"][:] = True
    assert expert_trajectory(bad, meta) is None
    empty = {k: v[:0] for k, v in cols.items()}
    assert expert_trajectory(empty, meta) is None
