"""Resolve the dynamics backend of ``S3Distilled-v0``: a name, an instance or a checkpoint."""

from __future__ import annotations

import warnings

from gym_s3.envs.config import DistilledConfig
from gym_s3.errors import ConfigError


def resolve_backend(config: DistilledConfig):
    """The :class:`~gym_s3.dynamics.DynamicsBackend` of ``config`` on its device and dtype.

    * an instance is used as given (moved to the env device and dtype in place);
    * an unknown name raises :class:`~gym_s3.errors.ConfigError` listing the registered backends;
    * with ``checkpoint``, :func:`gym_s3.dynamics.load` loads it (it refuses another
      ``SPEC_VERSION``, another backend than ``backend``, damaged or foreign files with a
      :class:`~gym_s3.errors.CheckpointError`);
    * otherwise the default checkpoint shipped for that name is loaded when there is one, else
      the backend is built with default parameters by :func:`gym_s3.dynamics.make` (with a
      warning for the learned backends, whose untrained weights are only good for benchmarks).
    """
    from gym_s3 import dynamics

    if isinstance(config.backend, dynamics.DynamicsBackend):
        backend = config.backend
    else:
        name = config.backend
        valid = dynamics.backend_names()
        if name not in valid:
            raise ConfigError(
                f"unknown dynamics backend '{name}'; valid backends: {', '.join(valid)}"
            )
        if config.checkpoint is not None:
            backend = dynamics.load(config.checkpoint, backend=name)
        elif _has_default_checkpoint(name):
            backend = dynamics.load(name)
        else:
            if name != "bicycle":
                warnings.warn(
                    f"no trained checkpoint is shipped for backend '{name}'; using untrained "
                    "weights (fine for benchmarks, not for training). Pass checkpoint=<path>.",
                    stacklevel=4,
                )
            backend = dynamics.make(name)
        backend.requires_grad_(False)
    backend = backend.to(device=config.device, dtype=config.torch_dtype)
    return backend.eval()


def _has_default_checkpoint(name: str) -> bool:
    """Whether a default checkpoint of backend ``name`` ships with the package."""
    from gym_s3 import checkpoints, dynamics

    stem = dynamics.default_checkpoint(name)
    return checkpoints.checkpoint_paths(stem)[1].is_file()
