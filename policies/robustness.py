"""Observation noise for PPO training (a TorchRL transform on ``S3Distilled-v0``).

The other robustness options live where their physics is: the friction the car feels
(``TaskConfig.friction_noise``) and standing starts (``TaskConfig.start_from_rest``) in the task,
the surfaces in the training pool (:mod:`policies.pools`). Observation noise belongs to the
training run, not the env: evaluation always sees clean observations.
"""

from __future__ import annotations

import torch
from tensordict import TensorDictBase
from torchrl.envs import Transform

from gym_s3.errors import ConfigError
from gym_s3.spec import observation_bounds


class ObservationNoise(Transform):
    """Add ``N(0, (std * half_range)^2)`` to every observation feature, after steps and resets.

    Args:
        std: noise std as a share of each feature's half range (the spec bounds) [-]; > 0.
        obs_mode: observation mode of the env (selects the features and their bounds).
        seed: seed of the noise generator (on the observations' device).
    """

    def __init__(self, std: float, obs_mode: str = "default", seed: int = 0) -> None:
        if not std > 0:
            raise ConfigError(f"ObservationNoise needs std > 0, got {std}")
        super().__init__(in_keys=["observation"], out_keys=["observation"])
        low, high = observation_bounds(obs_mode)
        self.register_buffer("scale", std * torch.as_tensor((high - low) / 2.0))
        self.seed = int(seed)
        self._generator: torch.Generator | None = None

    def _apply_transform(self, obs: torch.Tensor) -> torch.Tensor:
        if self._generator is None or self._generator.device != obs.device:
            self._generator = torch.Generator(device=obs.device).manual_seed(self.seed)
        noise = torch.randn(obs.shape, generator=self._generator, device=obs.device)
        return obs + noise.to(obs.dtype) * self.scale.to(obs.device, obs.dtype)

    def _reset(
        self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        return self._call(tensordict_reset)
