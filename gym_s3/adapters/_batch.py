"""The check every same-step adapter (skrl, Stable-Baselines3) makes of the env it wraps."""

from __future__ import annotations

import gymnasium
from gymnasium.vector import AutoresetMode

from gym_s3.envs.distilled import S3DistilledBatchEnv
from gym_s3.errors import ConfigError


def same_step_batch_env(env: gymnasium.Env, library: str, factory: str) -> S3DistilledBatchEnv:
    """The batched ``S3Distilled-v0`` env under ``env``, checked for same-step autoreset.

    Args:
        env: the env to wrap (possibly wrapped itself).
        library: the RL library, named in the error.
        factory: the adapter's own constructor, named in the error (e.g. ``"make_sb3_env"``).

    Raises:
        ConfigError: ``env`` is not the batched face, or it does not restart finished cars
            inside ``step``.
    """
    base = env.unwrapped
    if not isinstance(base, S3DistilledBatchEnv):
        raise ConfigError(
            f"the {library} adapter wraps the batched S3Distilled-v0 env "
            f"(gym.make('S3Distilled-v0', num_envs=N) or {factory}(num_envs=N))"
        )
    if base.autoreset_mode != AutoresetMode.SAME_STEP:
        raise ConfigError(
            f"the {library} adapter needs autoreset_mode=SAME_STEP ({library} expects finished "
            "episodes to restart inside step)"
        )
    return base
