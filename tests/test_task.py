"""The tracking task shared by both environments."""

from __future__ import annotations

import pytest
import torch
from path_helpers import make_circle, make_straight

from gym_s3.observations import EgoState
from gym_s3.scenarios import PoolConfig, ScenarioPool
from gym_s3.spec import feature_index
from gym_s3.task import TaskConfig, TrackingTask
from gym_s3.tracks.surfaces import SurfaceLayout


def _pool(path=None) -> ScenarioPool:
    path = path or make_circle(60.0)
    return ScenarioPool.build([path], [[SurfaceLayout.uniform("asphalt")]], PoolConfig())


def _on_path(task: TrackingTask, s: torch.Tensor, speed_scale: float = 1.0) -> EgoState:
    """Cars exactly on their reference at arc length s, driving at the target speed."""
    smp = task.pool.bank.sample(task.pid, s)
    v = task.pool.target_speed(task.variant, s) * speed_scale
    z = torch.zeros_like(s)
    return EgoState(smp.x, smp.y, smp.heading, v, z, z)


def test_reset_places_cars_on_path_within_noise():
    """Start poses lie within the configured lateral/heading/speed noise of the scenario start."""
    cfg = TaskConfig(start_lateral_m=0.5, start_heading_rad=0.05, start_speed_fraction=(0.6, 1.0))
    task = TrackingTask(_pool(), 64, cfg)
    pose = task.reset(torch.ones(64, dtype=torch.bool), torch.Generator().manual_seed(0))
    fr = task.pool.bank.project(task.pid, torch.stack([pose.x, pose.y], -1))
    assert (fr.d.abs() <= 0.5 + 1e-4).all()
    assert ((fr.s - task.s + 1).remainder(task.pool.bank.length[0]) - 1).abs().max() < 1e-2
    v_ref = task.pool.target_speed(task.variant, task.s)
    assert ((pose.speed >= 0.6 * v_ref - 1e-5) & (pose.speed <= v_ref + 1e-5)).all()


def test_perfect_tracking_earns_progress_without_penalties():
    """A car exactly on the reference at target speed has ~0 errors; reward = progress + alive."""
    task = TrackingTask(_pool(), 4)
    task.reset(torch.ones(4, dtype=torch.bool), torch.Generator().manual_seed(1))
    s = task.s + 1.5
    out = task.step(_on_path(task, s), torch.zeros(4, 2))
    assert out.info["cross_track_error"].abs().max() < 1e-3
    assert out.info["heading_error"].abs().max() < 1e-3
    assert out.info["speed_error"].abs().max() < 1e-3
    w = task.config.reward
    assert torch.allclose(out.reward, torch.full((4,), 1.5 * w.progress + w.alive), atol=1e-3)
    assert not out.terminated.any() and not out.truncated.any()
    assert out.obs.shape == (4, 38) and torch.isfinite(out.obs).all()


def test_off_track_terminates_with_failure_penalty():
    """Leaving the road terminates (not truncates) and pays the failure penalty."""
    task = TrackingTask(_pool(), 2)
    task.reset(torch.ones(2, dtype=torch.bool), torch.Generator().manual_seed(2))
    ego = _on_path(task, task.s + 1.0)
    shifted = EgoState(ego.x + torch.tensor([0.0, 9.0]), ego.y, ego.yaw, ego.v_long, ego.v_lat,
                       ego.yaw_rate)  # fmt: skip
    out = task.step(shifted, torch.zeros(2, 2))
    assert out.terminated.tolist() == [False, True] and not out.truncated.any()
    assert out.info["off_track"].tolist() == [False, True]
    assert out.info["reward/failure"][1].item() == -task.config.reward.failure


def test_time_limit_truncates_without_terminating():
    """After max_episode_steps the episode is truncated, never terminated."""
    task = TrackingTask(_pool(), 3, TaskConfig(max_episode_steps=3))
    task.reset(torch.ones(3, dtype=torch.bool), torch.Generator().manual_seed(3))
    for k in range(3):
        out = task.step(_on_path(task, task.s + 1.0), torch.zeros(3, 2))
        assert not out.terminated.any()
        assert out.truncated.all() == (k == 2)


def test_non_finite_state_terminates_and_stays_finite():
    """A NaN state terminates that car only; observation and reward stay finite."""
    task = TrackingTask(_pool(), 2, TaskConfig(obs_mode="oracle"))
    task.reset(torch.ones(2, dtype=torch.bool), torch.Generator().manual_seed(4))
    ego = _on_path(task, task.s + 1.0)
    nan_x = torch.tensor([ego.x[0].item(), float("nan")])
    out = task.step(EgoState(nan_x, ego.y, ego.yaw, ego.v_long, ego.v_lat, ego.yaw_rate),
                    torch.zeros(2, 2))  # fmt: skip
    assert out.terminated.tolist() == [False, True]
    assert out.info["non_finite"].tolist() == [False, True]
    assert torch.isfinite(out.obs).all() and torch.isfinite(out.reward).all()


def test_open_route_completion_is_a_success_termination():
    """Reaching the end of an open route terminates as completed without failure penalty."""
    task = TrackingTask(_pool(make_straight(300.0)), 1)
    task.reset(torch.ones(1, dtype=torch.bool), torch.Generator().manual_seed(5))
    task.s = torch.tensor([297.0])
    task.hint = torch.tensor([297])
    out = task.step(_on_path(task, torch.tensor([299.5])), torch.zeros(1, 2))
    assert out.terminated.item() and out.info["completed"].item()
    assert out.info["reward/failure"].item() == 0.0


def test_partial_reset_touches_only_masked_cars():
    """reset(mask) redraws scenarios and zeroes counters of masked cars only."""
    task = TrackingTask(_pool(), 4)
    g = torch.Generator().manual_seed(6)
    task.reset(torch.ones(4, dtype=torch.bool), g)
    task.step(_on_path(task, task.s + 1.0), torch.full((4, 2), 0.5))
    s_before = task.s.clone()
    task.reset(torch.tensor([True, False, False, True]), g)
    assert task.steps.tolist() == [0, 1, 1, 0]
    assert torch.equal(task.s[1:3], s_before[1:3])
    assert task.prev_action[1].tolist() == [0.5, 0.5] and task.prev_action[0].tolist() == [0, 0]


def test_oracle_observation_sees_ice_under_the_wheels():
    """In oracle mode the last four features are the friction under the wheels."""
    path = make_circle(60.0)
    pool = ScenarioPool.build([path], [[SurfaceLayout.uniform("ice")]], PoolConfig())
    task = TrackingTask(pool, 1, TaskConfig(obs_mode="oracle"))
    task.reset(torch.ones(1, dtype=torch.bool), torch.Generator().manual_seed(7))
    obs = task.observe(_on_path(task, task.s))
    assert obs[0, feature_index("mu_fl", "oracle") :].tolist() == pytest.approx([0.1] * 4)


def test_lap_completion_on_closed_paths():
    """With complete_laps=0.1, a car that progressed a tenth of the loop completes (no failure)."""
    task = TrackingTask(_pool(), 1, TaskConfig(complete_laps=0.1))
    task.reset(torch.ones(1, dtype=torch.bool), torch.Generator().manual_seed(8))
    length = float(task.pool.bank.length[0])
    done = []
    for _ in range(12):
        out = task.step(_on_path(task, task.s + length / 110), torch.zeros(1, 2))
        done.append(bool(out.terminated))
    assert done.index(True) == 10
    assert out.info["completed"].item() and out.info["reward/failure"].item() == 0.0
