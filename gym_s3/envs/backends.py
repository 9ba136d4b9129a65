"""Resolve the dynamics of ``S3Distilled-v0``: a name, an instance, a checkpoint or an ensemble."""

from __future__ import annotations

import warnings

from gym_s3.envs.config import DistilledConfig
from gym_s3.errors import ConfigError


def resolve_backends(config: DistilledConfig) -> tuple:
    """The :class:`~gym_s3.dynamics.DynamicsBackend` models of ``config``, on its device and dtype.

    One model, except when ``config.checkpoint`` lists several (an ensemble): then one per
    checkpoint, in order, all of ``config.backend`` and of one architecture (a
    :class:`~gym_s3.errors.ConfigError` names the first model that differs). See
    :func:`resolve_backend` for the single model.
    """
    if not isinstance(config.checkpoint, tuple):
        return (resolve_backend(config),)
    from gym_s3 import dynamics

    name = _checked_name(config)
    members = tuple(_ready(dynamics.load(path), config) for path in config.checkpoint)
    for i, (path, member) in enumerate(zip(config.checkpoint, members, strict=True)):
        if member.name != name:
            shipped = path in dynamics.backend_names()
            which = f"is the shipped {path!r}" if shipped else f"({path}) is {member.name!r}"
            raise ConfigError(
                f"the models of a dynamics ensemble must share one backend; model {i} {which}, "
                f"the ensemble's is {name!r}"
            )
    first = members[0].config()
    for path, member in zip(config.checkpoint[1:], members[1:], strict=True):
        if member.config() != first:
            raise ConfigError(
                f"the models of a dynamics ensemble must share one architecture; "
                f"{config.checkpoint[0]} has {first}, {path} has {member.config()}"
            )
    return members


def resolve_backend(config: DistilledConfig):
    """The single :class:`~gym_s3.dynamics.DynamicsBackend` of ``config`` on its device and dtype.

    * an instance is used as given (moved to the env device and dtype in place);
    * an unknown name raises :class:`~gym_s3.errors.ConfigError` listing the registered backends;
    * with ``checkpoint``, :func:`gym_s3.dynamics.load` loads it (it refuses another
      ``SPEC_VERSION``, another backend than ``backend``, damaged or foreign files with a
      :class:`~gym_s3.errors.CheckpointError`);
    * otherwise the default checkpoint shipped for that name is loaded when there is one, else
      the backend is built with default parameters by :func:`gym_s3.dynamics.make` (with a
      warning for the learned backends, whose untrained weights are only good for benchmarks).

    An ensemble (several checkpoints) raises a :class:`~gym_s3.errors.ConfigError`: use
    :func:`resolve_backends`.
    """
    from gym_s3 import dynamics
    from gym_s3.dynamics.io import has_default_checkpoint

    if isinstance(config.checkpoint, tuple):
        raise ConfigError(
            f"this use needs one dynamics model, got an ensemble of {len(config.checkpoint)} "
            "checkpoints; pass one checkpoint path or one member of a shipped set (e.g. "
            "'ddm:ice/s0'); `s3 gap` drives every model of an ensemble"
        )
    if isinstance(config.backend, dynamics.DynamicsBackend):  # the user's own: grads untouched
        return config.backend.to(device=config.device, dtype=config.torch_dtype).eval()
    name = _checked_name(config)
    if config.checkpoint is not None:
        backend = dynamics.load(config.checkpoint, backend=name)
    elif has_default_checkpoint(name):
        backend = dynamics.load(name)
    else:
        if name != "bicycle":
            warnings.warn(
                f"no trained checkpoint is shipped for backend '{name}'; using untrained "
                "weights (fine for benchmarks, not for training). Pass checkpoint=<path>.",
                stacklevel=4,
            )
        backend = dynamics.make(name)
    return _ready(backend, config)


def _checked_name(config: DistilledConfig) -> str:
    """``config.backend``, a registered name (else a ConfigError listing the valid ones)."""
    from gym_s3 import dynamics

    name = config.backend
    valid = dynamics.backend_names()
    if name not in valid:
        raise ConfigError(f"unknown dynamics backend '{name}'; valid backends: {', '.join(valid)}")
    return name


def _ready(backend, config: DistilledConfig):
    """``backend`` frozen, in eval mode, on the env's device and dtype."""
    backend.requires_grad_(False)
    return backend.to(device=config.device, dtype=config.torch_dtype).eval()
