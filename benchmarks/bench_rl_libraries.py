"""PPO training throughput of the three RL-library routes at the same N, in one process.

Same env (``S3Distilled-v0``, one backend, one track), same N, the same PPO shape for all three
(rollout of ``--rollout`` steps per car, ``--epochs`` epochs, minibatches of ``--minibatch``
frames, 64x64 tanh actor and critic), ``--iterations`` PPO iterations each:

* **TorchRL**: the project's own trainer (:func:`policies.ppo.train`) on the native ``EnvBase``;
* **skrl**: skrl's PPO + ``SequentialTrainer`` on :mod:`gym_s3.adapters.skrl`;
* **SB3**: Stable-Baselines3's PPO on :mod:`gym_s3.adapters.sb3` (numpy at the boundary).

Each row is frames / wall time of the whole run (collection + updates, first iteration
included), plus the adapter's env-only steps/s with random actions. Nothing is asserted; the
shared machine is noisy, so compare the rows of one run and state the load.

    python benchmarks/bench_rl_libraries.py --num-envs 256
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

#: env arguments shared by every route
ENV = {"backend": "bicycle", "tracks": ("putnam",), "layouts_per_track": 2,
       "max_episode_steps": 200}  # fmt: skip


def _timed(fn) -> float:
    """Wall time of ``fn()`` [s]."""
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _env_only(step, make_action, steps: int = 50) -> float:
    """Env-only steps/s of one adapter's ``step`` with pre-drawn random actions [car-steps/s]."""
    actions = [make_action() for _ in range(steps + 5)]
    for a in actions[:5]:
        step(a)
    wall = _timed(lambda: [step(a) for a in actions[5:]])
    return steps / wall


def bench_torchrl(n: int, args) -> tuple[float, float]:
    """The project's TorchRL PPO; returns (training frames/s, env-only car-steps/s)."""
    from gym_s3.adapters.torchrl import S3DistilledTorchRLEnv
    from policies.config import PPOConfig
    from policies.ppo import train

    env = S3DistilledTorchRLEnv(num_envs=n, seed=0, **ENV)
    td = env.reset()

    def step(action):
        td.set("action", action)
        env.step(td)

    env_sps = _env_only(step, lambda: torch.rand(n, 2) * 2 - 1) * n
    frames = n * args.rollout * args.iterations
    cfg = PPOConfig(backend=ENV["backend"], num_envs=n, rollout_steps=args.rollout,
                    total_frames=frames, epochs=args.epochs, minibatch_size=args.minibatch,
                    hidden=(64, 64), tracks=ENV["tracks"], max_episode_steps=200,
                    layouts_per_track=2, eval_every=0, checkpoint_every=0)  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        wall = _timed(lambda: train(cfg, tmp, progress=False))
    return frames / wall, env_sps


def bench_skrl(n: int, args) -> tuple[float, float]:
    """PPO of skrl on the skrl adapter; returns (training frames/s, env-only car-steps/s)."""
    from skrl.agents.torch.ppo import PPO, PPO_CFG
    from skrl.memories.torch import RandomMemory
    from skrl.models.torch import DeterministicMixin, GaussianMixin, Model
    from skrl.trainers.torch import SequentialTrainer
    from torch import nn

    from gym_s3.adapters.skrl import make_skrl_env

    class Policy(GaussianMixin, Model):
        def __init__(self, obs, act, device):
            Model.__init__(self, observation_space=obs, action_space=act, device=device)
            GaussianMixin.__init__(self, clip_actions=True)
            self.net = nn.Sequential(nn.Linear(self.num_observations, 64), nn.Tanh(),
                                     nn.Linear(64, 64), nn.Tanh(),
                                     nn.Linear(64, self.num_actions))  # fmt: skip
            self.log_std = nn.Parameter(torch.full((self.num_actions,), -0.7))

        def compute(self, inputs, role=""):
            return self.net(inputs["observations"]), {"log_std": self.log_std}

    class Value(DeterministicMixin, Model):
        def __init__(self, obs, act, device):
            Model.__init__(self, observation_space=obs, action_space=act, device=device)
            DeterministicMixin.__init__(self)
            self.net = nn.Sequential(nn.Linear(self.num_observations, 64), nn.Tanh(),
                                     nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 1))  # fmt: skip

        def compute(self, inputs, role=""):
            return self.net(inputs["observations"]), {}

    env = make_skrl_env(n, seed=0, **ENV)
    env.reset()
    env_sps = _env_only(env.step, lambda: torch.rand(n, 2) * 2 - 1) * n
    env = make_skrl_env(n, seed=0, **ENV)
    models = {"policy": Policy(env.observation_space, env.action_space, env.device),
              "value": Value(env.observation_space, env.action_space, env.device)}  # fmt: skip
    cfg = PPO_CFG(rollouts=args.rollout, learning_epochs=args.epochs,
                  mini_batches=max(1, n * args.rollout // args.minibatch),
                  time_limit_bootstrap=True)  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        cfg.experiment.directory = tmp
        cfg.experiment.write_interval = 0
        cfg.experiment.checkpoint_interval = 0
        agent = PPO(models=models, cfg=cfg, device=env.device,
                    memory=RandomMemory(memory_size=args.rollout, num_envs=n, device=env.device),
                    observation_space=env.observation_space,
                    action_space=env.action_space)  # fmt: skip
        trainer = SequentialTrainer(env=env, agents=agent, cfg={
            "timesteps": args.rollout * args.iterations, "headless": True,
            "disable_progressbar": True, "close_environment_at_exit": False})  # fmt: skip
        wall = _timed(trainer.train)
    return n * args.rollout * args.iterations / wall, env_sps


def bench_sb3(n: int, args) -> tuple[float, float]:
    """SB3's PPO on the SB3 adapter; returns (training frames/s, env-only car-steps/s)."""
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import VecMonitor

    from gym_s3.adapters.sb3 import make_sb3_env

    env = make_sb3_env(n, seed=0, **ENV)
    env.reset()
    env_sps = _env_only(env.step, lambda: np.random.uniform(-1, 1, (n, 2)).astype(np.float32)) * n
    env = VecMonitor(make_sb3_env(n, seed=0, **ENV))
    model = PPO("MlpPolicy", env, n_steps=args.rollout, batch_size=args.minibatch,
                n_epochs=args.epochs, device="cpu", seed=0,
                policy_kwargs={"net_arch": [64, 64], "log_std_init": -0.7})  # fmt: skip
    frames = n * args.rollout * args.iterations
    wall = _timed(lambda: model.learn(total_timesteps=frames))
    return frames / wall, env_sps


def main(argv: list[str] | None = None) -> None:
    """Parse the options and print one row per library."""
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--num-envs", type=int, default=256, help="cars N [count]")
    parser.add_argument("--rollout", type=int, default=32,
                        help="rollout: env steps per car per PPO iteration [count]")  # fmt: skip
    parser.add_argument("--epochs", type=int, default=3, help="PPO epochs per iteration [count]")
    parser.add_argument("--minibatch", type=int, default=2048,
                        help="frames per gradient step [frames]")  # fmt: skip
    parser.add_argument("--iterations", type=int, default=6,
                        help="PPO iterations of each route [count]")  # fmt: skip
    parser.add_argument("--threads", type=int, default=1, help="torch threads [count]")
    parser.add_argument("--libraries", nargs="+", default=["torchrl", "skrl", "sb3"],
                        help="routes to time, one row each (torchrl, skrl, sb3)")  # fmt: skip
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    n = args.num_envs
    print(f"N = {n}, {torch.get_num_threads()} thread(s), backend {ENV['backend']}, "
          f"load average {os.getloadavg()[0]:.1f}")  # fmt: skip
    print(f"{'library':8s} {'training':>12s} {'env-only':>12s}   [frames/s]")
    routes = {"torchrl": bench_torchrl, "skrl": bench_skrl, "sb3": bench_sb3}
    for name in args.libraries:
        train_fps, env_sps = routes[name](n, args)
        print(f"{name:8s} {train_fps:12.0f} {env_sps:12.0f}")


if __name__ == "__main__":
    main()
