"""On-disk cache of generated tracks (``putnam``, ``procedural:<seed>``, ``town:<seed>``).

Building a track is deterministic but costs up to a second (a procedural circuit draws, closes
and rejects several candidates; every one is checked for self-crossings and clearance), and the
default scenario pool builds several, so the first ``gym.make("S3Distilled-v0")`` of a fresh
process spent seconds on them. :func:`cached_track` stores each built
:class:`~gym_s3.tracks.path.ReferencePath` once as tensors (safetensors) plus a JSON sidecar
(no pickle) and loads it afterwards.

The file name is a hash of the track name, the builder's keyword arguments, the package version
and the source text of every module in :mod:`gym_s3.tracks`, so editing the generators never
serves a stale track. The folder is ``$S3_CACHE_DIR/tracks`` (default
``~/.cache/sim2sim2sim/tracks``); ``S3_CACHE_DIR=off`` disables the cache. A cache that cannot
be written (read-only home) is skipped silently: the track is just built.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

from gym_s3.tracks.features import PathFeature
from gym_s3.tracks.path import ReferencePath

__all__ = ["CACHE_ENV", "cache_dir", "cached_track"]

#: environment variable naming the cache root (``off`` disables caching)
CACHE_ENV = "S3_CACHE_DIR"
_TENSORS = ("xyz", "heading", "curvature", "width_left", "width_right")


def cache_dir() -> Path | None:
    """The track cache folder, or ``None`` when caching is off."""
    root = os.environ.get(CACHE_ENV, "")
    if root.strip().lower() in ("off", "0", "none", "false"):
        return None
    base = Path(root) if root else Path.home() / ".cache" / "sim2sim2sim"
    return base / "tracks"


@lru_cache(maxsize=1)
def _source_digest() -> str:
    """Hash of the package version and every ``gym_s3/tracks`` module's source text."""
    from gym_s3 import __version__

    digest = hashlib.sha256(__version__.encode())
    for path in sorted(Path(__file__).parent.glob("*.py")):
        digest.update(path.name.encode() + path.read_bytes())
    return digest.hexdigest()


def _key(name: str, kwargs: dict[str, Any]) -> str:
    """File stem of a track: readable name plus a hash of everything it depends on."""
    spec = json.dumps({"name": name, "kwargs": kwargs}, sort_keys=True, default=repr)
    digest = hashlib.sha256((spec + _source_digest()).encode()).hexdigest()[:20]
    safe = "".join(c if c.isalnum() else "_" for c in name)
    return f"{safe}-{digest}"


def _save(path: ReferencePath, stem: Path) -> None:
    """Write ``stem.safetensors`` and ``stem.json`` atomically (temp files, then rename)."""
    from safetensors.torch import save_file

    meta = {
        "name": path.name,
        "ds": path.ds,
        "closed": path.closed,
        "description": path.description,
        "labels": list(path.labels),
        "features": [
            {**f.__dict__, "min_radius": None if math.isinf(f.min_radius) else f.min_radius}
            for f in path.features
        ],
    }
    stem.parent.mkdir(parents=True, exist_ok=True)
    tensors = {k: getattr(path, k).contiguous() for k in _TENSORS}
    with tempfile.TemporaryDirectory(dir=stem.parent) as tmp:
        save_file(tensors, str(Path(tmp) / "t.safetensors"))
        (Path(tmp) / "t.json").write_text(json.dumps(meta))
        os.replace(Path(tmp) / "t.safetensors", stem.with_suffix(".safetensors"))
        os.replace(Path(tmp) / "t.json", stem.with_suffix(".json"))


def _radius(value: float | None) -> float:
    """A stored ``min_radius`` (JSON has no infinity: ``None`` is a straight)."""
    return math.inf if value is None else float(value)


def _load(stem: Path) -> ReferencePath | None:
    """The cached track, or ``None`` when it is missing or unreadable."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    try:
        meta = json.loads(stem.with_suffix(".json").read_text())
        tensors = load_file(str(stem.with_suffix(".safetensors")))
        features = tuple(
            PathFeature(**{**f, "min_radius": _radius(f["min_radius"])}) for f in meta["features"]
        )
        return ReferencePath(
            meta["name"], *(tensors[k] for k in _TENSORS), ds=meta["ds"], closed=meta["closed"],
            description=meta["description"], labels=tuple(meta["labels"]), features=features,
        )  # fmt: skip
    except (OSError, ValueError, KeyError, TypeError, SafetensorError):
        return None


def cached_track(
    name: str, kwargs: dict[str, Any], build: Callable[[], ReferencePath]
) -> ReferencePath:
    """``build()``'s track, from the disk cache when it holds this exact track.

    Args:
        name: the track name (``"procedural:3"``).
        kwargs: the builder's keyword arguments (part of the cache key).
        build: builds the track when it is not cached.
    """
    folder = cache_dir()
    if folder is None:
        return build()
    stem = folder / _key(name, kwargs)
    if stem.with_suffix(".json").exists():
        path = _load(stem)
        if path is not None:
            return path
    path = build()
    try:
        _save(path, stem)
    except OSError:
        pass  # a read-only or full disk only costs the next process the build time
    return path
