"""``S3BeamNG-v0``'s lap time limit: derived from the reference lap, or ``max_episode_steps``."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

pytest.importorskip("beamngpy")

from path_helpers import make_circle  # noqa: E402

import gym_s3  # noqa: E402, F401  (registers the ids)
from gym_s3.envs.beamng import BeamNGEnvConfig, S3BeamNGEnv  # noqa: E402
from gym_s3.errors import ConfigError  # noqa: E402
from gym_s3.task import lap_task  # noqa: E402

pytestmark = pytest.mark.timeout(240)


def _limit(env: gym.Env) -> int:
    """The step limit the env's task gives the next episode (no simulator needed)."""
    task = env.unwrapped.task
    task.reset(torch.ones(1, dtype=torch.bool), torch.Generator())
    return int(task.limit[0])


def test_lap_limit_follows_the_surface_and_gym_make_max_episode_steps_replaces_it():
    """Ice gets a longer lap limit than asphalt; ``gym.make(max_episode_steps=N)`` sets N.

    N above the derived limit is the case Gymnasium's own TimeLimit wrapper used to swallow.
    """
    dry = _limit(gym.make("S3BeamNG-v0", surface="asphalt"))
    ice = _limit(gym.make("S3BeamNG-v0", surface="ice"))
    assert 3000 < dry < ice  # 2x the reference lap: ~236 s dry, ~644 s on ice
    for n in (7, ice + 5000):
        env = gym.make("S3BeamNG-v0", surface="ice", max_episode_steps=n)
        assert _limit(env) == n and env.unwrapped.config.task.time_limit_factor is None
    assert _limit(S3BeamNGEnv(surface="ice", max_episode_steps=11)) == 11
    with pytest.raises(ConfigError, match="max_episode_steps"):
        S3BeamNGEnv(max_episode_steps=0)


@pytest.mark.slow  # ~20 s of stand-in steps; the test above pins the limit itself
def test_gym_make_max_episode_steps_past_the_derived_limit_is_driven_to_the_end():
    """On a tiny circle the lap limit is short; N beyond it still ends exactly at step N."""
    config = BeamNGEnvConfig(task=lap_task(stall_time_s=None))
    probe = S3BeamNGEnv(config=config, reference=make_circle(5.0), standin=True)
    n = _limit(probe) + 10
    env = gym.make("S3BeamNG-v0", config=config, reference=make_circle(5.0), standin=True,
                   max_episode_steps=n)  # fmt: skip
    try:
        env.reset(seed=0)
        for k in range(n):
            _, _, terminated, truncated, info = env.step(np.zeros(2, dtype=np.float32))
            assert not terminated and truncated == (k == n - 1)
        assert info["episode/steps"] == n
    finally:
        env.close()
