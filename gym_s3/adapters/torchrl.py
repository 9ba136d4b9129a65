"""``S3Distilled-v0`` as a native TorchRL :class:`~torchrl.envs.EnvBase` (tensors stay on device).

``S3DistilledTorchRLEnv(num_envs=4096, device="cuda", backend="trans")`` has ``batch_size``
``[N]`` and the specs of :func:`gym_s3.spec.torchrl_specs`: ``observation`` ``(N, F)``,
``action`` ``(N, 2)`` in ``[-1, 1]``, ``reward`` ``(N, 1)`` and ``done``/``terminated``/
``truncated`` ``(N, 1)`` bool; plus ``episode_stats`` ``(N, K)`` float32, the summary of each
car's episode (columns :data:`EPISODE_FIELDS`), valid only where ``done`` (zeros after a
reset). Partial resets (``"_reset"`` in the input tensordict, as sent by collectors) reset only
those cars, through the same sync-free core as the Gymnasium faces.
Truncation (time limit) is reported separately from termination, so value targets can bootstrap
through it.

Requires the ``rl`` extra (``pip install "sim2sim2sim[rl]"``: torchrl 0.14.1, tensordict 0.14).

Alternatively, TorchRL's ``GymWrapper`` works on the vector face with DISABLED autoreset::

    GymWrapper(gym.make_vec("S3Distilled-v0", num_envs=N), device="cpu")
"""

from __future__ import annotations

from typing import Any

import torch

from gym_s3._optional import require

require("torchrl", purpose="the TorchRL adapter of S3Distilled-v0")
require("tensordict", purpose="the TorchRL adapter of S3Distilled-v0")

from tensordict import TensorDict, TensorDictBase  # noqa: E402
from torchrl.data import Unbounded  # noqa: E402
from torchrl.envs import EnvBase  # noqa: E402

from gym_s3.envs.config import DistilledConfig  # noqa: E402
from gym_s3.envs.core import DistilledCore  # noqa: E402
from gym_s3.envs.faces import make_config  # noqa: E402
from gym_s3.spec import torchrl_specs  # noqa: E402

#: Episode summaries of the task (``info["episode/<name>"]``): means over the episode's steps
#: [m], [rad], [m/s], progress along the reference [m], completion [-], length [steps].
EPISODE_METRICS: tuple[str, ...] = (
    "cte_mean",
    "heading_error_mean",
    "speed_error_mean",
    "progress",
    "completion",
    "steps",
)
#: The task's end flags (``info[<name>]``, 1.0 where it ended so; the codes of
#: :data:`gym_s3.task.END_REASONS` come from the same flags); a time-out is ``truncated``.
END_FLAGS: tuple[str, ...] = ("off_track", "spin_out", "non_finite", "stalled", "completed")
#: Columns of ``episode_stats`` ``(N, K)`` (valid only where ``done``).
EPISODE_FIELDS: tuple[str, ...] = EPISODE_METRICS + END_FLAGS
_INFO_KEYS = tuple(f"episode/{name}" for name in EPISODE_METRICS) + END_FLAGS


class S3DistilledTorchRLEnv(EnvBase):
    """N cars of ``S3Distilled-v0`` as a batched TorchRL environment.

    Args:
        num_envs: number of cars N (the env's ``batch_size`` is ``[N]``).
        config: base config (keyword arguments override its fields).
        **kwargs: see :meth:`gym_s3.envs.config.DistilledConfig.from_kwargs` (``backend``,
            ``device``, ``obs_mode``, ``max_episode_steps``, ``tracks``, ``seed``, ...).

    Attributes:
        core: the shared :class:`~gym_s3.envs.core.DistilledCore`.
    """

    def __init__(
        self, num_envs: int = 1, *, config: DistilledConfig | None = None, **kwargs: Any
    ) -> None:
        cfg = make_config(config, kwargs)
        core = DistilledCore(num_envs, cfg)
        super().__init__(device=core.device, batch_size=torch.Size([num_envs]))
        self.core = core
        specs = torchrl_specs(cfg.task.obs_mode, num_envs, core.device)
        self.observation_spec = specs["observation_spec"]
        self.action_spec = specs["action_spec"]
        self.reward_spec = specs["reward_spec"]
        self.done_spec = specs["done_spec"]
        self.observation_spec["episode_stats"] = Unbounded(
            shape=(num_envs, len(EPISODE_FIELDS)), dtype=torch.float32, device=core.device
        )

    def _reset(self, tensordict: TensorDictBase | None, **kwargs: Any) -> TensorDictBase:
        """Reset all cars, or those flagged by ``tensordict["_reset"]`` ``(N, 1)``."""
        mask = None
        if tensordict is not None and "_reset" in tensordict.keys():
            mask = tensordict.get("_reset").reshape(self.core.num_envs)
        obs = self.core.reset(mask)
        flag = torch.zeros(self.core.num_envs, 1, dtype=torch.bool, device=self.device)
        return TensorDict(
            {
                "observation": obs,
                "episode_stats": obs.new_zeros(self.core.num_envs, len(EPISODE_FIELDS)),
                "done": flag,
                "terminated": flag.clone(),
                "truncated": flag.clone(),
            },
            batch_size=self.batch_size,
            device=self.device,
        )

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Advance every car by one control period (no reset: the collector asks for it)."""
        out = self.core.step(tensordict.get("action"))
        return TensorDict(
            {
                "observation": out.obs,
                "episode_stats": episode_stats(out.info),
                "reward": out.reward[:, None],
                "done": out.done[:, None],
                "terminated": out.terminated[:, None],
                "truncated": out.truncated[:, None],
            },
            batch_size=self.batch_size,
            device=self.device,
        )

    def _set_seed(self, seed: int | None) -> None:
        """Seed the core's generator (same seed, same scenarios and start states)."""
        self.core.seed(seed)


def episode_stats(info: dict[str, torch.Tensor]) -> torch.Tensor:
    """``(N, K)`` float32 columns :data:`EPISODE_FIELDS` from a core step's ``info``."""
    return torch.stack([info[key].to(torch.float32) for key in _INFO_KEYS], dim=-1)


def make_torchrl_env(num_envs: int = 1, **kwargs: Any) -> S3DistilledTorchRLEnv:
    """Build :class:`S3DistilledTorchRLEnv` (same keyword arguments)."""
    return S3DistilledTorchRLEnv(num_envs=num_envs, **kwargs)
