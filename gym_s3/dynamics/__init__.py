"""Distillable dynamics backends and their registry.

``make(name, **kwargs)`` builds an untrained backend; checkpoint loading (``load``) is provided by
the distillation stage.
"""

from __future__ import annotations

from collections.abc import Callable

from gym_s3.dynamics.base import (
    HISTORY_FEATURES,
    BackendState,
    DynamicsBackend,
    integrate_pose,
)
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

    register_backend("bicycle", BicycleBackend)


__all__ = [
    "HISTORY_FEATURES",
    "BackendState",
    "DynamicsBackend",
    "backend_names",
    "integrate_pose",
    "make",
    "register_backend",
]
