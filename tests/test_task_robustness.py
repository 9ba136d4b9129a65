"""Robustness options of the task and the layouts: friction noise, standing starts, corner ice.

Also mixtures of surface distributions.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from path_helpers import make_circle

from gym_s3.errors import ConfigError
from gym_s3.observations import EgoState
from gym_s3.scenarios import PoolConfig, ScenarioPool
from gym_s3.task import TaskConfig, TrackingTask
from gym_s3.tracks.arcs import wrap_angle
from gym_s3.tracks.layouts import LayoutConfig, LayoutMix, PatchConfig, corner_apexes, sample_layout
from gym_s3.tracks.registry import cached_track
from gym_s3.tracks.surfaces import SurfaceLayout


def _task(config: TaskConfig, n: int = 256) -> TrackingTask:
    pool = ScenarioPool.build([make_circle(60.0)], [[SurfaceLayout.uniform("snow")]], PoolConfig())
    task = TrackingTask(pool, n, config)
    task.reset(torch.ones(n, dtype=torch.bool), torch.Generator().manual_seed(0))
    return task


def _ego(task: TrackingTask) -> EgoState:
    smp = task.pool.bank.sample(task.pid, task.s)
    z = torch.zeros_like(task.s)
    return EgoState(smp.x, smp.y, smp.heading, z + 5.0, z, z)


def test_friction_noise_scales_what_the_car_feels_per_episode_and_is_off_by_default():
    """Each car feels snow friction x U(0.7, 1.3), the same on its wheels; 0 gives exactly 0.25."""
    noisy = _task(TaskConfig(friction_noise=0.3))
    mu = noisy.wheel_friction(_ego(noisy))
    scale = mu[:, 0] / 0.25
    assert torch.allclose(mu, mu[:, :1].expand_as(mu))
    assert 0.7 - 1e-5 <= float(scale.min()) and float(scale.max()) <= 1.3 + 1e-5
    assert float(scale.std()) > 0.1  # spread over the range, not one draw for all
    step = noisy.step(_ego(noisy), torch.zeros(256, 2))
    assert torch.allclose(step.info["wheel_mu"], mu)  # the dynamics get the noisy friction
    exact = _task(TaskConfig())
    assert torch.equal(exact.wheel_friction(_ego(exact)), torch.full((256, 4), 0.25))
    with pytest.raises(ConfigError, match="friction_noise"):
        TaskConfig(friction_noise=1.0)


def test_start_from_rest_gives_that_share_of_standing_starts():
    """``start_from_rest=0.5``: about half the cars start at 0 m/s; the default none."""
    gen = torch.Generator().manual_seed(1)
    task = _task(TaskConfig(start_from_rest=0.5), n=1000)
    speed = task.reset(torch.ones(1000, dtype=torch.bool), gen).speed
    assert 0.4 < float((speed == 0).float().mean()) < 0.6
    assert float(speed.max()) > 1.0
    plain = _task(TaskConfig(), n=1000).reset(torch.ones(1000, dtype=torch.bool), gen).speed
    assert bool((plain > 0).all())
    with pytest.raises(ConfigError, match="start_from_rest"):
        TaskConfig(start_from_rest=1.5)


def _distance_to_apex(putnam, bands, apexes) -> np.ndarray:
    """Per band, the distance [m] from the band (as an interval along s) to the nearest apex."""
    out = []
    for b in bands:
        lo, hi = b.s_start, b.s_start + b.length
        shifted = np.concatenate([apexes - putnam.length, apexes, apexes + putnam.length])
        out.append(min(max(lo - a, a - hi, 0.0) for a in shifted))
    return np.array(out)


def test_corner_placement_puts_ice_in_braking_zones_apexes_and_exits():
    """Every ``corners`` patch lies within 20 m of a corner apex; uniform ones often do not."""
    putnam = cached_track("putnam")
    apexes = corner_apexes(putnam)
    assert len(apexes) == 11  # the 11 corners of the Putnam approximation
    rng = np.random.default_rng(0)
    corners = LayoutConfig(patches=PatchConfig(count=(6, 6), placement="corners"))
    anywhere = LayoutConfig(patches=PatchConfig(count=(6, 6)))
    near = np.concatenate([_distance_to_apex(putnam, sample_layout(putnam, corners, rng).bands,
                                             apexes) for _ in range(10)])  # fmt: skip
    far = np.concatenate([_distance_to_apex(putnam, sample_layout(putnam, anywhere, rng).bands,
                                            apexes) for _ in range(10)])  # fmt: skip
    assert near.max() <= 20.0 + 1e-6
    assert (far > 40.0).mean() > 0.3
    with pytest.raises(ConfigError, match="placement"):
        PatchConfig(placement="apex")


def test_layout_mix_draws_from_each_option_by_weight():
    """A mixture draws every option (and nothing else); zero weight never."""
    putnam = cached_track("putnam")
    mix = LayoutMix((LayoutConfig(base=("ice",)), LayoutConfig(base=("snow",)),
                     LayoutConfig(base=("gravel",))), weights=(3.0, 1.0, 0.0))  # fmt: skip
    rng = np.random.default_rng(0)
    bases = [sample_layout(putnam, mix, rng).base for _ in range(200)]
    assert set(bases) == {"ice", "snow"}
    assert 0.65 < bases.count("ice") / 200 < 0.85
    with pytest.raises(ConfigError, match="LayoutMix"):
        LayoutMix(())


def _start_offsets(task: TrackingTask, pose) -> tuple[torch.Tensor, torch.Tensor]:
    """Signed lateral offset [m] and wrapped heading error [rad] of start poses from the line."""
    offset = task.pool.bank.project(task.pid, torch.stack([pose.x, pose.y], dim=-1))
    return offset.d, wrap_angle(pose.yaw - offset.heading)


def test_recovery_starts_of_the_ppo_recipe_reach_the_task_and_spread_the_start_poses():
    """Recovery starts: ``start_lateral_m=1.5, start_heading_rad=0.2`` reach the task.

    Measured from the start poses: cars start up to 1.5 m and 0.2 rad off the line; the default
    keeps 0.5 m and 0.05 rad.
    """
    from policies.config import PPOConfig

    gen = torch.Generator().manual_seed(2)
    wide = PPOConfig(start_lateral_m=1.5, start_heading_rad=0.2).task()
    task = _task(wide, n=2000)
    pose = task.reset(torch.ones(2000, dtype=torch.bool), gen)
    frenet_d, yaw_err = (x.abs() for x in _start_offsets(task, pose))
    assert 1.3 < float(frenet_d.max()) <= 1.5 + 1e-3 and float(frenet_d.mean()) > 0.6
    assert 0.18 < float(yaw_err.max()) <= 0.2 + 1e-6
    narrow = PPOConfig().task()
    assert (narrow.start_lateral_m, narrow.start_heading_rad) == (0.5, 0.05)
    with pytest.raises(ConfigError, match="start_lateral_m"):
        PPOConfig(start_lateral_m=-1.0)


def test_restarts_spread_only_the_standing_starts():
    """``rest_start_*`` widen the standing starts alone (2 m, 0.8 rad); moving ones keep 0.5 m."""
    cfg = TaskConfig(start_from_rest=0.5, rest_start_lateral_m=2.0, rest_start_heading_rad=0.8)
    task = _task(cfg, n=2000)
    pose = task.reset(torch.ones(2000, dtype=torch.bool), torch.Generator().manual_seed(3))
    lateral, yaw_err = _start_offsets(task, pose)
    rest, moving = pose.speed == 0, pose.speed > 0
    assert 0.4 < float(rest.double().mean()) < 0.6
    assert 1.8 < float(lateral[rest].abs().max()) <= 2.0 + 1e-3
    assert 0.75 < float(yaw_err[rest].abs().max()) <= 0.8 + 1e-6
    assert float(lateral[moving].abs().max()) <= 0.5 + 1e-3
    assert float(yaw_err[moving].abs().max()) <= 0.05 + 1e-6
    with pytest.raises(ConfigError, match="rest_start_heading_rad"):
        TaskConfig(rest_start_heading_rad=-0.1)


def test_standing_starts_can_show_a_drawn_previous_action():
    """``rest_start_prev_action``: standing starts (alone) see a braking previous action.

    Through ``S3Distilled-v0`` (bicycle): the first observation of a car at rest shows steer in
    [-1, 1] and accel in [-1, 0], spread over both; moving starts and the default show zero.
    """
    import gymnasium as gym

    from gym_s3.spec import feature_index

    steer_i, accel_i = feature_index("prev_steer"), feature_index("prev_accel")
    speed_i = feature_index("v_long")

    def first(**task: object) -> tuple[torch.Tensor, torch.Tensor]:
        env = gym.make("S3Distilled-v0", backend="bicycle", num_envs=512, task=TaskConfig(**task),
                       tracks=("putnam",), seed=0)  # fmt: skip
        obs, _ = env.reset(seed=0)
        env.close()
        obs = torch.as_tensor(obs)
        return obs[:, speed_i].abs() < 1e-3, obs[:, [steer_i, accel_i]]

    rest, prev = first(start_from_rest=0.5, rest_start_prev_action=True)
    assert 0.35 < float(rest.double().mean()) < 0.65
    assert bool((prev[~rest] == 0).all())
    steer, accel = prev[rest, 0], prev[rest, 1]
    assert float(steer.min()) < -0.8 and float(steer.max()) > 0.8
    assert float(accel.min()) < -0.8 and float(accel.max()) <= 0.0
    assert float(accel.max()) > -0.2  # spread up to coasting
    rest, prev = first(start_from_rest=0.5)
    assert bool(rest.any()) and bool((prev == 0).all())


def test_slow_start_weight_draws_walking_pace_corners_more_often():
    """``slow_start_weight``: cars start on walking-pace corners ``1 + w`` times as often.

    A pool of a wide asphalt circle (fast) and a tight icy one (target ~3 m/s): with w = 9 the
    share of cars that start on the tight circle rises from its share of the scenarios to
    ``10 p / (1 + 9 p)``, as ``slow_start_share`` predicts; w = 0 keeps the uniform draws.
    """
    paths = [make_circle(60.0), make_circle(8.0)]
    layouts = [[SurfaceLayout.uniform("asphalt")], [SurfaceLayout.uniform("ice")]]
    pool = ScenarioPool.build(paths, layouts, PoolConfig())
    n = 8192

    def started(weight: float) -> tuple[TrackingTask, float]:
        task = TrackingTask(pool, n, TaskConfig(slow_start_weight=weight))
        task.reset(torch.ones(n, dtype=torch.bool), torch.Generator().manual_seed(0))
        return task, float((task.pid == 1).double().mean())

    slow = TrackingTask(pool, 1, TaskConfig()).slow_scenarios()
    on_tight = pool.variant_path[pool.scenario_variant] == 1
    assert bool(slow.any()) and bool((slow == on_tight).all())
    p = float(slow.double().mean())
    assert 0.05 < p < 0.25
    plain, share0 = started(0.0)
    assert torch.equal(plain.scenario, pool.sample(n, torch.Generator().manual_seed(0)))
    weighted, share9 = started(9.0)
    expected = 10 * p / (1 + 9 * p)
    assert abs(share0 - p) < 0.02
    assert abs(share9 - expected) < 0.03 and share9 > 2 * share0
    assert abs(weighted.slow_start_share() - expected) < 1e-6
    with pytest.raises(ConfigError, match="slow_start_weight"):
        TaskConfig(slow_start_weight=-1.0)


def test_slow_scenarios_look_ahead_25_m_and_a_weight_with_nothing_slow_is_refused():
    """Slow scenarios are those with a walking-pace target within 25 m ahead, on the sample grid.

    Checked against a brute-force reading of the pool's speed table on a real town route on ice
    (some starts are slow only because of the corner ahead of them); a weight on a pool with no
    slow scenario (dry wide circle) is refused with the fix; the ``ddm_slow_starts`` preset
    carries its weight into the task.
    """
    from gym_s3.task_config import SLOW_START_REACH_M
    from policies.config import PRESETS

    path = cached_track("town:0")
    pool = ScenarioPool.build([path], [[SurfaceLayout.uniform("ice")]], PoolConfig())
    task = TrackingTask(pool, 1, TaskConfig())
    slow = task.slow_scenarios()
    speed, ds = pool.speed[0].double(), float(pool.bank.ds[0])
    expected = []
    for s0 in pool.scenario_start.tolist():
        lo, hi = round(s0 / ds), round((s0 + SLOW_START_REACH_M) / ds)
        idx = torch.arange(lo, hi + 1).clamp(max=path.num_samples - 1)
        expected.append(bool((speed[idx] < 4.0).any()))
    expected = torch.tensor(expected)
    assert bool(expected.any()) and not bool(expected.all())
    at_start = pool.target_speed(pool.scenario_variant, pool.scenario_start) < 4.0
    assert bool((expected & ~at_start).any())  # slow only because of the corner ahead
    assert int((slow != expected).sum()) <= 1  # interpolation at the window's far end
    dry = ScenarioPool.build([make_circle(60.0)], [[SurfaceLayout.uniform("asphalt")]],
                             PoolConfig())  # fmt: skip
    with pytest.raises(ConfigError, match="none of the pool's .* default_ice"):
        TrackingTask(dry, 4, TaskConfig(slow_start_weight=5.0))
    assert PRESETS["ddm_slow_starts"].task().slow_start_weight == 10.0
