"""The ``history`` observation mode: what the car did over its last control steps."""

from __future__ import annotations

import pytest
import torch
from path_helpers import make_circle

from gym_s3 import spec
from gym_s3.errors import ConfigError
from gym_s3.observations import EgoState
from gym_s3.scenarios import PoolConfig, ScenarioPool
from gym_s3.task import TaskConfig, TrackingTask
from gym_s3.tracks.surfaces import SurfaceLayout

DT = spec.CONTROL_DT_S
H = spec.HISTORY_STEPS
DEFAULT = spec.observation_size("default")


def _task(n: int) -> TrackingTask:
    layouts = [[SurfaceLayout.uniform("asphalt")]]
    pool = ScenarioPool.build([make_circle(60.0)], layouts, PoolConfig())
    task = TrackingTask(pool, n, TaskConfig(obs_mode="history"))
    task.reset(torch.ones(n, dtype=torch.bool), torch.Generator().manual_seed(3))
    return task


def _car(task: TrackingTask, ds: float, v_long: float, v_lat: float, yaw_rate: float) -> EgoState:
    """Every car on its reference ``ds`` metres past its arc length, with the given motion."""
    smp = task.pool.bank.sample(task.pid, task.s + ds)
    full = torch.full_like(task.s, 1.0)
    return EgoState(smp.x, smp.y, smp.heading, v_long * full, v_lat * full, yaw_rate * full)


def _frames(obs: torch.Tensor) -> torch.Tensor:
    """``(N, H, 5)`` history frames of a ``history`` observation, most recent first."""
    return obs[:, DEFAULT:].reshape(len(obs), H, spec.HISTORY_FRAME)


def test_history_appends_five_features_per_step_to_the_default_observation():
    """The mode keeps the default features and appends H steps of 3 accelerations + 2 actions."""
    default = spec.observation_features("default")
    history = spec.observation_features("history")
    assert history[:DEFAULT] == default
    names = [f.name for f in history[DEFAULT:]]
    assert names[:5] == ["accel_long_1", "accel_lat_1", "yaw_accel_1", "steer_1", "accel_1"]
    assert len(names) == 5 * H and names[-1] == f"accel_{H}"
    assert [f.unit for f in history[DEFAULT : DEFAULT + 3]] == ["m/s^2", "m/s^2", "rad/s^2"]


def test_history_holds_the_measured_accelerations_and_actions_most_recent_first():
    """Each step pushes (change of motion) / dt and the applied action; older steps shift back."""
    task = _task(2)
    obs = task.observe(_car(task, 0.0, 10.0, 0.0, 0.0))
    assert (_frames(obs) == 0).all()  # nothing has happened yet in this episode
    a1 = torch.tensor([[0.2, 0.5], [-0.1, -0.3]])
    a2 = torch.tensor([[0.4, -0.6], [0.3, 0.9]])
    task.step(_car(task, 0.5, 10.1, 0.02, 0.05), a1)
    obs = task.step(_car(task, 0.5, 10.05, 0.03, 0.01), a2).obs
    frames = _frames(obs)
    first = torch.tensor([0.1, 0.02, 0.05]) / DT
    second = torch.tensor([-0.05, 0.01, -0.04]) / DT
    torch.testing.assert_close(frames[:, 0, :3], second.expand(2, 3), atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(frames[:, 1, :3], first.expand(2, 3), atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(frames[:, 0, 3:], a2)
    torch.testing.assert_close(frames[:, 1, 3:], a1)
    assert (frames[:, 2:] == 0).all()
    # the newest action is also the default observation's previous action
    prev = spec.feature_index("prev_steer")
    torch.testing.assert_close(obs[:, prev : prev + 2], a2)


def test_history_keeps_only_the_last_steps():
    """After more than H steps the oldest frames fall off (a ring of H steps)."""
    task = _task(1)
    task.observe(_car(task, 0.0, 5.0, 0.0, 0.0))
    for k in range(H + 2):
        obs = task.step(_car(task, 0.3, 5.0, 0.0, 0.0), torch.tensor([[0.0, 0.1 * (k + 1)]])).obs
    accel = _frames(obs)[0, :, 4]
    torch.testing.assert_close(accel, torch.tensor([0.1 * (H + 2 - j) for j in range(H)]))


def test_a_reset_clears_the_history_of_the_reset_cars_only():
    """Reset cars start with an empty history measured from their first observation."""
    task = _task(2)
    task.observe(_car(task, 0.0, 8.0, 0.0, 0.0))
    task.step(_car(task, 0.4, 8.2, 0.0, 0.0), torch.tensor([[0.1, 0.2], [0.3, 0.4]]))
    kept = task.history[1].clone()
    task.reset(torch.tensor([True, False]), torch.Generator().manual_seed(4))
    assert (task.history[0] == 0).all()
    torch.testing.assert_close(task.history[1], kept)
    task.observe(_car(task, 0.0, 7.9, 0.0, 0.0))  # car 0's first sight: its base motion
    frames = _frames(task.step(_car(task, 0.2, 8.1, 0.0, 0.0), torch.zeros(2, 2)).obs)
    assert frames[0, 0, 0].item() == pytest.approx(0.2 / DT, rel=1e-4)
    assert frames[1, 0, 0].item() == pytest.approx(-0.1 / DT, rel=1e-4)  # from its last step
    assert (frames[0, 1:] == 0).all()


def test_a_car_stepped_before_it_was_observed_measures_nothing_on_its_first_step():
    """Without a first observation the task does not know the start motion: zeros, not junk."""
    task = _task(1)
    frames = _frames(task.step(_car(task, 0.2, 12.0, 0.5, 0.2), torch.ones(1, 2)).obs)
    assert (frames[0, 0, :3] == 0).all() and frames[0, 0, 3:].tolist() == [1.0, 1.0]


def test_history_observation_needs_the_history():
    """build_observation in history mode refuses a missing history."""
    from gym_s3.observations import build_observation

    n, k = 1, len(spec.LOOKAHEAD_M)
    ego = EgoState(*(torch.zeros(n) for _ in range(6)))
    z = torch.zeros(n)
    with pytest.raises(ConfigError, match="history"):
        build_observation(ego, cross_track=z, heading_err=z, speed_err=z,
                          prev_action=torch.zeros(n, 2), lookahead_x=torch.zeros(n, k),
                          lookahead_y=torch.zeros(n, k), lookahead_v=torch.zeros(n, k),
                          mode="history")  # fmt: skip
