"""``S3Distilled-v0`` for Stable-Baselines3: a ``VecEnv`` over the batched env.

SB3 trains on its own :class:`~stable_baselines3.common.vec_env.VecEnv` (numpy arrays, one info
dict per car), not on a gymnasium ``VectorEnv``. :class:`S3DistilledSB3VecEnv` drives the N cars
of one batched :class:`~gym_s3.envs.distilled.S3DistilledBatchEnv` (same-step autoreset) and
converts at the boundary only::

    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import VecMonitor
    from gym_s3.adapters.sb3 import make_sb3_env

    env = VecMonitor(make_sb3_env(num_envs=64, backend="ddm"))  # VecMonitor: ep_rew_mean logs
    PPO("MlpPolicy", env, n_steps=128, batch_size=2048).learn(200_000)

SB3's conventions, as its own ``DummyVecEnv`` keeps them:

* ``step_wait`` returns ``obs (N, F) float32``, ``rewards (N,) float32``, ``dones (N,) bool``
  (terminated or truncated) and a list of N info dicts;
* a finished car restarts inside the step; its returned observation is the first of the new
  episode, and its info holds ``"terminal_observation"`` (the last observation, ``(F,)``),
  ``"TimeLimit.truncated"`` (``True`` when the time limit, not a termination, ended it, so SB3's
  PPO bootstraps through it) and the ``episode/<metric>`` summaries as Python floats;
* the info dicts of cars that did not finish are empty (building N full dicts every step would
  cost more than the env).

Actions arrive as numpy ``(N, 2)`` arrays and are moved to the env's device; observations are
copied back to host memory once per step. Requires ``stable-baselines3``
(``pip install "sim2sim2sim[sb3]"``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import gymnasium
import numpy as np
import torch

from gym_s3._optional import require

require("stable_baselines3", purpose="the Stable-Baselines3 adapter of S3Distilled-v0")

from stable_baselines3.common.vec_env.base_vec_env import VecEnv  # noqa: E402

from gym_s3.adapters._batch import same_step_batch_env  # noqa: E402
from gym_s3.envs.distilled import S3DistilledBatchEnv  # noqa: E402
from gym_s3.envs.faces import is_episode_key  # noqa: E402
from gym_s3.errors import ConfigError  # noqa: E402

__all__ = ["S3DistilledSB3VecEnv", "make_sb3_env"]


class S3DistilledSB3VecEnv(VecEnv):
    """SB3 ``VecEnv`` of the N cars of one batched ``S3Distilled-v0`` env.

    Args:
        env: an :class:`~gym_s3.envs.distilled.S3DistilledBatchEnv` (possibly wrapped) whose
            ``autoreset_mode`` is ``SAME_STEP``.
    """

    def __init__(self, env: gymnasium.Env) -> None:
        base = same_step_batch_env(env, "Stable-Baselines3", "make_sb3_env")
        self.env = env
        self._base = base
        super().__init__(base.num_envs, base.single_observation_space, base.single_action_space)
        self._actions: torch.Tensor | None = None

    @property
    def device(self) -> torch.device:
        """Device of the env's tensors."""
        return self._base.device

    def reset(self) -> np.ndarray:
        """Reset every car; returns ``(N, F)`` float32 observations.

        The seed of :meth:`seed` (SB3 keeps one per car; the batched env takes the first) is
        used once, then cleared, as SB3's own vector envs do.
        """
        seed = self._seeds[0] if self._seeds else None
        obs, info = self.env.reset(seed=seed)
        self._reset_seeds()
        self._reset_options()
        self.reset_infos = [{} for _ in range(self.num_envs)]
        return _host(obs)

    def step_async(self, actions: np.ndarray) -> None:
        """Store the ``(N, 2)`` actions for :meth:`step_wait`."""
        self._actions = torch.as_tensor(
            np.asarray(actions, dtype=np.float32), device=self.device
        ).reshape(self.num_envs, -1)

    def step_wait(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict[str, Any]]]:
        """Step every car; see the module docstring for the returned values."""
        if self._actions is None:
            raise ConfigError("step_wait() called before step_async(actions)")
        with torch.no_grad():
            obs, reward, terminated, truncated, info = self.env.step(self._actions)
        self._actions = None
        done = terminated | truncated
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        finished = torch.nonzero(done).flatten().tolist()
        if finished:
            self._fill_final_infos(infos, finished, info, terminated, truncated)
        return (
            _host(obs),
            _host(reward),
            done.cpu().numpy(),
            infos,
        )

    @staticmethod
    def _fill_final_infos(
        infos: list[dict[str, Any]],
        finished: list[int],
        info: dict[str, torch.Tensor],
        terminated: torch.Tensor,
        truncated: torch.Tensor,
    ) -> None:
        """Write SB3's end-of-episode keys into the info dicts of the ``finished`` cars."""
        rows = torch.tensor(finished, device=terminated.device)
        final_obs = _host(info["final_obs"].index_select(0, rows))
        time_limit = (truncated & ~terminated).index_select(0, rows).cpu().tolist()
        episode = {
            key: value.index_select(0, rows).detach().cpu().tolist()
            for key, value in info.items()
            if is_episode_key(key) and not key.startswith("_") and value.ndim == 1
        }
        for j, car in enumerate(finished):
            entry = infos[car]
            entry["terminal_observation"] = final_obs[j]
            entry["TimeLimit.truncated"] = bool(time_limit[j])
            for key, values in episode.items():
                entry[key] = float(values[j])

    def close(self) -> None:
        """Close the env."""
        self.env.close()

    def render(self, mode: str | None = None) -> np.ndarray | None:
        """Frame of the env's ``render_envs`` (``None`` without ``render_mode="rgb_array"``)."""
        return self.env.render() if self.render_mode else None

    def get_images(self) -> Sequence[np.ndarray | None]:
        """One tiled frame of the env's ``render_envs`` (not one image per car)."""
        return [self.render()]

    # The batched env is one object, not N: attribute access answers for all cars at once.
    def get_attr(self, attr_name: str, indices: Any = None) -> list[Any]:
        """The env's attribute ``attr_name``, repeated for each requested car."""
        value = getattr(self.env, attr_name)
        return [value for _ in self._indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:
        """Set ``attr_name`` on the env (shared by all cars; ``indices`` must cover all)."""
        self._whole_batch(indices, f"set_attr({attr_name!r})")
        setattr(self.env, attr_name, value)

    def env_method(
        self, method_name: str, *method_args: Any, indices: Any = None, **method_kwargs: Any
    ) -> list[Any]:
        """Call ``method_name`` once on the env (``indices`` must cover all cars)."""
        self._whole_batch(indices, f"env_method({method_name!r})")
        result = getattr(self.env, method_name)(*method_args, **method_kwargs)
        return [result for _ in range(self.num_envs)]

    def env_is_wrapped(self, wrapper_class: type, indices: Any = None) -> list[bool]:
        """Whether the env is wrapped by ``wrapper_class`` (same answer for every car)."""
        env, wrapped = self.env, False
        while isinstance(env, gymnasium.Wrapper):
            wrapped = wrapped or isinstance(env, wrapper_class)
            env = env.env
        return [wrapped for _ in self._indices(indices)]

    def _indices(self, indices: Any) -> Iterable[int]:
        """SB3's ``indices`` argument as a list of car indices."""
        if indices is None:
            return range(self.num_envs)
        if isinstance(indices, int):
            return [indices]
        return list(indices)

    def _whole_batch(self, indices: Any, what: str) -> None:
        """Refuse per-car calls: the cars share one env object."""
        if indices is not None and sorted(self._indices(indices)) != list(range(self.num_envs)):
            raise ConfigError(
                f"{what} on a subset of cars is not possible: the {self.num_envs} cars share "
                "one batched env; call it without indices"
            )


def _host(t: torch.Tensor) -> np.ndarray:
    """A host float32 numpy copy of a tensor (the env may reuse its buffers next step)."""
    return t.detach().to("cpu", torch.float32).numpy().copy()


def make_sb3_env(num_envs: int, **kwargs: Any) -> S3DistilledSB3VecEnv:
    """Build a batched ``S3Distilled-v0`` env (same-step autoreset) as an SB3 ``VecEnv``.

    Args:
        num_envs: number of cars N.
        **kwargs: env arguments (see :meth:`gym_s3.envs.config.DistilledConfig.from_kwargs`).
    """
    return S3DistilledSB3VecEnv(S3DistilledBatchEnv(num_envs=num_envs, **kwargs))
