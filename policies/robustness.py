"""Observation noise and actuator delay for PPO training (TorchRL transforms on ``S3Distilled-v0``).

The other robustness options live where their physics is: the friction the car feels
(``TaskConfig.friction_noise``) and standing starts (``TaskConfig.start_from_rest``) in the task,
the surfaces in the training pool (:mod:`policies.pools`). Observation noise and action delay
belong to the training run, not the env: evaluation always sees the env as it is.
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


class ActionDelay(Transform):
    """Apply each car's actions ``d`` control steps late, ``d ~ U{0..max_delay}`` per episode.

    The env receives the action the policy chose ``d`` steps earlier (zeros before the episode's
    first ``d`` actions), so the policy learns to drive with an actuator delay it does not know.
    The data the policy is trained on keeps its own actions.

    Args:
        max_delay: longest delay [control steps of 50 ms]; >= 1.
        num_envs: cars N of the env.
        seed: seed of the delay draws.
    """

    def __init__(self, max_delay: int, num_envs: int, seed: int = 0) -> None:
        if not isinstance(max_delay, int) or max_delay < 1:
            raise ConfigError(f"ActionDelay needs max_delay >= 1 [steps], got {max_delay!r}")
        super().__init__(in_keys_inv=["action"], out_keys_inv=["action"])
        self.max_delay, self.num_envs = max_delay, num_envs
        self._generator = torch.Generator().manual_seed(int(seed))
        self.delay = torch.randint(0, max_delay + 1, (num_envs,), generator=self._generator)
        self._history: torch.Tensor | None = None  # (N, max_delay + 1, A), newest first

    def _inv_apply_transform(self, action: torch.Tensor) -> torch.Tensor:
        if self._history is None or self._history.device != action.device:
            self._history = action.new_zeros(self.num_envs, self.max_delay + 1, action.shape[-1])
        self._history = torch.cat([action[:, None], self._history[:, :-1]], dim=1)
        rows = torch.arange(self.num_envs, device=action.device)
        return self._history[rows, self.delay.to(action.device)]

    def _reset(
        self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        """New delays and an empty history for the cars that start a new episode."""
        mask = None if tensordict is None else tensordict.get("_reset", None)
        mask = torch.ones(self.num_envs, dtype=torch.bool) if mask is None else mask.reshape(-1)
        mask = mask.cpu()
        fresh = torch.randint(0, self.max_delay + 1, (self.num_envs,), generator=self._generator)
        self.delay = torch.where(mask, fresh, self.delay)
        if self._history is not None:
            keep = (~mask).to(self._history.device)[:, None, None]
            self._history = self._history * keep
        return tensordict_reset
