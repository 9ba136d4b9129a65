"""``S3Distilled-v0`` for skrl (torch-native; tensors stay on the device).

skrl's trainers expect vectorised environments that restart finished episodes by themselves
(the Isaac Lab convention). :func:`wrap_skrl` therefore wraps the batched
:class:`~gym_s3.envs.distilled.S3DistilledBatchEnv` with ``SAME_STEP`` autoreset::

    from gym_s3.adapters.skrl import make_skrl_env
    env = make_skrl_env(num_envs=4096, backend="bicycle", device="cuda")
    # ... build skrl models/agent with env.observation_space, env.action_space, env.device
    SequentialTrainer(env=env, agents=agent, cfg={"timesteps": 10_000}).train()

``step`` returns ``(obs (N, F), reward (N, 1), terminated (N, 1), truncated (N, 1), infos)``;
``terminated`` and ``truncated`` are separate, so skrl's PPO option ``time_limit_bootstrap``
bootstraps time-outs (skrl bootstraps with the value of the observation the step started from;
the true last observation is in ``infos["final_obs"]``). ``infos["episode"]`` holds the mean
``episode/*`` metrics of the cars that finished in the step (scalars, logged by skrl trainers).

Requires skrl (``pip install "skrl>=2.1,<3"``).
"""

from __future__ import annotations

from typing import Any

import gymnasium
import torch

from gym_s3._optional import require

require("skrl", purpose="the skrl adapter of S3Distilled-v0")

from skrl.envs.wrappers.torch import Wrapper  # noqa: E402

from gym_s3.adapters._batch import same_step_batch_env  # noqa: E402
from gym_s3.envs.distilled import S3DistilledBatchEnv  # noqa: E402
from gym_s3.envs.faces import is_episode_key  # noqa: E402


class S3DistilledSkrlWrapper(Wrapper):
    """skrl wrapper of a batched ``S3Distilled-v0`` env with same-step autoreset.

    Args:
        env: an :class:`~gym_s3.envs.distilled.S3DistilledBatchEnv` (possibly wrapped) whose
            ``autoreset_mode`` is ``SAME_STEP``.
    """

    def __init__(self, env: gymnasium.Env) -> None:
        same_step_batch_env(env, "skrl", "make_skrl_env")
        super().__init__(env)
        self._obs: torch.Tensor | None = None
        self._info: dict[str, Any] = {}

    @property
    def observation_space(self) -> gymnasium.Space:
        """Observation space of one car."""
        return self._unwrapped.single_observation_space

    @property
    def action_space(self) -> gymnasium.Space:
        """Action space of one car."""
        return self._unwrapped.single_action_space

    def reset(self) -> tuple[torch.Tensor, dict[str, Any]]:
        """Reset every car on the first call; later calls return the current observation."""
        if self._obs is None:
            self._obs, self._info = self._env.reset()
        return self._obs, self._info

    def step(self, actions: torch.Tensor):
        """Step every car (finished cars restart inside the step)."""
        with torch.no_grad():
            obs, reward, terminated, truncated, info = self._env.step(actions)
        done = terminated | truncated
        count = done.sum().clamp(min=1).to(reward.dtype)
        info["episode"] = {
            f"Episode / {key.removeprefix('episode/')}": (value * done).sum() / count
            for key, value in info.items()
            if is_episode_key(key) and not key.startswith("_")
        }
        self._obs, self._info = obs, info
        return obs, reward[:, None], terminated[:, None], truncated[:, None], info

    def state(self) -> torch.Tensor | None:
        """No separate critic state (the critic sees the observation)."""
        return None

    def render(self, *args: Any, **kwargs: Any) -> Any:
        """Frame of the env's ``render_envs`` (``None`` without ``render_mode``)."""
        return self._env.render() if self._unwrapped.render_mode else None

    def close(self) -> None:
        """Close the env."""
        self._env.close()


def wrap_skrl(env: gymnasium.Env) -> S3DistilledSkrlWrapper:
    """Wrap a batched ``S3Distilled-v0`` env for skrl."""
    return S3DistilledSkrlWrapper(env)


def make_skrl_env(num_envs: int, **kwargs: Any) -> S3DistilledSkrlWrapper:
    """Build a batched ``S3Distilled-v0`` env (same-step autoreset) wrapped for skrl.

    Args:
        num_envs: number of cars N.
        **kwargs: env arguments (see :meth:`gym_s3.envs.config.DistilledConfig.from_kwargs`).
    """
    return S3DistilledSkrlWrapper(S3DistilledBatchEnv(num_envs=num_envs, **kwargs))
