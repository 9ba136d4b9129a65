"""Dynamics checkpoints: ``save(backend, path)`` and ``load(name_or_path)``.

A dynamics checkpoint is a generic :mod:`gym_s3.checkpoints` pair of kind ``"dynamics"`` whose
tensors are the backend's ``state_dict()`` and whose metadata holds the backend name, its
constructor config, the normalisation statistics (learned backends), the history feature names,
the dataset hash and a training summary. The default checkpoints of all four backends ship in
``gym_s3/assets/dynamics/<name>.{safetensors,json}``.

Further shipped checkpoints live in sets, ``gym_s3/assets/dynamics/<set>/<member>/<backend>.*``,
and are named ``"<backend>:<set>"`` (every member: an ensemble, e.g. ``"ddm:ice"``, the three
models the shipped ``ddm`` policy was trained in) or ``"<backend>:<set>/<member>"`` (one model,
e.g. ``"ddm:ice/s0"``), wherever a checkpoint path is taken.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import torch

from gym_s3 import checkpoints
from gym_s3.dynamics.base import HISTORY_FEATURES, DynamicsBackend
from gym_s3.errors import CheckpointError, ConfigError
from gym_s3.plausibility import DYNAMICS_CONFIG_BOUNDS, check_bounds

#: Checkpoint kind of dynamics backends.
KIND = "dynamics"
#: Folder of the shipped default checkpoints (found through the package, never the working folder).
ASSET_DIR = Path(str(resources.files("gym_s3") / "assets" / "dynamics"))


def default_checkpoint(name: str) -> Path:
    """Stem of the shipped default checkpoint of backend ``name``."""
    return ASSET_DIR / name


def save(
    backend: DynamicsBackend,
    path: str | os.PathLike[str],
    *,
    dataset_hash: str | None = None,
    training: dict[str, Any] | None = None,
) -> Path:
    """Write ``backend`` as ``<path>.safetensors`` + ``<path>.json``; returns the sidecar path.

    Args:
        backend: the (trained) backend.
        path: checkpoint stem.
        dataset_hash: identifier of the data it was trained on.
        training: JSON-ready training summary (epochs, losses, seed, command, ...).
    """
    from gym_s3.dynamics.learned import LearnedBackend

    with torch.no_grad():
        config = backend.config()
    meta = {
        "backend": backend.name,
        "config": config,
        "history_features": list(HISTORY_FEATURES),
        "normalization": (
            backend.norm_stats.to_dict() if isinstance(backend, LearnedBackend) else None
        ),
        "dataset_hash": dataset_hash,
        "training": training or {},
    }
    return checkpoints.save(path, backend.state_dict(), meta, kind=KIND)


def shipped_sets() -> dict[str, tuple[Path, ...]]:
    """Every shipped set name and the checkpoint stems it stands for (see the module docstring).

    Returns:
        ``{"ddm:ice": (stem_s0, stem_s1, stem_s2), "ddm:ice/s0": (stem_s0,), ...}``; members in
        sorted order, so an ensemble's car split is the same on every machine.
    """
    sets: dict[str, list[Path]] = {}
    for sidecar in sorted(ASSET_DIR.glob("*/*/*.json")):
        folder = sidecar.parent.relative_to(ASSET_DIR)
        stem = sidecar.with_suffix("")
        sets.setdefault(f"{sidecar.stem}:{folder.parent.as_posix()}", []).append(stem)
        sets[f"{sidecar.stem}:{folder.as_posix()}"] = [stem]
    return {name: tuple(stems) for name, stems in sets.items()}


def shipped_name(stem: str | os.PathLike[str]) -> str | None:
    """The one-member set name of a shipped checkpoint stem (``"ddm:ice/s0"``), or ``None``."""
    return next((name for name, stems in shipped_sets().items()
                 if stems == (Path(stem),)), None)  # fmt: skip


@functools.cache
def _shipped_by_sha256() -> dict[str, Path]:
    """Weights SHA-256 -> stem of every shipped dynamics checkpoint (read once per process)."""
    index: dict[str, Path] = {}
    for sidecar in sorted(ASSET_DIR.rglob("*.json")):
        sha = checkpoints.read_sidecar(sidecar).get("weights", {}).get("sha256")
        index.setdefault(sha, sidecar.with_suffix(""))
    return index


def find_shipped(sha256: str) -> Path | None:
    """Stem of the shipped dynamics checkpoint whose weights have this SHA-256, or ``None``.

    Searches the default checkpoints and every shipped set (see the module docstring), so a
    record that names a model by content (:func:`source`) finds it on any machine.
    """
    return _shipped_by_sha256().get(sha256)


def expand_checkpoints(value: str | os.PathLike[str] | Sequence[str | os.PathLike[str]]
                       ) -> tuple[str, ...]:  # fmt: skip
    """Checkpoint paths, backend names and shipped set names, with every set name expanded.

    ``"ddm:ice"`` becomes its members' stems; paths and backend names pass through unchanged.
    """
    items = [value] if isinstance(value, str | os.PathLike) else list(value)
    sets = shipped_sets()
    out: list[str] = []
    for item in items:
        text = os.fspath(item)
        out += [str(stem) for stem in sets[text]] if text in sets else [text]
    return tuple(out)


def has_default_checkpoint(name: str) -> bool:
    """Whether a default checkpoint of backend ``name`` ships with the package."""
    return checkpoints.checkpoint_paths(default_checkpoint(name))[1].is_file()


def _resolve(name_or_path: str | os.PathLike[str]) -> Path:
    """The checkpoint stem meant by a backend name or a path.

    A backend name means its shipped checkpoint, never a file of that name in the working folder
    (write ``./ddm`` for that); a one-member shipped set name (``"ddm:ice/s0"``) its checkpoint,
    never a local file of that name (write ``./ddm:ice/s0``); anything else is a checkpoint path.

    Raises:
        CheckpointError: a shipped set of several models where one is needed, or a backend that
            ships no default checkpoint.
    """
    from gym_s3.dynamics.registry import backend_names

    text = os.fspath(name_or_path)
    sets = shipped_sets()
    if text in sets:
        if len(sets[text]) > 1:
            one = shipped_name(sets[text][0])
            raise CheckpointError(
                f"{text!r} names an ensemble of {len(sets[text])} shipped dynamics models; this "
                f"use needs one: name a member (e.g. {one!r}), or pass the set where an ensemble "
                "is taken (gym.make(..., checkpoint=...), s3 train, s3 gap)"
            )
        return sets[text][0]
    if text in backend_names():
        stem = default_checkpoint(text)
        if not has_default_checkpoint(text):
            raise CheckpointError(
                f"no default checkpoint is shipped for backend '{text}' (looked for {stem}.json); "
                f"train one with `s3 distill train --backend {text}` and pass its path"
            )
        return stem
    return Path(text)


def source(name_or_path: str | os.PathLike[str]) -> dict[str, str | None]:
    """What names a dynamics checkpoint in a record: file name, weights SHA-256, dataset hash.

    A backend name means its shipped checkpoint (as in :func:`load`); a registered backend that
    ships none (it runs with default parameters or untrained weights) gives ``None`` fields.

    Raises:
        CheckpointError: no checkpoint at that path, or a damaged sidecar.
    """
    from gym_s3.dynamics.registry import backend_names

    text = os.fspath(name_or_path)
    if text in backend_names() and not has_default_checkpoint(text):
        return {"file": None, "sha256": None, "dataset_hash": None}
    stem = _resolve(text)
    meta = checkpoints.read_sidecar(stem).get("meta", {})
    return {**checkpoints.source(stem), "dataset_hash": meta.get("dataset_hash")}


def load(
    name_or_path: str | os.PathLike[str],
    *,
    device: torch.device | str = "cpu",
    backend: str | None = None,
) -> DynamicsBackend:
    """Load a trained backend in eval mode.

    Args:
        name_or_path: a registered backend name (loads the shipped default) or a checkpoint path
            (stem, ``.safetensors`` or ``.json``).
        device: device of the returned backend.
        backend: if given, refuse a checkpoint of another backend.

    Returns:
        The backend, with the checkpoint's metadata (config, dataset hash, training log) in its
        ``checkpoint_meta`` attribute.

    Raises:
        CheckpointError: damaged, foreign, mismatched-spec or mismatched-model checkpoints.
    """
    from gym_s3.dynamics.learned import LearnedBackend
    from gym_s3.dynamics.normalization import stats_from_meta
    from gym_s3.dynamics.registry import backend_names, make

    path = _resolve(name_or_path)
    ckpt = checkpoints.load(path, kind=KIND)
    what = f"dynamics checkpoint {ckpt.path}"
    meta = ckpt.meta
    name = meta.get("backend")
    if name not in backend_names():
        raise CheckpointError(
            f"{what} names backend {name!r}, which is not registered; valid backends: "
            f"{', '.join(backend_names())}"
        )
    if backend is not None and name != backend:
        raise CheckpointError(
            f"{what} holds a '{name}' backend, but '{backend}' was asked for; pass "
            f"backend='{name}' or a '{backend}' checkpoint"
        )
    if meta.get("history_features") != list(HISTORY_FEATURES):
        raise CheckpointError(
            f"{what} was trained on history features {meta.get('history_features')}, but this "
            f"installation uses {list(HISTORY_FEATURES)}; re-train it"
        )
    config = meta.get("config")
    if not isinstance(config, dict):
        raise CheckpointError(f"{what} has no backend config; re-save the checkpoint")
    fix = "the sidecar was edited or damaged; restore it or re-train the backend"
    check_bounds(config, DYNAMICS_CONFIG_BOUNDS, where=what, error=CheckpointError, fix=fix)
    try:
        model = checkpoints.build_checked(lambda: make(name, **config), ckpt.tensors, what)
    except (ConfigError, TypeError) as exc:
        raise CheckpointError(
            f"{what}: its config does not build a '{name}' backend ({exc})"
        ) from exc
    if isinstance(model, LearnedBackend):
        model.set_norm_stats(stats_from_meta(meta.get("normalization"), what))
    model.checkpoint_meta = meta
    return model.to(device).eval()
