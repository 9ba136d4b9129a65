"""Reading and writing episode files: Arrow schema, atomic Parquet writes, validation on load.

Every reader of logs goes through :func:`read_episode`, which refuses corrupted, truncated or
foreign files with a :class:`~gym_s3.errors.DataFormatError` naming the file and what to do.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from gym_s3.data.schema import (
    COLUMN_NAMES,
    COLUMNS,
    META_KEY,
    REQUIRED_FINITE,
    EpisodeMeta,
)
from gym_s3.errors import DataFormatError, StorageError
from gym_s3.plausibility import LOG_COLUMN_BOUNDS, LOG_STEP_BOUNDS
from gym_s3.tracks.surfaces import SURFACE_NAMES

#: File name suffix of finished episodes.
EPISODE_SUFFIX = ".parquet"
_DAMAGED_HINT = "re-record or regenerate the episode, or delete the file"
_RECOVER_HINT = (
    "if it was left by a crashed recording, run `s3 data recover <folder>`; otherwise "
    "regenerate or delete the file"
)


def arrow_schema(meta: EpisodeMeta | None = None) -> pa.Schema:
    """Arrow schema of an episode table (units in the field metadata, ``meta`` in the header)."""
    fields = [
        pa.field(c.name, pa.from_numpy_dtype(np.dtype(c.dtype)), nullable=False,
                 metadata={"unit": c.unit, "description": c.description})
        for c in COLUMNS
    ]  # fmt: skip
    metadata = {META_KEY: meta.to_json()} if meta is not None else None
    return pa.schema(fields, metadata=metadata)


def columns_to_table(columns: Mapping[str, np.ndarray], meta: EpisodeMeta) -> pa.Table:
    """Build the table of one episode from column arrays (cast to the schema dtypes).

    Raises:
        DataFormatError: a column is missing or the columns differ in length.
    """
    missing = [name for name in COLUMN_NAMES if name not in columns]
    if missing:
        raise DataFormatError(f"episode columns missing: {missing}")
    lengths = {len(columns[name]) for name in COLUMN_NAMES}
    if len(lengths) != 1:
        raise DataFormatError(f"episode columns differ in length: {sorted(lengths)}")
    arrays = [pa.array(np.asarray(columns[c.name], dtype=c.dtype)) for c in COLUMNS]
    return pa.Table.from_arrays(arrays, schema=arrow_schema(meta))


def _fsync_dir(path: Path) -> None:
    """Make a rename in ``path`` durable (no-op where directories cannot be opened)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_episode(
    path: str | Path,
    columns: Mapping[str, np.ndarray],
    meta: EpisodeMeta,
    *,
    overwrite: bool = True,
) -> Path:
    """Write one finished episode atomically (temporary file, fsync, rename).

    Pages carry CRC checksums, verified on read, so flipped bits are reported, not loaded.

    Args:
        path: destination ``.parquet`` file.
        columns: one array per :data:`~gym_s3.data.schema.COLUMNS` entry, equal lengths.
        meta: episode metadata (its ``num_rows`` is set to the number of rows).
        overwrite: replace an existing file at ``path``; if False, raise ``FileExistsError``
            instead (decided atomically by a hard link).

    Returns:
        The path written.

    Raises:
        FileExistsError: ``overwrite`` is False and ``path`` exists.
        StorageError: the file cannot be written (disk full, no permission); names the path.
    """
    path = Path(path)
    n = len(next(iter(columns.values()))) if columns else 0
    table = columns_to_table(columns, meta.replace(num_rows=n))
    tmp = path.with_name(path.name + ".tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, tmp, compression="zstd", write_page_checksum=True)
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        if overwrite:
            os.replace(tmp, path)
        else:
            try:
                os.link(tmp, path)
            finally:
                tmp.unlink(missing_ok=True)
    except FileExistsError:
        raise
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise StorageError(
            f"cannot write the episode file {path} ({exc.strerror or exc}); free space on that "
            "disk or choose a writable output folder"
        ) from exc
    _fsync_dir(path.parent)
    return path


def read_meta(path: str | Path) -> EpisodeMeta:
    """Read only the metadata of an episode file (cheap; validates the header).

    Raises:
        DataFormatError: missing, corrupted, truncated or foreign file.
    """
    path = Path(path)
    return _meta_from_schema(_open(path).schema_arrow, path)


def read_episode(path: str | Path) -> tuple[dict[str, np.ndarray], EpisodeMeta]:
    """Read and validate one episode file.

    Returns:
        ``(columns, meta)``: numpy arrays per column (schema dtypes) and the metadata.

    Raises:
        DataFormatError: naming the file and the problem: not Parquet / truncated / corrupted,
            foreign (no sim2sim2sim metadata), newer schema version, missing or mistyped
            columns, NaN where a value is required, surface ids out of range, time not
            increasing, or a row count that disagrees with the metadata.
    """
    path = Path(path)
    pfile = _open(path)
    meta = _meta_from_schema(pfile.schema_arrow, path)
    try:
        table = pfile.read()
    except (pa.ArrowException, OSError) as exc:
        raise DataFormatError(
            f"{path}: cannot read the episode data, the file is corrupted ({exc}); {_RECOVER_HINT}"
        ) from exc
    columns = _check_columns(table, path)
    _check_values(columns, meta, path)
    return columns, meta


def _open(path: Path) -> pq.ParquetFile:
    """Open a Parquet file or raise a :class:`DataFormatError` that names it."""
    if not path.is_file():
        raise DataFormatError(
            f"{path}: no such log file; check the path (give a dataset folder or a .parquet "
            "episode file, e.g. one written by `s3 data generate` or `s3 collect`)"
        )
    try:
        return pq.ParquetFile(path, page_checksum_verification=True)
    except (pa.ArrowException, OSError) as exc:
        raise DataFormatError(
            f"{path}: not a readable Parquet file; it is truncated, corrupted or not a log "
            f"({exc}); {_RECOVER_HINT}"
        ) from exc


def _meta_from_schema(schema: pa.Schema, path: Path) -> EpisodeMeta:
    """The :class:`EpisodeMeta` stored in a file's schema metadata."""
    raw = (schema.metadata or {}).get(META_KEY.encode())
    if raw is None:
        raise DataFormatError(
            f"{path}: not a sim2sim2sim driving log (its Parquet metadata has no "
            f"'{META_KEY}' entry); only files written by `s3 collect` or `s3 data generate` "
            "can be loaded"
        )
    return EpisodeMeta.from_json(raw, str(path))


def _check_columns(table: pa.Table, path: Path) -> dict[str, np.ndarray]:
    """Check names and dtypes; return numpy columns."""
    missing = [name for name in COLUMN_NAMES if name not in table.column_names]
    if missing:
        raise DataFormatError(
            f"{path}: missing log columns {missing}; the file was not written with this schema"
        )
    out: dict[str, np.ndarray] = {}
    for c in COLUMNS:
        col = table.column(c.name)
        want = pa.from_numpy_dtype(np.dtype(c.dtype))
        if col.type != want:
            raise DataFormatError(f"{path}: column '{c.name}' has type {col.type}, expected {want}")
        if col.null_count:
            raise DataFormatError(f"{path}: column '{c.name}' has {col.null_count} missing values")
        out[c.name] = col.to_numpy().copy()  # writable, owned by the caller
    return out


def _check_values(columns: dict[str, np.ndarray], meta: EpisodeMeta, path: Path) -> None:
    """Value checks: finiteness, surface ids, time order, row count."""
    n = len(columns["t"])
    if meta.num_rows and meta.num_rows != n:
        raise DataFormatError(
            f"{path}: has {n} rows but its metadata says {meta.num_rows}; the file is truncated "
            f"or was altered; {_RECOVER_HINT}"
        )
    for name in REQUIRED_FINITE:
        bad = ~np.isfinite(columns[name])
        if bad.any():
            row = int(np.argmax(bad))
            raise DataFormatError(
                f"{path}: column '{name}' has {int(bad.sum())} non-finite values (first at row "
                f"{row}); the log is corrupted. {_DAMAGED_HINT}"
            )
    for name in ("surface_fl", "surface_fr", "surface_rl", "surface_rr"):
        ids = columns[name]
        if n and (ids.min() < 0 or ids.max() >= len(SURFACE_NAMES)):
            raise DataFormatError(
                f"{path}: column '{name}' has surface ids outside 0..{len(SURFACE_NAMES) - 1}; "
                f"{_DAMAGED_HINT}"
            )
    for name, bounds in LOG_COLUMN_BOUNDS.items():
        values = columns[name]
        bad = (values < bounds.lo) | (values > bounds.hi)  # NaN compares False: checked above
        if bad.any():
            row = int(np.argmax(bad))
            raise DataFormatError(
                f"{path}: column '{name}' = {values[row]:g} at row {row} is outside its physical "
                f"range [{bounds.lo:g}, {bounds.hi:g}] {bounds.unit} ({int(bad.sum())} such rows); "
                f"the log is corrupted or not from a car. {_DAMAGED_HINT}"
            )
    steps = np.diff(columns["t"].astype(np.float64))
    if n > 1 and (steps > LOG_STEP_BOUNDS.hi).any():
        row = int(np.argmax(steps > LOG_STEP_BOUNDS.hi)) + 1
        raise DataFormatError(
            f"{path}: time step {steps[row - 1]:g} s before row {row} is outside its range "
            f"[0, {LOG_STEP_BOUNDS.hi:g}] s (rows come at 20 Hz; a longer pause ends an "
            f"episode); {_DAMAGED_HINT}"
        )
    if n > 1 and not (np.diff(columns["t"]) > 0).all():
        row = int(np.argmax(np.diff(columns["t"]) <= 0)) + 1
        raise DataFormatError(
            f"{path}: column 't' is not strictly increasing (at row {row}); {_DAMAGED_HINT}"
        )
