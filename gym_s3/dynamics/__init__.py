"""Distillable dynamics backends, their registry and checkpoints.

``make(name, **kwargs)`` builds an untrained backend; ``load(name_or_path)`` loads a trained one
(a registered name loads the default checkpoint shipped in ``gym_s3/assets/dynamics/``, anything
else is a checkpoint path); ``save(backend, path, ...)`` writes a checkpoint.

Backends: ``bicycle`` (kinematic, fitted), ``ddm`` (Deep Dynamics Model), ``trans`` (sliding-window
transformer) and ``dytr`` (DDM + transformer residual).
"""

from __future__ import annotations

from collections.abc import Callable

from gym_s3.dynamics.base import (
    HISTORY_FEATURES,
    BackendState,
    DynamicsBackend,
    integrate_pose,
)
from gym_s3.dynamics.io import default_checkpoint, load, save
from gym_s3.dynamics.priming import state_from_window
from gym_s3.errors import ConfigError

_REGISTRY: dict[str, Callable[..., DynamicsBackend]] = {}


def register_backend(name: str, factory: Callable[..., DynamicsBackend]) -> None:
    """Register a backend factory under ``name`` (lower_snake)."""
    _REGISTRY[name] = factory


def backend_names() -> tuple[str, ...]:
    """Names of the registered backends."""
    _register_builtin()
    return tuple(_REGISTRY)


def make(name: str, **kwargs) -> DynamicsBackend:
    """Build the backend ``name``; an unknown name lists the valid ones."""
    _register_builtin()
    if name not in _REGISTRY:
        raise ConfigError(
            f"unknown dynamics backend '{name}'; valid backends: {', '.join(_REGISTRY)}"
        )
    return _REGISTRY[name](**kwargs)


def _register_builtin() -> None:
    if _REGISTRY:
        return
    from gym_s3.dynamics.bicycle import BicycleBackend
    from gym_s3.dynamics.ddm import DDMBackend
    from gym_s3.dynamics.dytr import DyTRBackend
    from gym_s3.dynamics.trans import TransformerBackend

    register_backend("bicycle", BicycleBackend)
    register_backend("ddm", DDMBackend)
    register_backend("trans", TransformerBackend)
    register_backend("dytr", DyTRBackend)


__all__ = [
    "HISTORY_FEATURES",
    "BackendState",
    "DynamicsBackend",
    "backend_names",
    "default_checkpoint",
    "integrate_pose",
    "load",
    "make",
    "register_backend",
    "save",
    "state_from_window",
]
