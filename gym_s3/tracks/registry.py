"""Tracks by name: ``putnam``, ``procedural:<seed>``, ``town:<seed>``, ``file:<csv>``, ...

One string names every built-in or user track, so configs, the command line and checkpoints can
refer to a track without code. :func:`get_track` builds it; :func:`list_tracks` describes the
forms.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gym_s3.errors import ConfigError
from gym_s3.tracks.path import ReferencePath


@dataclass(frozen=True)
class TrackKind:
    """One form of track name.

    Attributes:
        pattern: how the name is written, e.g. ``"procedural:<seed>"``.
        description: what it builds.
        example: a valid name.
    """

    pattern: str
    description: str
    example: str


TRACK_KINDS: tuple[TrackKind, ...] = (
    TrackKind(
        "putnam",
        "Putnam Park Road Course, approximation from published facts (2.85 km, 9 m, clockwise)",
        "putnam",
    ),
    TrackKind(
        "procedural:<seed>",
        "closed circuit drawn from an integer seed (1.5-3.5 km, 7-14 corners, radii 15-150 m)",
        "procedural:0",
    ),
    TrackKind(
        "town:<seed>",
        "open route through a town grid with four-way intersections (3 turns by default)",
        "town:0",
    ),
    TrackKind(
        "file:<path.csv>",
        "TUMFTM racetrack-database centreline CSV (x_m,y_m,w_tr_right_m,w_tr_left_m)",
        "file:tracks/Monza.csv",
    ),
    TrackKind(
        "boundaries:<left.csv>,<right.csv>",
        "left and right edge polylines (x,y[,z] per line)",
        "boundaries:left.csv,right.csv",
    ),
)


def list_tracks() -> tuple[TrackKind, ...]:
    """The accepted forms of track names."""
    return TRACK_KINDS


def _seed(kind: str, arg: str) -> int:
    """Parse the integer seed of ``kind:<seed>``."""
    try:
        seed = int(arg)
    except ValueError:
        seed = -1
    if not 0 <= seed < 2**63:
        msg = f"track '{kind}:{arg}': the seed must be an integer in [0, 2**63), e.g. {kind}:0"
        raise ConfigError(msg) from None
    return seed


def _putnam(arg: str, kwargs: dict[str, Any]) -> ReferencePath:
    """Build ``putnam``."""
    from gym_s3.tracks.putnam import putnam_park

    return putnam_park(**kwargs)


def _procedural(arg: str, kwargs: dict[str, Any]) -> ReferencePath:
    """Build ``procedural:<seed>``."""
    from gym_s3.tracks.procedural import procedural_circuit

    return procedural_circuit(_seed("procedural", arg), **kwargs)


def _town(arg: str, kwargs: dict[str, Any]) -> ReferencePath:
    """Build ``town:<seed>``."""
    from gym_s3.tracks.town import town_route

    return town_route(_seed("town", arg), **kwargs)


def _file(arg: str, kwargs: dict[str, Any]) -> ReferencePath:
    """Build ``file:<path>``."""
    from gym_s3.tracks.loaders import load_tumftm_csv

    return load_tumftm_csv(arg, **kwargs)


def _boundaries(arg: str, kwargs: dict[str, Any]) -> ReferencePath:
    """Build ``boundaries:<left>,<right>``."""
    from gym_s3.tracks.loaders import load_boundaries

    parts = arg.split(",")
    if len(parts) != 2 or not all(parts):
        raise ConfigError(
            f"track 'boundaries:{arg}': give two files separated by a comma, "
            "e.g. boundaries:left.csv,right.csv"
        )
    return load_boundaries(parts[0], parts[1], **kwargs)


_BUILDERS: dict[str, Callable[[str, dict[str, Any]], ReferencePath]] = {
    "putnam": _putnam,
    "procedural": _procedural,
    "town": _town,
    "file": _file,
    "boundaries": _boundaries,
}


#: track kinds built by the package's own deterministic generators (cached on disk, see
#: :mod:`gym_s3.tracks.cache`); file-based tracks are read from their files every time
_GENERATED = ("putnam", "procedural", "town")


def get_track(name: str, **kwargs: Any) -> ReferencePath:
    """Build the track called ``name``.

    Args:
        name: one of the forms of :func:`list_tracks`, e.g. ``"putnam"``, ``"procedural:3"``,
            ``"town:12"``, ``"file:Monza.csv"``.
        **kwargs: passed to the builder (e.g. ``ds=2.0``; ``n_turns=5`` for towns).

    Raises:
        ConfigError: for an unknown name or bad arguments (the message lists the valid forms).
    """
    kind, sep, arg = name.partition(":")
    kind = kind.strip().lower()
    builder = _BUILDERS.get(kind)
    needs_arg = kind != "putnam"
    if builder is None or (needs_arg and not arg) or (not needs_arg and sep):
        forms = ", ".join(k.pattern for k in TRACK_KINDS)
        raise ConfigError(f"unknown track '{name}'; valid names: {forms}")
    try:
        if kind in _GENERATED:
            from gym_s3.tracks.cache import cached_track

            return cached_track(f"{kind}:{arg.strip()}", kwargs,
                                lambda: builder(arg.strip(), kwargs))  # fmt: skip
        return builder(arg.strip(), kwargs)
    except TypeError as exc:
        if "unexpected keyword argument" not in str(exc):
            raise
        raise ConfigError(f"track '{name}': {exc}") from exc


_CACHE_LOCK = threading.Lock()
_CACHE: dict[str, ReferencePath] = {}


def cached_track(name: str) -> ReferencePath:
    """The track ``name`` of :func:`get_track`, built once per process (tracks are immutable).

    Raises:
        ConfigError: for an unknown name (the message lists the valid forms).
    """
    with _CACHE_LOCK:
        if name not in _CACHE:
            _CACHE[name] = get_track(name)
        return _CACHE[name]


def clear_track_cache() -> None:
    """Forget the tracks :func:`cached_track` built."""
    with _CACHE_LOCK:
        _CACHE.clear()
