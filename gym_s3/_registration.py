"""Idempotent Gymnasium registration of the project's environment ids."""

from __future__ import annotations

DISTILLED_ID = "S3Distilled-v0"
BEAMNG_ID = "S3BeamNG-v0"


def register_envs() -> None:
    """Register ``S3Distilled-v0`` and ``S3BeamNG-v0`` once (safe to call repeatedly).

    ``S3Distilled-v0`` has both entry points: ``gym.make`` dispatches on ``num_envs`` (a single
    numpy env for ``num_envs=1``, a batched torch env otherwise) and ``gym.make_vec`` builds the
    :class:`gymnasium.vector.VectorEnv` face. Neither id sets ``max_episode_steps``: the envs count
    truncation per car themselves (a Gymnasium ``TimeLimit`` would truncate the whole batch).
    ``S3BeamNG-v0`` carries :class:`~gym_s3.envs.beamng.EpisodeStepLimit`, so
    ``gym.make("S3BeamNG-v0", max_episode_steps=N)`` sets the env's own limit to ``N``.
    """
    from gymnasium.envs.registration import register, registry

    if DISTILLED_ID not in registry:
        register(
            id=DISTILLED_ID,
            entry_point="gym_s3.envs.distilled:make_distilled_env",
            vector_entry_point="gym_s3.envs.distilled:S3DistilledVectorEnv",
            disable_env_checker=True,
        )
    if BEAMNG_ID not in registry:
        from gymnasium.envs.registration import WrapperSpec

        # gym.make's max_episode_steps reaches the env's own time limit through this wrapper
        limit = WrapperSpec("EpisodeStepLimit", "gym_s3.envs.beamng:EpisodeStepLimit", {})
        register(id=BEAMNG_ID, entry_point="gym_s3.envs.beamng:S3BeamNGEnv",
                 additional_wrappers=(limit,))  # fmt: skip
