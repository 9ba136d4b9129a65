"""A small untrained policy, saved and loaded through the real checkpoint path (for evaluations)."""

from __future__ import annotations

from pathlib import Path

import torch

from gym_s3.spec import observation_size
from policies.checkpoint import Policy, load_policy, save_policy
from policies.networks import ActorNet, RunningNorm


def untrained_policy(folder: Path, obs_mode: str = "default") -> Policy:
    """An untrained (seed 0) bicycle policy with 16-16 hidden units, saved to ``folder/pol``.

    Another ``obs_mode`` (``oracle``: the observation adds the friction; ``history``: the last
    control steps) saves to ``folder/pol_<obs_mode>``.
    """
    torch.manual_seed(0)
    size = observation_size(obs_mode)
    actor = ActorNet(RunningNorm(size), size, (16, 16))
    stem = "pol" if obs_mode == "default" else f"pol_{obs_mode}"
    path = save_policy(folder / stem, actor, backend="bicycle", obs_mode=obs_mode, training={})
    return load_policy(path)
