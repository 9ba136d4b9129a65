"""Environments: ``S3Distilled-v0`` (batched distilled dynamics) and ``S3BeamNG-v0``.

Import the faces from their modules (``gym_s3.envs.distilled``, ``gym_s3.envs.vector``,
``gym_s3.envs.beamng``) or through ``gym.make``; this package imports nothing heavy itself.
"""
