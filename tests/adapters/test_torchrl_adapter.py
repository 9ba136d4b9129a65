"""``S3Distilled-v0`` in TorchRL: native EnvBase adapter, GymWrapper on the vector face, PPO."""

from __future__ import annotations

import gymnasium as gym
import pytest
import torch

pytest.importorskip("torchrl")

from tensordict.nn import NormalParamExtractor, TensorDictModule  # noqa: E402
from torch import nn  # noqa: E402
from torchrl.collectors import Collector  # noqa: E402
from torchrl.envs import GymWrapper  # noqa: E402
from torchrl.envs.utils import check_env_specs  # noqa: E402
from torchrl.modules import MLP, ProbabilisticActor, TanhNormal, ValueOperator  # noqa: E402
from torchrl.objectives import ClipPPOLoss  # noqa: E402
from torchrl.objectives.value import GAE  # noqa: E402

import gym_s3  # noqa: E402, F401
from gym_s3.adapters.torchrl import S3DistilledTorchRLEnv  # noqa: E402
from gym_s3.spec import observation_size  # noqa: E402

pytestmark = pytest.mark.timeout(180)


def test_native_env_passes_check_env_specs(small_kwargs):
    """The native adapter's specs match what it returns (TorchRL's own checker)."""
    env = S3DistilledTorchRLEnv(num_envs=4, seed=0, **small_kwargs)
    check_env_specs(env)
    assert env.batch_size == torch.Size([4])
    assert env.observation_spec["observation"].shape == (4, observation_size())
    for mode in ("oracle", "history"):
        check_env_specs(S3DistilledTorchRLEnv(num_envs=2, obs_mode=mode, **small_kwargs))


def test_native_partial_reset_resets_only_flagged_cars(small_kwargs):
    """A `_reset` mask restarts only its cars; the others keep their observation and steps."""
    env = S3DistilledTorchRLEnv(num_envs=4, seed=0, **small_kwargs)
    td = env.reset()
    for _ in range(3):
        td = env.step(td.set("action", torch.zeros(4, 2)))["next"]
    before = td["observation"].clone()
    flags = torch.tensor([[True], [False], [False], [True]])
    out = env.reset(td.clone().set("_reset", flags))
    assert env.core.task.steps.tolist() == [0, 3, 3, 0]
    assert torch.equal(out["observation"][1:3], before[1:3])
    assert torch.equal(env.core.obs[1:3], before[1:3])
    assert not torch.equal(out["observation"][0], before[0])


def test_rollout_reports_truncation_separately(small_kwargs):
    """Rollouts across time limits flag truncated (not terminated) and restart the cars."""
    env = S3DistilledTorchRLEnv(num_envs=3, max_episode_steps=5, seed=1, **small_kwargs)
    data = env.rollout(12, break_when_any_done=False)
    assert data.batch_size == torch.Size([3, 12])
    truncated = data["next", "truncated"][..., 0]
    assert truncated[:, 4].all() and truncated[:, 9].all()
    assert not data["next", "terminated"].any()
    assert int(env.core.task.steps.max()) <= 5


def test_gym_wrapper_on_the_vector_face_with_disabled_autoreset(small_kwargs):
    """GymWrapper(gym.make_vec(...)) works: specs check out and partial resets go through."""
    vec = gym.make_vec("S3Distilled-v0", num_envs=4, max_episode_steps=4, **small_kwargs)
    env = GymWrapper(vec)
    assert env.batch_size == torch.Size([4])
    check_env_specs(env)
    env.set_seed(0)
    data = env.rollout(10, break_when_any_done=False)
    assert data["next", "truncated"][:, 3].all()
    assert int(vec.core.task.steps.max()) <= 4  # finished cars were reset through reset_mask
    assert data["next", "observation"].shape == (4, 10, observation_size())


@pytest.mark.parametrize("route", ["native", "gym_wrapper"])
def test_a_few_ppo_updates(small_kwargs, route):
    """Collector + GAE + ClipPPOLoss run a few updates on both TorchRL routes.

    Native ``EnvBase`` and ``GymWrapper(gym.make_vec(...))``: finite losses, every parameter
    changes, and the time limit is hit inside the run.
    """
    torch.manual_seed(0)
    n, horizon = 16, 8
    if route == "native":
        env = S3DistilledTorchRLEnv(num_envs=n, max_episode_steps=6, seed=0, **small_kwargs)
    else:
        vec = gym.make_vec("S3Distilled-v0", num_envs=n, max_episode_steps=6, seed=0,
                           **small_kwargs)  # fmt: skip
        env = GymWrapper(vec)
    obs_dim = observation_size()
    actor_net = nn.Sequential(MLP(in_features=obs_dim, out_features=4, depth=2, num_cells=32),
                              NormalParamExtractor())  # fmt: skip
    actor = ProbabilisticActor(
        TensorDictModule(actor_net, in_keys=["observation"], out_keys=["loc", "scale"]),
        spec=env.full_action_spec_unbatched,
        in_keys=["loc", "scale"],
        distribution_class=TanhNormal,
        distribution_kwargs={"low": -1.0, "high": 1.0},
        return_log_prob=True,
    )
    critic = ValueOperator(MLP(in_features=obs_dim, out_features=1, depth=2, num_cells=32),
                           in_keys=["observation"])  # fmt: skip
    advantage = GAE(gamma=0.99, lmbda=0.95, value_network=critic, average_gae=True)
    loss_fn = ClipPPOLoss(actor, critic, clip_epsilon=0.2, entropy_coeff=1e-3)
    optim = torch.optim.Adam(loss_fn.parameters(), lr=3e-4)
    before = [p.detach().clone() for p in loss_fn.parameters()]
    collector = Collector(env, actor, frames_per_batch=n * horizon, total_frames=3 * n * horizon,
                          auto_register_policy_transforms=False)  # fmt: skip
    batches = 0
    for data in collector:
        assert data.batch_size == torch.Size([n, horizon])
        with torch.no_grad():
            advantage(data)
        flat = data.reshape(-1)
        for _ in range(2):
            losses = loss_fn(flat)
            total = losses["loss_objective"] + losses["loss_critic"] + losses["loss_entropy"]
            assert torch.isfinite(total)
            optim.zero_grad()
            total.backward()
            optim.step()
        batches += 1
    collector.shutdown()
    assert batches == 3
    assert data["next", "truncated"].any()  # the time limit was hit inside the run
    after = list(loss_fn.parameters())
    assert all(not torch.equal(a, b.detach()) for a, b in zip(before, after, strict=True))


def test_episode_stats_report_each_finished_episode(small_kwargs):
    """``episode_stats`` carries the task's episode summary and end reason where a car is done.

    The cars steer hard left, hard right, straight, and brake, with a 5-step time limit: every
    car that is done either terminated with exactly one reported reason or timed out.
    """
    from gym_s3.adapters.torchrl import END_FLAGS, EPISODE_FIELDS

    env = S3DistilledTorchRLEnv(num_envs=4, max_episode_steps=5, seed=3, **small_kwargs)
    td = env.reset()
    assert td["episode_stats"].shape == (4, len(EPISODE_FIELDS))
    assert not td["episode_stats"].any()  # nothing ended yet
    col = {name: i for i, name in enumerate(EPISODE_FIELDS)}
    seen_done = 0
    for _ in range(5):
        action = torch.tensor([[1.0, 1.0], [-1.0, 1.0], [0.0, 0.0], [0.0, -1.0]])
        out = env.step(td.set("action", action))["next"]
        info = env.core.task.stats.summary()
        done = out["done"][:, 0]
        stats = out["episode_stats"]
        assert torch.allclose(stats[:, col["steps"]], info["steps"].float())
        assert torch.allclose(stats[:, col["cte_mean"]], info["cte_mean"].float())
        reasons = stats[:, [col[r] for r in END_FLAGS]]
        ended = reasons.any(-1) | out["truncated"][:, 0]
        assert torch.equal(ended, done)  # every end has exactly one reported cause
        assert torch.equal(reasons.any(-1), out["terminated"][:, 0])
        seen_done += int(done.sum())
        td = out
    assert seen_done >= 4  # every car finished by step 5
