"""Driving datasets: load and validate episode files, split by session, window, normalise.

Example::

    ds = DrivingDataset.load("data/default")          # every file validated
    train, val = ds.split("train"), ds.split("val")   # by session, deterministic
    batch = train.windows(history=10, horizon=1)      # dict of (B, ...) tensors
    stats = ds.normalization()                         # from the train split
    hard = val.windows(10, 60, labels=["hard_braking"], stride=10)
    ds.content_hash                                    # store it in checkpoints

Splits are made by session (never by row): a session is in the validation split when a number
in [0, 1) drawn from the hash of its id is below ``val_fraction``, so a session's split never
changes when other sessions are added. With two or more sessions, at least one is in each split
(in tiny datasets the threshold may pick none; then the session with the lowest draw is used).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

from gym_s3.data.files import EPISODE_SUFFIX, read_episode
from gym_s3.data.labelling import LABEL_ROWS, label_inputs
from gym_s3.data.schema import COLUMNS, EpisodeMeta
from gym_s3.data.windows import (
    MU_FEATURES,
    NormStats,
    RowTable,
    gather_windows,
    label_counts,
    valid_anchors,
)
from gym_s3.dynamics.base import HISTORY_FEATURES
from gym_s3.errors import ConfigError, DataFormatError
from gym_s3.scenarios.labels import LABELS, label_mask
from gym_s3.tracks.surfaces import SURFACE_NAMES, get_surface

#: Name of the dataset manifest written by ``s3 data generate``.
MANIFEST_NAME = "manifest.json"
MANIFEST_FORMAT = "sim2sim2sim-dataset"
#: Marker file of a dataset still being written by ``s3 data generate`` (or left by one that was
#: interrupted); its presence makes the folder a partial dataset that does not load.
INCOMPLETE_NAME = "GENERATING.incomplete"
SPLITS = ("train", "val", "all")
#: A time step further than this fraction of ``dt`` from ``dt`` breaks a segment.
GAP_TOLERANCE = 0.25


#: Metadata fields left out of an episode's digest (they change when nothing in the data does).
VOLATILE_META = ("created", "version")


def episode_digest(columns: dict[str, np.ndarray], meta: EpisodeMeta) -> str:
    """SHA-256 (hex) of an episode's content: every column's bytes and the stable metadata.

    Independent of when and with which library versions the file was written, so the same seed
    gives the same digest; any change of a value or of the metadata changes it.
    """
    digest = hashlib.sha256()
    for c in COLUMNS:
        digest.update(c.name.encode() + b"\0")
        digest.update(np.ascontiguousarray(columns[c.name], dtype=c.dtype).tobytes())
    stable = {k: v for k, v in json.loads(meta.to_json()).items() if k not in VOLATILE_META}
    digest.update(json.dumps(stable, sort_keys=True).encode())
    return digest.hexdigest()


def content_hash(entries: Iterable[tuple[str, str]]) -> str:
    """Hash of a dataset: SHA-256 over its sorted ``(file name, episode digest)`` pairs (hex)."""
    digest = hashlib.sha256()
    for name, sha in sorted(entries):
        digest.update(f"{name}\0{sha}\n".encode())
    return digest.hexdigest()


def session_draw(session_id: str) -> float:
    """A uniform number in [0, 1) fixed by the session id (from its SHA-256)."""
    return int(hashlib.sha256(session_id.encode()).hexdigest()[:13], 16) / 16**13


def val_sessions(sessions: Sequence[str], val_fraction: float) -> set[str]:
    """The validation sessions (see the module docstring); deterministic and order-free."""
    if not 0.0 <= val_fraction < 1.0:
        raise ConfigError(f"val_fraction must be in [0, 1), got {val_fraction}")
    unique = sorted(set(sessions))
    if len(unique) < 2 or val_fraction == 0.0:
        return set()
    val = {s for s in unique if session_draw(s) < val_fraction}
    ranked = sorted(unique, key=session_draw)
    if not val:  # small datasets: still validate on one session
        val = {ranked[0]}
    if len(val) == len(unique):  # and still train on one
        val.discard(ranked[-1])
    return val


@dataclass(frozen=True)
class Episode:
    """One loaded episode.

    Attributes:
        path: its file.
        meta: its metadata.
        start: first row in the dataset's concatenated rows.
        stop: one past its last row.
        digest: :func:`episode_digest` of its content.
    """

    path: Path
    meta: EpisodeMeta
    start: int
    stop: int
    digest: str

    @property
    def num_rows(self) -> int:
        """Rows of the episode."""
        return self.stop - self.start


class DrivingDataset:
    """Validated episodes with their rows concatenated (one tensor per column).

    Build with :meth:`load`; derive splits with :meth:`split`.

    Args:
        episodes: the episodes, in row order.
        columns: ``(R,)`` tensor per log column.
        val_fraction: share of sessions in the validation split.
        root: folder the dataset was loaded from (if any).

    Attributes:
        sources: for a dataset united from several folders (:meth:`load_folders`), each folder's
            ``{"folder", "content_hash", "hours"}``, its hash as :meth:`load` of that folder alone
            gives it; empty otherwise.
    """

    def __init__(
        self,
        episodes: Sequence[Episode],
        columns: dict[str, Tensor],
        *,
        val_fraction: float = 0.15,
        root: Path | None = None,
        _parent: DrivingDataset | None = None,
    ) -> None:
        self.episodes = tuple(episodes)
        self.columns = columns
        self.val_fraction = val_fraction
        self.root = root
        self._parent = _parent
        self.sessions: tuple[str, ...] = tuple(sorted({e.meta.session_id for e in self.episodes}))
        if _parent is not None:
            self.sessions = _parent.sessions  # indices stay those of the full dataset
        self._val = val_sessions(self.sessions, val_fraction)
        self.sources: tuple[dict[str, Any], ...] = ()

    # ------------------------------------------------------------------ loading
    @staticmethod
    def load(
        source: str | Path | Sequence[str | Path], *, val_fraction: float = 0.15
    ) -> DrivingDataset:
        """Load and validate a dataset.

        Args:
            source: a folder (every ``*.parquet`` below it; its ``manifest.json`` is checked when
                present), one file, or a list of files.
            val_fraction: share of sessions in the validation split.

        Raises:
            DataFormatError: no episode found, a corrupted/foreign file (named), or a file whose
                hash disagrees with the manifest.
        """
        root, files, manifest = _resolve(source)
        episodes: list[Episode] = []
        parts: dict[str, list[np.ndarray]] = {c.name: [] for c in COLUMNS}
        start = 0
        for path in files:
            cols, meta = read_episode(path)
            sha = episode_digest(cols, meta)
            if manifest is not None:
                _check_manifest_entry(manifest, root, path, sha)
            n = len(cols["t"])
            episodes.append(Episode(path, meta, start, start + n, sha))
            start += n
            for name, values in cols.items():
                parts[name].append(values)
        columns = {name: torch.from_numpy(np.concatenate(values)) for name, values in parts.items()}
        return DrivingDataset(episodes, columns, val_fraction=val_fraction, root=root)

    @staticmethod
    def load_folders(
        folders: Sequence[str | Path], *, val_fraction: float = 0.15
    ) -> DrivingDataset:
        """Load the episodes of several dataset folders as one dataset (expert + rollouts).

        One folder is :meth:`load` (its manifest is checked); several are read file by file
        (every ``*.parquet`` below each, validated, without the manifest check).
        """
        if len(folders) == 1:
            return DrivingDataset.load(folders[0], val_fraction=val_fraction)
        resolved = [_resolve(folder) for folder in folders]
        files = [f.resolve() for _, fs, _ in resolved for f in fs]
        if len(set(files)) < len(files):
            raise ConfigError(
                f"the dataset folders {[str(f) for f in folders]} share episode files; each "
                "episode would count twice: give every folder once, and no folder inside another"
            )
        dataset = DrivingDataset.load([f for _, files, _ in resolved for f in files],
                                      val_fraction=val_fraction)  # fmt: skip
        episodes, sources = iter(dataset.episodes), []
        for folder, (root, files, _) in zip(folders, resolved, strict=True):
            mine = [next(episodes) for _ in files]  # load keeps the file order
            names = [e.path.relative_to(root).as_posix() if root else e.path.name for e in mine]
            sources.append({
                "folder": str(folder),
                "content_hash": content_hash(zip(names, (e.digest for e in mine), strict=True)),
                "hours": round(sum(e.num_rows * e.meta.dt for e in mine) / 3600.0, 4),
            })  # fmt: skip
        dataset.sources = tuple(sources)
        return dataset

    # ------------------------------------------------------------------ basic facts
    @property
    def num_samples(self) -> int:
        """Total rows."""
        return sum(e.num_rows for e in self.episodes)

    @property
    def hours(self) -> float:
        """Driving time [h]."""
        return sum(e.num_rows * e.meta.dt for e in self.episodes) / 3600.0

    @cached_property
    def content_hash(self) -> str:
        """Hash of the content (file names relative to the root, episode digests).

        Store it in checkpoints: equal data gives an equal hash, whenever it was written.
        """
        names = [self._name(e.path) for e in self.episodes]
        return content_hash(zip(names, (e.digest for e in self.episodes), strict=True))

    @cached_property
    def sessions_hash(self) -> str:
        """SHA-256 of the sorted session ids, which alone decide the train/validation split.

        Unlike :attr:`content_hash` it does not depend on the floats in the files, so a dataset
        regenerated from the same seed on another CPU has the same sessions hash and split.
        """
        return hashlib.sha256("\n".join(sorted(self.sessions)).encode()).hexdigest()

    def _name(self, path: Path) -> str:
        """File name relative to the dataset root (for the content hash)."""
        root = self.root or (self._parent.root if self._parent else None)
        try:
            return path.relative_to(root).as_posix() if root else path.name
        except ValueError:
            return path.name

    def session_split(self, session_id: str) -> str:
        """``"train"`` or ``"val"`` for a session id."""
        return "val" if session_id in self._val else "train"

    # ------------------------------------------------------------------ splits
    def split(self, name: str) -> DrivingDataset:
        """The episodes of the ``"train"`` or ``"val"`` split (``"all"``: this dataset).

        Raises:
            ConfigError: unknown split name.
        """
        if name not in SPLITS:
            raise ConfigError(f"unknown split '{name}'; valid: {', '.join(SPLITS)}")
        if name == "all":
            return self
        keep = [e for e in self.episodes if self.session_split(e.meta.session_id) == name]
        return self._subset(keep)

    def select_sessions(self, session_ids: Iterable[str]) -> DrivingDataset:
        """The episodes of the given sessions (split membership and session indices are kept)."""
        wanted = set(session_ids)
        return self._subset([e for e in self.episodes if e.meta.session_id in wanted])

    def _subset(self, keep: Sequence[Episode]) -> DrivingDataset:
        """A dataset of the ``keep`` episodes, rows re-concatenated, sessions indexed as here."""
        rows = [torch.arange(e.start, e.stop) for e in keep]
        idx = torch.cat(rows) if rows else torch.zeros(0, dtype=torch.int64)
        episodes, start = [], 0
        for e in keep:
            episodes.append(Episode(e.path, e.meta, start, start + e.num_rows, e.digest))
            start += e.num_rows
        columns = {k: v[idx] for k, v in self.columns.items()}
        return DrivingDataset(
            episodes, columns, val_fraction=self.val_fraction, root=self.root, _parent=self
        )

    # ------------------------------------------------------------------ windows
    @cached_property
    def table(self) -> RowTable:
        """The rows as tensors for windowing (segments, faults, labeller inputs)."""
        c = self.columns
        r = self.num_samples
        features = torch.stack([c[name].float() for name in HISTORY_FEATURES], dim=-1)
        pose = torch.stack([c["x"], c["y"], c["yaw"]], dim=-1).float()
        brk = torch.zeros(r, dtype=torch.int64)
        surface = torch.zeros(r, dtype=torch.int64)
        session = torch.zeros(r, dtype=torch.int64)
        route = torch.zeros(r, dtype=torch.bool)
        for e in self.episodes:
            if e.num_rows == 0:
                continue
            brk[e.start] = 1
            dt_gap = torch.diff(c["t"][e.start : e.stop].double())
            gaps = (dt_gap - e.meta.dt).abs() > GAP_TOLERANCE * e.meta.dt
            brk[e.start + 1 : e.stop] |= gaps.to(torch.int64)
            surface[e.start : e.stop] = SURFACE_NAMES.index(get_surface(e.meta.base_surface).name)
            session[e.start : e.stop] = self.sessions.index(e.meta.session_id)
            route[e.start : e.stop] = "intersection" in e.meta.track_labels
        segment = torch.cumsum(brk, 0) - 1
        counts = torch.bincount(segment, minlength=int(segment.max()) + 1 if r else 0)
        seg_end = torch.cumsum(counts, 0)[segment] if r else segment
        fault_count = torch.cat([torch.zeros(1, dtype=torch.int64), torch.cumsum(
            c["fault"].to(torch.int64), 0)])  # fmt: skip
        inputs = label_inputs({**{k: v.numpy() for k, v in c.items()}, "intersection": route})
        return RowTable(features, pose, segment, seg_end, fault_count, surface, session, inputs)

    def anchors(self, history: int = 10, horizon: int = 1, *, stride: int = 1) -> Tensor:
        """Anchor rows ``(B,)`` of every valid window (see :mod:`gym_s3.data.windows`)."""
        return valid_anchors(self.table, history, horizon, stride)

    def gather(
        self, anchors: Tensor, history: int = 10, horizon: int = 1, *, label_rows: int = LABEL_ROWS
    ) -> dict[str, Tensor]:
        """Window tensors of the given anchor rows (for lazy mini-batches)."""
        return gather_windows(self.table, anchors, history, horizon, label_rows)

    def windows(
        self,
        history: int = 10,
        horizon: int = 1,
        *,
        labels: Sequence[str] | None = None,
        match: str = "any",
        stride: int = 1,
        label_rows: int = LABEL_ROWS,
    ) -> dict[str, Tensor]:
        """All windows of this dataset (or split), optionally filtered by scenario label.

        Args:
            history: history length H [rows].
            horizon: rollout horizon K [rows].
            labels: keep windows with ``any`` (or ``all``) of these labels.
            match: ``"any"`` or ``"all"``.
            stride: anchor every ``stride``-th row.
            label_rows: labelling horizon [rows].

        Returns:
            The window tensors (see :mod:`gym_s3.data.windows`).

        Raises:
            ConfigError: bad sizes, unknown labels, or no window has the labels (the message
                gives the number of windows per label).
        """
        out = self.gather(self.anchors(history, horizon, stride=stride), history, horizon,
                          label_rows=label_rows)  # fmt: skip
        if not labels:
            return out
        mask = label_mask(labels)
        if match == "any":
            keep = (out["labels"] & mask) != 0
        elif match == "all":
            keep = (out["labels"] & mask) == mask
        else:
            raise ConfigError(f"match must be 'any' or 'all', got '{match}'")
        if not bool(keep.any()):
            raise ConfigError(
                f"no window has {match} of the labels {list(labels)}; windows per label: "
                f"{label_counts(out['labels'], LABELS)}"
            )
        return {k: v[keep] for k, v in out.items()}

    def normalization(self, history: int = 1) -> NormStats:
        """Normalisation statistics from the train split (all data if it has one session)."""
        train = self.split("train") if self._parent is None else self
        return NormStats.from_table(train.table, train.anchors(history, 1))

    def wheel_mu(self) -> Tensor:
        """``(R, 4)`` friction under the wheels of every row [-]."""
        return torch.stack([self.columns[m] for m in MU_FEATURES], dim=-1)


def _resolve(
    source: str | Path | Sequence[str | Path],
) -> tuple[Path | None, list[Path], dict | None]:
    """Files of a dataset source, its root folder and its manifest (if any)."""
    if isinstance(source, (str, Path)):
        path = Path(source)
        if path.is_dir() and (path / INCOMPLETE_NAME).exists():
            raise DataFormatError(
                f"{path}: a partial dataset: `s3 data generate` was interrupted (or is still "
                f"running) before writing its manifest ({INCOMPLETE_NAME} is there); generate it "
                "again into an empty folder"
            )
        if path.is_dir():
            files = sorted(path.rglob("*" + EPISODE_SUFFIX))
            if not files:
                raise DataFormatError(
                    f"{path}: no episode files (*{EPISODE_SUFFIX}) found; record with "
                    "`s3 collect` or make one with `s3 data generate`"
                )
            return path, files, _read_manifest(path)
        return path.parent, [path], None
    files = [Path(p) for p in source]
    if not files:
        raise DataFormatError("no episode files given")
    return None, files, None


def _read_manifest(root: Path) -> dict | None:
    """The ``{file: digest}`` table of ``root/manifest.json``, or ``None`` without one."""
    path = root / MANIFEST_NAME
    if not path.is_file():
        return None
    fix = f"regenerate the dataset, or delete {MANIFEST_NAME} to load the episodes unchecked"
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataFormatError(f"{path}: unreadable dataset manifest ({exc}); {fix}") from exc
    if not isinstance(data, dict) or data.get("format") != MANIFEST_FORMAT:
        raise DataFormatError(f"{path}: not a sim2sim2sim dataset manifest; {fix}")
    files = data.get("files", [])
    if not isinstance(files, list) or not all(
        isinstance(e, dict) and isinstance(e.get("path"), str) and isinstance(e.get("digest"), str)
        for e in files
    ):
        raise DataFormatError(
            f"{path}: malformed dataset manifest (every entry of 'files' needs a 'path' and a "
            f"'digest'); {fix}"
        )
    return {entry["path"]: entry["digest"] for entry in files}


def _check_manifest_entry(manifest: dict, root: Path | None, path: Path, sha: str) -> None:
    """Raise :class:`DataFormatError` unless ``path`` is listed with digest ``sha``."""
    name = path.relative_to(root).as_posix() if root else path.name
    expected = manifest.get(name)
    if expected is None:
        raise DataFormatError(
            f"{path}: not listed in {MANIFEST_NAME}; the folder holds files of another dataset "
            "(move them elsewhere or regenerate the manifest)"
        )
    if expected != sha:
        raise DataFormatError(
            f"{path}: content differs from {MANIFEST_NAME} (digest {sha[:12]}..., expected "
            f"{expected[:12]}...); the file was modified or corrupted; regenerate the dataset"
        )
