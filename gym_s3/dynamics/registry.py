"""The registry of dynamics backends: a name -> a factory that builds an untrained backend.

The four built-ins (``bicycle``, ``ddm``, ``trans``, ``dytr``) are registered lazily, the first
time the registry is used (read or written), so importing :mod:`gym_s3.dynamics` stays cheap and
a user's own backend, registered first or later, joins them instead of hiding them.
"""

from __future__ import annotations

from collections.abc import Callable

from gym_s3.dynamics.base import DynamicsBackend
from gym_s3.errors import ConfigError

__all__ = ["backend_names", "make", "register_backend"]

_REGISTRY: dict[str, Callable[..., DynamicsBackend]] = {}
_BUILTINS_ADDED = False


def register_backend(name: str, factory: Callable[..., DynamicsBackend]) -> None:
    """Register a backend factory under ``name`` (lower_snake); a built-in name is replaced."""
    _add_builtins()
    _REGISTRY[name] = factory


def backend_names() -> tuple[str, ...]:
    """Names of the registered backends (the built-ins first)."""
    _add_builtins()
    return tuple(_REGISTRY)


def make(name: str, **kwargs) -> DynamicsBackend:
    """Build the backend ``name``; an unknown name lists the valid ones."""
    _add_builtins()
    if name not in _REGISTRY:
        raise ConfigError(
            f"unknown dynamics backend '{name}'; valid backends: {', '.join(_REGISTRY)}"
        )
    return _REGISTRY[name](**kwargs)


def _add_builtins() -> None:
    """Register the four built-in backends once (their modules import torch models)."""
    global _BUILTINS_ADDED
    if _BUILTINS_ADDED:
        return
    _BUILTINS_ADDED = True
    from gym_s3.dynamics.bicycle import BicycleBackend
    from gym_s3.dynamics.ddm import DDMBackend
    from gym_s3.dynamics.dytr import DyTRBackend
    from gym_s3.dynamics.trans import TransformerBackend

    _REGISTRY.update(bicycle=BicycleBackend, ddm=DDMBackend, trans=TransformerBackend,
                     dytr=DyTRBackend)  # fmt: skip
