"""API of the three ``S3Distilled-v0`` faces: types, spaces, return types, check_env."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium.utils.env_checker import check_env
from gymnasium.vector import AutoresetMode, VectorEnv

import gym_s3  # noqa: F401  (registers the ids)
from gym_s3 import spec
from gym_s3.envs.distilled import S3DistilledBatchEnv, S3DistilledEnv, S3DistilledVectorEnv
from gym_s3.errors import ConfigError

pytestmark = pytest.mark.timeout(120)


def test_single_env_passes_gymnasium_check_env(small_kwargs):
    """gym.make with num_envs=1 gives a plain gym.Env that passes Gymnasium's env checker."""
    env = gym.make("S3Distilled-v0", render_mode="rgb_array", seed=0, **small_kwargs)
    assert isinstance(env.unwrapped, S3DistilledEnv)
    check_env(env.unwrapped)


def test_make_returns_the_batched_env_and_make_vec_a_vector_env(small_kwargs):
    """gym.make(num_envs=N > 1) is the batched torch env, gym.make_vec a real VectorEnv."""
    batched = gym.make("S3Distilled-v0", num_envs=6, **small_kwargs)
    assert isinstance(batched.unwrapped, S3DistilledBatchEnv)
    assert isinstance(batched.unwrapped, gym.Env)
    assert batched.unwrapped.num_envs == 6
    vec = gym.make_vec("S3Distilled-v0", num_envs=6, **small_kwargs)
    assert isinstance(vec, S3DistilledVectorEnv)
    assert isinstance(vec, VectorEnv)
    assert vec.autoreset_mode == AutoresetMode.DISABLED
    assert vec.metadata["autoreset_mode"] == AutoresetMode.DISABLED


@pytest.mark.parametrize("obs_mode", ["default", "oracle", "history"])
def test_spaces_are_the_spec_spaces(small_kwargs, obs_mode):
    """Every face builds its spaces from gym_s3.spec (single and batched)."""
    single = gym.make("S3Distilled-v0", obs_mode=obs_mode, **small_kwargs)
    assert single.observation_space == spec.single_observation_space(obs_mode)
    assert single.action_space == spec.single_action_space()
    for env in (
        gym.make("S3Distilled-v0", num_envs=3, obs_mode=obs_mode, **small_kwargs).unwrapped,
        gym.make_vec("S3Distilled-v0", num_envs=3, obs_mode=obs_mode, **small_kwargs),
    ):
        assert env.single_observation_space == spec.single_observation_space(obs_mode)
        assert env.single_action_space == spec.single_action_space()
        assert env.observation_space == spec.batched_observation_space(obs_mode, 3)
        assert env.action_space == spec.batched_action_space(3)


def test_spaces_equal_those_of_s3beamng(small_kwargs):
    """The distilled env and the BeamNG env expose identical spaces in every observation mode."""
    pytest.importorskip("beamngpy")
    for mode in spec.OBS_MODES:
        beamng = gym.make("S3BeamNG-v0", obs_mode=mode)
        distilled = gym.make("S3Distilled-v0", obs_mode=mode, **small_kwargs)
        assert distilled.observation_space == beamng.observation_space
        assert distilled.action_space == beamng.action_space


def test_single_env_returns_fresh_numpy_arrays(small_kwargs):
    """Observations are new float32 arrays every call (no shared buffers) inside the space."""
    env = gym.make("S3Distilled-v0", seed=1, **small_kwargs)
    obs0, info = env.reset(seed=1)
    assert isinstance(info["scenario"], int)
    obs1, reward, terminated, truncated, info = env.step(np.zeros(2, dtype=np.float32))
    assert obs0.dtype == obs1.dtype == np.float32
    assert not np.shares_memory(obs0, obs1)
    assert env.observation_space.contains(obs0) and env.observation_space.contains(obs1)
    assert isinstance(reward, float) and isinstance(terminated, bool)
    assert isinstance(info["reward/progress"], float)
    assert info["episode/steps"] == 1.0  # running summary of the episode so far
    assert env.unwrapped.reference.num_samples > 2
    assert env.unwrapped.layout in env.unwrapped.core.pool.layouts


def test_batched_env_returns_torch_tensors(small_kwargs):
    """The batched face returns (N, ...) tensors on its device, with per-key info masks."""
    env = gym.make("S3Distilled-v0", num_envs=5, seed=2, **small_kwargs)
    obs, info = env.reset()
    assert isinstance(obs, torch.Tensor) and obs.shape == (5, spec.observation_size())
    obs, reward, terminated, truncated, info = env.step(torch.zeros(5, 2))
    assert obs.dtype == torch.float32 and reward.shape == (5,) and reward.dtype == torch.float32
    assert terminated.dtype == torch.bool and truncated.shape == (5,)
    assert info["reward/progress"].shape == (5,)
    assert bool(info["_reward/progress"].all())
    done = terminated | truncated
    assert torch.equal(info["_episode/cte_mean"], done)
    assert torch.equal(info["_final_obs"], done)


def test_vector_env_returns_numpy_or_torch(small_kwargs):
    """The vector face follows gymnasium conventions in numpy, or returns tensors on request."""
    env = gym.make_vec("S3Distilled-v0", num_envs=4, **small_kwargs)
    obs, info = env.reset(seed=0)
    assert isinstance(obs, np.ndarray) and obs.shape == (4, spec.observation_size())
    assert info["_scenario"].all()
    obs, reward, terminated, truncated, infos = env.step(env.action_space.sample())
    assert env.observation_space.contains(obs)
    assert isinstance(reward, np.ndarray) and terminated.dtype == np.bool_
    assert infos["cross_track_error"].shape == (4,) and infos["_cross_track_error"].all()
    tenv = gym.make_vec("S3Distilled-v0", num_envs=4, array_type="torch", **small_kwargs)
    tobs, _ = tenv.reset(seed=0)
    assert isinstance(tobs, torch.Tensor)
    np.testing.assert_array_equal(tobs.numpy(), env.reset(seed=0)[0])


def test_unknown_arguments_are_refused_with_the_valid_list(small_kwargs):
    """A misspelt keyword names itself and lists the valid ones."""
    with pytest.raises(ConfigError, match=r"unknown S3Distilled-v0 argument.*max_episode_steps"):
        gym.make("S3Distilled-v0", max_episode_step=10, **small_kwargs)
    with pytest.raises(ConfigError, match="autoreset_mode"):
        gym.make("S3Distilled-v0", num_envs=2, autoreset_mode="next_step", **small_kwargs)
    with pytest.raises(ConfigError, match="render_envs"):
        gym.make("S3Distilled-v0", num_envs=2, render_envs=[5], **small_kwargs)
    with pytest.raises(ConfigError, match="num_envs"):
        S3DistilledBatchEnv(num_envs=0, **small_kwargs)


def test_step_before_reset_is_refused(small_kwargs):
    """The batched face refuses to step cars that were never reset."""
    env = S3DistilledBatchEnv(num_envs=2, **small_kwargs)
    with pytest.raises(gym.error.ResetNeeded):
        env.step(torch.zeros(2, 2))
