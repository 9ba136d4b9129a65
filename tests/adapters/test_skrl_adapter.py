"""``S3Distilled-v0`` in skrl: the adapter's contract and a few PPO updates."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("skrl")

from skrl.agents.torch.ppo import PPO, PPO_CFG  # noqa: E402
from skrl.memories.torch import RandomMemory  # noqa: E402
from skrl.models.torch import DeterministicMixin, GaussianMixin, Model  # noqa: E402
from skrl.trainers.torch import SequentialTrainer  # noqa: E402
from torch import nn  # noqa: E402

from gym_s3.adapters.skrl import S3DistilledSkrlWrapper, make_skrl_env  # noqa: E402
from gym_s3.envs.distilled import S3DistilledBatchEnv  # noqa: E402
from gym_s3.errors import ConfigError  # noqa: E402
from gym_s3.spec import observation_size  # noqa: E402

pytestmark = pytest.mark.timeout(180)


class _Policy(GaussianMixin, Model):
    """Small Gaussian policy."""

    def __init__(self, observation_space, action_space, device):
        Model.__init__(self, observation_space=observation_space, action_space=action_space,
                       device=device)  # fmt: skip
        GaussianMixin.__init__(self, clip_actions=True)
        self.net = nn.Sequential(nn.Linear(self.num_observations, 32), nn.Tanh(),
                                 nn.Linear(32, self.num_actions))  # fmt: skip
        self.log_std = nn.Parameter(torch.full((self.num_actions,), -0.5))

    def compute(self, inputs, role=""):
        """Mean action and log standard deviation."""
        return self.net(inputs["observations"]), {"log_std": self.log_std}


class _Value(DeterministicMixin, Model):
    """Small value network."""

    def __init__(self, observation_space, action_space, device):
        Model.__init__(self, observation_space=observation_space, action_space=action_space,
                       device=device)  # fmt: skip
        DeterministicMixin.__init__(self)
        self.net = nn.Sequential(nn.Linear(self.num_observations, 32), nn.Tanh(), nn.Linear(32, 1))

    def compute(self, inputs, role=""):
        """State value."""
        return self.net(inputs["observations"]), {}


def test_wrapper_contract(small_kwargs):
    """Spaces are per car; rewards and flags come as (N, 1); episode means are logged."""
    env = make_skrl_env(4, max_episode_steps=2, seed=0, **small_kwargs)
    assert env.num_envs == 4 and env.observation_space.shape == (observation_size(),)
    obs, _ = env.reset()
    assert obs.shape == (4, observation_size())
    again, _ = env.reset()  # skrl calls reset once; later calls do not restart the cars
    assert torch.equal(obs, again)
    for _ in range(2):
        obs, reward, terminated, truncated, infos = env.step(torch.zeros(4, 2))
    assert reward.shape == terminated.shape == truncated.shape == (4, 1)
    assert truncated.all() and not terminated.any()
    assert infos["episode"]["Episode / steps"].item() == 2.0
    with pytest.raises(ConfigError, match="SAME_STEP"):
        S3DistilledSkrlWrapper(S3DistilledBatchEnv(num_envs=2, autoreset_mode="disabled",
                                                   **small_kwargs))  # fmt: skip


def test_a_few_skrl_ppo_updates(small_kwargs, tmp_path):
    """PPO from skrl trains a few rollouts on the adapter: every parameter changes."""
    torch.manual_seed(0)
    env = make_skrl_env(16, max_episode_steps=10, seed=0, **small_kwargs)
    models = {
        "policy": _Policy(env.observation_space, env.action_space, env.device),
        "value": _Value(env.observation_space, env.action_space, env.device),
    }
    cfg = PPO_CFG(rollouts=8, learning_epochs=2, mini_batches=2, time_limit_bootstrap=True)
    cfg.experiment.directory = str(tmp_path)
    cfg.experiment.write_interval = 0
    cfg.experiment.checkpoint_interval = 0
    agent = PPO(models=models, memory=RandomMemory(memory_size=8, num_envs=16, device=env.device),
                cfg=cfg, observation_space=env.observation_space, action_space=env.action_space,
                device=env.device)  # fmt: skip
    before = [p.detach().clone() for m in models.values() for p in m.parameters()]
    trainer = SequentialTrainer(env=env, agents=agent, cfg={
        "timesteps": 24, "headless": True, "disable_progressbar": True,
        "close_environment_at_exit": False})  # fmt: skip
    trainer.train()
    after = [p for m in models.values() for p in m.parameters()]
    assert all(not torch.equal(a, b.detach()) for a, b in zip(before, after, strict=True))
    assert all(bool(torch.isfinite(p).all()) for p in after)
