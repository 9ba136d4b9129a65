"""How long an episode may last: the stall rule and the lap limit derived from the reference."""

from __future__ import annotations

import math

import pytest
import torch
from path_helpers import make_circle, make_straight

from gym_s3.errors import ConfigError
from gym_s3.observations import EgoState
from gym_s3.scenarios import PoolConfig, ScenarioPool
from gym_s3.spec import CONTROL_DT_S
from gym_s3.task import TaskConfig, TrackingTask, lap_task
from gym_s3.tracks.speed_profile import lap_time
from gym_s3.tracks.surfaces import SurfaceLayout


def _task(config: TaskConfig, path=None, surfaces=("asphalt",), n: int = 2) -> TrackingTask:
    path = path or make_circle(60.0)
    layouts = [SurfaceLayout.uniform(s) for s in surfaces]
    pool = ScenarioPool.build([path], [layouts], PoolConfig(), starts=[[0.0]])
    task = TrackingTask(pool, n, config)
    task.reset(torch.ones(n, dtype=torch.bool), torch.Generator().manual_seed(0),
               scenario=torch.arange(n) % pool.num_scenarios)  # fmt: skip
    return task


def _standing(task: TrackingTask, speed: torch.Tensor) -> EgoState:
    """Cars on the reference at their start, at forward speeds ``speed`` [m/s]."""
    smp = task.pool.bank.sample(task.pid, task.s)
    z = torch.zeros_like(speed)
    return EgoState(smp.x, smp.y, smp.heading, speed, z, z)


def test_a_car_standing_for_the_stall_time_ends_as_stalled():
    """Below the stall speed for stall_time_s (and not a step less) terminates as ``stalled``."""
    cfg = TaskConfig(max_episode_steps=1000, stall_speed_mps=0.5, stall_time_s=1.0)
    task = _task(cfg)
    speed = torch.tensor([0.2, 3.0])  # car 0 stands, car 1 drives
    need = round(1.0 / CONTROL_DT_S)
    for k in range(need):
        out = task.step(_standing(task, speed), torch.zeros(2, 2))
        assert out.info["stalled"].tolist() == [k == need - 1, False]
    assert out.terminated.tolist() == [True, False] and not out.truncated.any()
    assert out.info["reward/failure"][0].item() == -cfg.reward.failure


def test_moving_again_restarts_the_stall_clock_and_none_disables_the_rule():
    """One step above the stall speed resets the count; ``stall_time_s=None`` never stalls."""
    task = _task(TaskConfig(max_episode_steps=1000, stall_time_s=1.0), n=1)
    slow, fast = torch.tensor([0.1]), torch.tensor([2.0])
    for speed in [slow] * 19 + [fast] + [slow] * 19:
        assert not task.step(_standing(task, speed), torch.zeros(1, 2)).info["stalled"].any()
    off = _task(TaskConfig(max_episode_steps=1000, stall_time_s=None), n=1)
    for _ in range(300):
        out = off.step(_standing(off, slow), torch.zeros(1, 2))
        assert not out.terminated.any()


def test_lap_time_limit_is_twice_the_reference_lap_of_each_surface():
    """A lap may take 2x the reference lap time of its own layout: far longer on ice."""
    circle = make_circle(60.0)
    task = _task(lap_task(stall_time_s=None), circle, surfaces=("asphalt", "ice"))
    ref = lap_time(circle, task.pool.speed.double()).float()  # (2,) [s], one per layout
    expected = torch.ceil(2.0 * ref / CONTROL_DT_S).long()
    assert torch.equal(task.limit, expected)
    assert task.limit[1] > 3 * task.limit[0]  # ice is slower
    # truncation comes exactly at the limit of each car
    task = _task(lap_task(stall_time_s=None), make_circle(10.0), surfaces=("asphalt",), n=1)
    limit = int(task.limit[0])
    for k in range(limit):
        out = task.step(_standing(task, torch.tensor([1.0])), torch.zeros(1, 2))
        assert bool(out.truncated[0]) == (k == limit - 1)


def test_open_route_limit_counts_from_the_start_and_the_cap_applies():
    """On an open path the route is start -> end; ``max_episode_steps`` caps the derived limit."""
    straight = make_straight(400.0)
    pool = ScenarioPool.build([straight], [[SurfaceLayout.uniform("asphalt")]], PoolConfig(),
                              starts=[[0.0, 200.0]])  # fmt: skip
    times = pool.route_time(pool.scenario_variant, pool.scenario_start)
    full = float(lap_time(straight, pool.speed[0].double()))
    assert float(times[0]) == pytest.approx(full, rel=1e-3)
    assert 0.3 * full < float(times[1]) < 0.7 * full
    capped = TrackingTask(pool, 2, TaskConfig(max_episode_steps=7, time_limit_factor=2.0))
    capped.reset(torch.ones(2, dtype=torch.bool), torch.Generator(), scenario=torch.arange(2))
    assert capped.limit.tolist() == [7, 7]


def test_lap_task_time_limit_and_validation():
    """``lap_task(time_limit_s)`` is an exact step count; bad values name the field."""
    task = lap_task(12.0)
    assert task.max_episode_steps == 240 and task.time_limit_factor is None
    assert lap_task().time_limit_factor == 2.0
    assert math.ceil(0.01 / CONTROL_DT_S) == lap_task(0.01).max_episode_steps
    with pytest.raises(ConfigError, match="time limit"):
        lap_task(0.0)
    with pytest.raises(ConfigError, match="stall_time_s"):
        TaskConfig(stall_time_s=-1.0)
    with pytest.raises(ConfigError, match="stall_speed_mps"):
        TaskConfig(stall_speed_mps=-0.1)
    with pytest.raises(ConfigError, match="time_limit_factor"):
        TaskConfig(time_limit_factor=0.0)
