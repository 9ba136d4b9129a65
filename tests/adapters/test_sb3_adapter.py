"""``S3Distilled-v0`` in Stable-Baselines3: the adapter's conventions and a short PPO run."""

from __future__ import annotations

import numpy as np
import pytest
import torch

pytest.importorskip("stable_baselines3")

from stable_baselines3 import PPO  # noqa: E402
from stable_baselines3.common.vec_env import VecMonitor  # noqa: E402

from gym_s3.adapters.sb3 import S3DistilledSB3VecEnv, make_sb3_env  # noqa: E402
from gym_s3.envs.distilled import S3DistilledBatchEnv  # noqa: E402
from gym_s3.errors import ConfigError  # noqa: E402
from gym_s3.spec import observation_size  # noqa: E402

pytestmark = pytest.mark.timeout(180)


def test_autoreset_terminal_observation_and_time_limit(small_kwargs):
    """A car that ends restarts in the step; its last observation and time-limit flag are kept."""
    env = make_sb3_env(4, max_episode_steps=3, seed=0, **small_kwargs)
    twin = S3DistilledBatchEnv(num_envs=4, autoreset_mode="disabled", max_episode_steps=3, seed=0,
                               **small_kwargs)  # fmt: skip
    assert env.num_envs == 4 and env.observation_space.shape == (observation_size(),)
    first = env.reset()
    assert first.shape == (4, observation_size()) and first.dtype == np.float32
    np.testing.assert_array_equal(first, twin.reset(seed=0)[0].numpy())
    throttle = np.tile(np.array([[0.3, 1.0]], np.float32), (4, 1))
    for _ in range(3):
        obs, rewards, dones, infos = env.step(throttle)
        last = twin.step(torch.from_numpy(throttle))[0].numpy()
    assert rewards.shape == dones.shape == (4,) and dones.dtype == bool
    assert dones.all(), "every car reaches the 3-step time limit together"
    for car, info in enumerate(infos):
        assert info["TimeLimit.truncated"] is True
        # the terminal observation is where the car ended (the twin without autoreset) ...
        np.testing.assert_allclose(info["terminal_observation"], last[car], rtol=1e-6)
        # ... and the returned observation already starts the next episode
        assert not np.allclose(info["terminal_observation"], obs[car])
        assert info["episode/steps"] == 3.0
    # cars that did not finish carry empty infos
    _, _, dones, infos = env.step(throttle)
    assert not dones.any() and all(info == {} for info in infos)


def test_terminated_is_not_time_limit(small_kwargs):
    """A car leaving the road ends with ``TimeLimit.truncated`` False (no bootstrap)."""
    env = make_sb3_env(2, max_episode_steps=400, seed=0, **small_kwargs)
    env.reset()
    hard_right = np.tile(np.array([[1.0, 1.0]], np.float32), (2, 1))
    for _ in range(400):
        _, _, dones, infos = env.step(hard_right)
        if dones.any():
            break
    assert dones.any(), "full throttle and full lock leave the road within 20 s"
    for car in np.flatnonzero(dones):
        assert infos[car]["TimeLimit.truncated"] is False


def test_refuses_envs_it_cannot_drive(small_kwargs):
    """DISABLED autoreset and per-car attribute writes are refused with a clear message."""
    with pytest.raises(ConfigError, match="SAME_STEP"):
        S3DistilledSB3VecEnv(S3DistilledBatchEnv(num_envs=2, autoreset_mode="disabled",
                                                 **small_kwargs))  # fmt: skip
    env = make_sb3_env(2, **small_kwargs)
    assert env.get_attr("num_envs") == [2, 2]
    with pytest.raises(ConfigError, match="subset of cars"):
        env.set_attr("render_envs", (0,), indices=[1])


def test_sb3_ppo_learns_through_the_adapter(small_kwargs):
    """SB3's PPO trains 12 k steps on 32 cars: the return of the same starts goes up clearly."""
    torch.manual_seed(0)
    env = VecMonitor(make_sb3_env(32, backend="bicycle", max_episode_steps=64, seed=0,
                                  **small_kwargs))  # fmt: skip

    judge = S3DistilledBatchEnv(num_envs=32, backend="bicycle", max_episode_steps=64,
                                **small_kwargs)  # fmt: skip

    def mean_return(model: PPO) -> float:
        """Mean return of one deterministic 64-step episode from the same 32 starts.

        Measured on the batched env itself, not through the adapter, so an adapter that
        garbles rewards or observations fails here instead of grading itself.
        """
        obs, _ = judge.reset(seed=123)
        total = torch.zeros(32)
        for _ in range(64):
            action, _ = model.predict(obs.numpy(), deterministic=True)
            obs, reward, _, _, _ = judge.step(torch.from_numpy(action))
            total += reward
        return float(total.mean())

    model = PPO("MlpPolicy", env, n_steps=64, batch_size=512, n_epochs=5, seed=0, device="cpu",
                policy_kwargs={"net_arch": [64, 64], "log_std_init": -1.0})  # fmt: skip
    before = mean_return(model)
    model.learn(total_timesteps=3 * 4096)
    after = mean_return(model)
    assert len(model.ep_info_buffer) > 0, "VecMonitor saw finished episodes through the adapter"
    # measured: -11.3 before, -1.3 after (a random-init policy leaves the lane; 3 k-step runs
    # gain about 3-4 per 4 k steps)
    assert after > before + 5.0, f"return per episode did not improve: {before:.2f} -> {after:.2f}"
