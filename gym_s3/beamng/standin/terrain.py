"""Ground height of the stand-in's levels.

Every BeamNG level name is served as flat ground at z = 0: the stand-in has no BeamNG terrain.
This module is the hook for levels that should carry the height of one of the project's own
tracks (e.g. a level ``s3_putnam`` with the Putnam Park approximation's elevation): register a
height function for the level name and the world uses it for spawning, teleporting and the
vehicle physics.
"""

from __future__ import annotations

from collections.abc import Callable

from torch import Tensor

from gym_s3.errors import ConfigError

#: ``height(points (N, Q, 2) world x, y [m]) -> (N, Q) ground z [m]``
HeightFn = Callable[[Tensor], Tensor]

_LEVEL_TERRAINS: dict[str, HeightFn] = {}


def register_level_terrain(level: str, height_fn: HeightFn) -> None:
    """Give level ``level`` the ground height ``height_fn`` instead of flat ground.

    Raises:
        ConfigError: ``height_fn`` is not callable.
    """
    if not callable(height_fn):
        raise ConfigError(f"height_fn for level {level!r} must be callable, got {height_fn!r}")
    _LEVEL_TERRAINS[level] = height_fn


def unregister_level_terrain(level: str) -> None:
    """Make ``level`` flat again (no error if it was flat)."""
    _LEVEL_TERRAINS.pop(level, None)


def registered_levels() -> tuple[str, ...]:
    """Names of the levels given a height function (sorted)."""
    return tuple(sorted(_LEVEL_TERRAINS))


def height_fn_for_level(level: str | None) -> HeightFn | None:
    """The registered height function of ``level``, or ``None`` for flat ground at z = 0."""
    if level is None:
        return None
    return _LEVEL_TERRAINS.get(level)
