"""What ``info["episode/<metric>"]`` is in every face (as the README states it).

* Single-car faces (``S3Distilled-v0`` with one car, ``S3BeamNG-v0``): every step carries the
  summary of the episode so far, so the step that ends the episode carries its final metrics.
* Batched and vector faces: the ``(N,)`` summaries are valid only where ``info["_episode/..."]``
  is true, i.e. for the cars whose episode ended in that step.
* TorchRL adapter: ``episode_stats`` valid where ``done`` (tests/adapters).
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

from gym_s3.envs.distilled import S3DistilledBatchEnv, S3DistilledEnv

pytestmark = pytest.mark.timeout(240)
STEPS = 4


def _single_env(face: str, small_kwargs: dict):
    if face == "distilled":  # gym.make would read max_episode_steps as a TimeLimit
        return S3DistilledEnv(max_episode_steps=STEPS, seed=0, **small_kwargs)
    pytest.importorskip("beamngpy")
    from gym_s3.envs.beamng import BeamNGEnvConfig, S3BeamNGEnv
    from gym_s3.task import lap_task

    config = BeamNGEnvConfig(task=lap_task(max_episode_steps=STEPS))
    return S3BeamNGEnv(config=config, standin=True)


@pytest.mark.parametrize("face", ["distilled", "beamng"])
def test_single_car_faces_report_the_episode_so_far(face, small_kwargs):
    """Each step's ``episode/*`` summarises the steps so far; the last step's is the episode's."""
    env = _single_env(face, small_kwargs)
    try:
        env.reset(seed=0)
        cte, speed_err = [], []
        for k in range(1, STEPS + 1):
            _, _, terminated, truncated, info = env.step(np.array([0.2, 0.5], dtype=np.float32))
            cte.append(abs(info["cross_track_error"]))
            speed_err.append(abs(info["speed_error"]))
            assert info["episode/steps"] == k
            assert info["episode/cte_mean"] == pytest.approx(np.mean(cte), rel=1e-4, abs=1e-6)
            assert info["episode/cte_max"] == pytest.approx(max(cte), rel=1e-4, abs=1e-6)
            assert info["episode/speed_error_mean"] == pytest.approx(np.mean(speed_err), rel=1e-4)
            assert (terminated or truncated) == (k == STEPS)
    finally:
        env.close()


@pytest.mark.parametrize("face", ["batched", "vector"])
def test_batched_faces_mark_episode_keys_valid_where_done(face, small_kwargs):
    """``_episode/*`` is the done mask; the valid values are the finished episodes' totals."""
    n = 3
    kwargs = dict(num_envs=n, max_episode_steps=STEPS, seed=0, **small_kwargs)
    if face == "batched":
        env = S3DistilledBatchEnv(**kwargs)
    else:
        env = gym.make_vec("S3Distilled-v0", array_type="torch", **kwargs)
    env.reset(seed=0)
    for k in range(1, STEPS + 1):
        _, _, terminated, truncated, info = env.step(torch.zeros(n, 2))
        done = terminated | truncated
        for key in ("episode/cte_mean", "episode/steps", "episode/completion"):
            assert torch.equal(torch.as_tensor(info[f"_{key}"]), done), key
        assert bool(done.all()) == (k == STEPS)
        assert torch.equal(info["episode/steps"][done], torch.full((int(done.sum()),), STEPS * 1.0))
    env.close()
