"""The journal format of an episode being recorded: checksummed batches and an owner lock.

A journal (``<name>.journal.arrows``) is an Arrow IPC stream. Its schema metadata carries the
episode metadata (JSON under :data:`~gym_s3.data.schema.META_KEY`), the CRC32 of that JSON, the
journal format version and the PID of the recording process. Every record batch carries the
CRC32 of its column bytes in its custom metadata, so a flipped bit is detected instead of
recovered as a changed value; reading stops at the first damaged or truncated batch and reports
from which row on the tail was lost.

The recording process holds an exclusive ``flock`` on the journal for as long as it writes it;
:func:`try_lock` lets ``s3 data recover`` see that a journal is live and leave it alone. The OS
releases the lock when the process dies, however it dies, so a crashed recording's journal is
always recoverable.
"""

from __future__ import annotations

import json
import os
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import numpy as np
import pyarrow as pa

from gym_s3.data.files import arrow_schema
from gym_s3.data.schema import COLUMN_NAMES, COLUMNS, META_KEY, EpisodeMeta
from gym_s3.errors import DataFormatError

try:  # POSIX; elsewhere journals are not locked
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

#: File name suffix of a journal (an episode being recorded, or left by a crash).
JOURNAL_SUFFIX = ".journal.arrows"
#: Schema metadata: journal format version ("2": checksummed batches).
FORMAT_KEY = "sim2sim2sim.journal"
FORMAT_VERSION = "2"
#: Schema metadata: JSON ``{"pid": ..., "meta_crc32": ...}`` of the recording.
HEADER_KEY = "sim2sim2sim.journal_header"
#: Custom metadata of every batch: CRC32 (decimal) of its column bytes.
CHECKSUM_KEY = "crc32"


def batch_checksum(arrays: Sequence[np.ndarray]) -> str:
    """CRC32 (decimal string) of the bytes of ``arrays`` (one per column, in schema order)."""
    crc = 0
    for array in arrays:
        crc = zlib.crc32(np.ascontiguousarray(array).tobytes(), crc)
    return str(crc)


def journal_schema(meta: EpisodeMeta) -> pa.Schema:
    """Episode schema plus the journal header (format, metadata checksum, this process's PID)."""
    schema = arrow_schema(meta)
    meta_json = meta.to_json().encode()
    header = {"pid": os.getpid(), "meta_crc32": zlib.crc32(meta_json)}
    return schema.with_metadata(
        {**schema.metadata, FORMAT_KEY: FORMAT_VERSION, HEADER_KEY: json.dumps(header)}
    )


def try_lock(fh: IO[bytes]) -> bool:
    """Take the exclusive owner lock of an open journal without waiting; False if held."""
    if fcntl is None:  # pragma: no cover - Windows
        return True
    try:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


@dataclass(frozen=True)
class JournalScan:
    """What a journal holds.

    Attributes:
        columns: one array per column, the rows of every intact batch.
        meta: the episode metadata from the header.
        owner_pid: PID of the process that recorded it (``None`` for old journals).
        damage: empty when every batch is intact; else which rows were lost and why.
    """

    columns: dict[str, np.ndarray]
    meta: EpisodeMeta
    owner_pid: int | None
    damage: str

    @property
    def rows(self) -> int:
        """Rows in intact batches."""
        return len(self.columns["t"])


def scan_journal(path: str | Path) -> JournalScan:
    """Read every intact batch of a journal; stop at the first truncated or damaged one.

    Raises:
        DataFormatError: the header (schema and metadata) is unreadable, foreign or damaged.
    """
    path = Path(path)
    batches: list[pa.RecordBatch] = []
    damage = ""
    with open(path, "rb") as fh:
        try:
            reader = pa.ipc.open_stream(fh)
        except (pa.ArrowException, OSError) as exc:
            raise DataFormatError(f"{path}: journal header is unreadable ({exc})") from exc
        meta, pid, checked = _header(reader.schema, path)
        rows = 0
        while True:
            try:
                batch, custom = reader.read_next_batch_with_custom_metadata()
            except StopIteration:
                break
            except (pa.ArrowException, OSError):
                damage = f"rows from {rows} on lost: the last batch is truncated"
                break
            if checked and not _intact(batch, custom):
                damage = (
                    f"rows from {rows} on lost: batch {len(batches)} fails its checksum "
                    "(flipped bits)"
                )
                break
            batches.append(batch)
            rows += batch.num_rows
    if batches:
        table = pa.Table.from_batches(batches)
        columns = {name: table.column(name).to_numpy() for name in COLUMN_NAMES}
    else:
        columns = {c.name: np.zeros(0, dtype=c.dtype) for c in COLUMNS}
    return JournalScan(columns, meta, pid, damage)


def _header(schema: pa.Schema, path: Path) -> tuple[EpisodeMeta, int | None, bool]:
    """``(meta, owner pid, batches checksummed)`` of a journal's schema metadata."""
    metadata = schema.metadata or {}
    raw = metadata.get(META_KEY.encode())
    if raw is None:
        raise DataFormatError(f"{path}: not a sim2sim2sim journal (no '{META_KEY}' metadata)")
    version = metadata.get(FORMAT_KEY.encode())
    if version is None:  # journals of older versions: no checksums, no owner
        return EpisodeMeta.from_json(raw, str(path)), None, False
    try:
        header = json.loads(metadata[HEADER_KEY.encode()])
        pid, meta_crc = int(header["pid"]), int(header["meta_crc32"])
    except (KeyError, TypeError, ValueError) as exc:
        raise DataFormatError(f"{path}: journal header is damaged ({exc!r})") from exc
    if zlib.crc32(raw) != meta_crc:
        raise DataFormatError(
            f"{path}: the episode metadata in the journal header fails its checksum "
            "(flipped bits); the rows cannot be attributed safely"
        )
    return EpisodeMeta.from_json(raw, str(path)), pid, True


def _intact(batch: pa.RecordBatch, custom: pa.KeyValueMetadata | None) -> bool:
    """True when the batch's columns match the CRC32 stored with it."""
    expected = (custom or {}).get(CHECKSUM_KEY.encode())
    if expected is None:
        return False
    arrays = [batch.column(c.name).to_numpy(zero_copy_only=False) for c in COLUMNS]
    return batch_checksum(arrays).encode() == expected
