"""A small untrained policy, saved and loaded through the real checkpoint path (for evaluations)."""

from __future__ import annotations

from pathlib import Path

import torch

from gym_s3.spec import observation_size
from policies.checkpoint import Policy, load_policy, save_policy
from policies.networks import ActorNet, RunningNorm


def untrained_policy(folder: Path) -> Policy:
    """An untrained (seed 0) bicycle policy with 16-16 hidden units, saved to ``folder/pol``."""
    torch.manual_seed(0)
    actor = ActorNet(RunningNorm(observation_size()), observation_size(), (16, 16))
    path = save_policy(folder / "pol", actor, backend="bicycle", obs_mode="default", training={})
    return load_policy(path)
