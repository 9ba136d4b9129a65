"""Exploration noise on a policy's actions (``s3 rollouts``, policy-in-the-loop rounds).

Noise: ``a = clip(policy(obs) + sigma * N(0, I), -1, 1)`` from one seeded CPU generator; the
clipped action is what the cars receive and what is recorded.
"""

from __future__ import annotations

import torch
from torch import Tensor

from gym_s3.errors import ConfigError
from gym_s3.observations import EgoState
from gym_s3.task import TrackingTask
from gym_s3.task_types import TrackSample
from policies.checkpoint import Policy

__all__ = ["NoisyPolicyDriver"]


class NoisyPolicyDriver:
    """A policy as a driver of the episode loop, with Gaussian noise on its actions.

    Args:
        policy: the policy (its observation mode must be the task's).
        sigma: standard deviation of the action noise (actions lie in ``[-1, 1]``).
        seed: seed of the noise generator.
    """

    def __init__(self, policy: Policy, sigma: float, seed: int) -> None:
        if not sigma >= 0.0:
            raise ConfigError(f"action noise must be >= 0, got {sigma}")
        self.policy, self.sigma = policy, float(sigma)
        self.generator = torch.Generator().manual_seed(int(seed))

    def noisy(self, obs: Tensor) -> Tensor:
        """``(N, 2)`` float32 CPU actions ``clip(policy(obs) + sigma * N(0, I), -1, 1)``.

        Args:
            obs: ``(N, F)`` observations in the policy's observation mode.
        """
        action = torch.as_tensor(self.policy.act(obs.float())).float().cpu()
        if self.sigma > 0:
            action = action + self.sigma * torch.randn(action.shape, generator=self.generator)
        return action.clamp(-1.0, 1.0)

    def __call__(self, ego: EgoState, sample: TrackSample, task: TrackingTask) -> Tensor:
        """``(N, 2)`` clipped noisy actions for the cars' observations."""
        action = self.noisy(task.observe(ego, sample.mu))
        return action.to(device=task.device, dtype=task.dtype)
