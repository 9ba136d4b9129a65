"""The crash-safe episode recorder.

While an episode is recorded, rows go to a *journal* (:mod:`gym_s3.data.journal`): an Arrow IPC
stream (``<name>.journal.arrows``) whose header carries the schema, the episode metadata and the
recording process's PID, and whose batches carry CRC32 checksums. Rows are buffered and written
as one record batch, flushed and ``fsync``-ed, every ``flush_rows`` rows (default 20 = 1 s at
20 Hz) or when the oldest buffered row is ``flush_s`` seconds old, whichever comes first; a
process killed with SIGKILL, or whose disk fills up, loses at most the rows of that buffer. A
stop signal (SIGINT, SIGTERM under :func:`~gym_s3.interrupts.stop_signals_interrupt`) arriving
while a batch is written is held until the batch and the row counts agree.

The recorder holds an exclusive lock on its journal; :func:`recover` leaves locked (live)
journals alone and names the recording process. :meth:`EpisodeRecorder.finish` turns the journal
into the finished episode (a Parquet file with the metadata, written atomically) and deletes the
journal. :func:`recover` does the same for journals left behind by a killed process, keeping
every intact batch. Both go through :func:`finalize_journal`, so a recovered file is exactly what
a clean finish would have written for the same rows; neither ever replaces an existing episode
file (a second one is kept under a ``-recovered<k>`` name).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import pyarrow as pa

from gym_s3.data.files import EPISODE_SUFFIX, _fsync_dir, write_episode
from gym_s3.data.journal import (
    CHECKSUM_KEY,
    JOURNAL_SUFFIX,
    batch_checksum,
    journal_schema,
    scan_journal,
    try_lock,
)
from gym_s3.data.labelling import episode_labels
from gym_s3.data.schema import COLUMN_NAMES, COLUMNS, EpisodeMeta
from gym_s3.errors import ConfigError, DataFormatError, StorageError
from gym_s3.interrupts import critical_section

__all__ = [
    "JOURNAL_SUFFIX",
    "EpisodeRecorder",
    "Recovered",
    "episode_file_name",
    "finalize_journal",
    "read_journal",
    "recover",
]

LOGGER = logging.getLogger(__name__)
_SAFE_NAME = re.compile(r"[^A-Za-z0-9_.:+-]")


def episode_file_name(meta: EpisodeMeta) -> str:
    """File name stem ``<session_id>__<episode_id>`` (unsafe characters replaced by ``_``)."""
    stem = f"{meta.session_id}__{meta.episode_id}"
    return _SAFE_NAME.sub("_", stem).replace(":", "-")


class EpisodeRecorder:
    """Record one episode row by row, crash-safely.

    Args:
        directory: folder of the finished episodes (created if missing).
        meta: metadata of the episode (``labels`` and ``num_rows`` are filled in on finish).
        flush_rows: buffered rows that trigger a durable write (>= 1).
        flush_s: age of the oldest buffered row that triggers a durable write [s] (> 0).

    Raises:
        ConfigError: bad flush settings, a finished episode or journal of the same name exists,
            or the folder cannot be written.
    """

    def __init__(
        self,
        directory: str | Path,
        meta: EpisodeMeta,
        *,
        flush_rows: int = 20,
        flush_s: float = 1.0,
    ) -> None:
        if flush_rows < 1 or not flush_s > 0:
            raise ConfigError(f"need flush_rows >= 1 and flush_s > 0, got {flush_rows}, {flush_s}")
        self.directory = Path(directory)
        self.meta = meta
        self.flush_rows = flush_rows
        self.flush_s = flush_s
        stem = episode_file_name(meta)
        self.path = self.directory / (stem + EPISODE_SUFFIX)
        self.journal_path = self.directory / (stem + JOURNAL_SUFFIX)
        for existing in (self.path, self.journal_path):
            if existing.exists():
                raise ConfigError(
                    f"{existing} already exists; use a new episode id or another folder"
                )
        self._schema = journal_schema(meta)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            self._file: BinaryIO | None = open(self.journal_path, "xb")  # noqa: SIM115
        except FileExistsError:
            raise
        except OSError as exc:
            raise ConfigError(
                f"cannot write episode logs to {self.directory} ({exc}); choose a writable "
                "folder for the logs (s3 collect --out)"
            ) from exc
        try_lock(self._file)  # a fresh file ("xb"): nobody else can hold its lock
        self._failed: StorageError | None = None
        self._pending: list[Mapping[str, Any]] = []
        self._oldest: float | None = None
        self.rows_written = 0
        self._writer = pa.ipc.new_stream(self._file, self._schema)
        # the stream writes its schema lazily: an empty batch makes the header (with the
        # metadata) durable before the first row
        self._write([np.zeros(0, dtype=c.dtype) for c in COLUMNS])

    @property
    def rows(self) -> int:
        """Rows appended so far (durable or buffered)."""
        return self.rows_written + len(self._pending)

    @property
    def closed(self) -> bool:
        """True after :meth:`finish` or :meth:`abort`."""
        return self._file is None

    def append(self, row: Mapping[str, Any]) -> None:
        """Append one row (a value for every column of :data:`~gym_s3.data.schema.COLUMNS`).

        Raises:
            ConfigError: the recorder is closed or the row misses columns.
            StorageError: the journal could not be written (disk full); names the journal.
        """
        if self._file is None:
            raise ConfigError(f"the recorder of {self.path.name} is closed")
        if self._failed is not None:
            raise self._failed
        if len(row) < len(COLUMN_NAMES) or any(name not in row for name in COLUMN_NAMES):
            missing = [name for name in COLUMN_NAMES if name not in row]
            raise ConfigError(f"log row misses columns {missing}")
        self._pending.append(row)
        now = time.monotonic()
        if self._oldest is None:
            self._oldest = now
        if len(self._pending) >= self.flush_rows or now - self._oldest >= self.flush_s:
            self.flush()

    def flush(self) -> None:
        """Write the buffered rows as one checksummed batch and make them durable.

        Raises:
            StorageError: the journal could not be written; the rows written before stay
                recoverable (``s3 data recover``).
        """
        if self._file is None or not self._pending or self._failed is not None:
            return
        arrays = [np.asarray([r[c.name] for r in self._pending], dtype=c.dtype) for c in COLUMNS]
        with critical_section():  # the batch on disk and the counts below agree
            self._write(arrays)
            self.rows_written += len(self._pending)
            self._pending.clear()
            self._oldest = None

    def finish(self, **extra: Any) -> Path | None:
        """Close the journal and write the finished episode.

        After a failed write (disk full) the rows already durable are still saved when the
        episode file can be written; the buffered rows are lost.

        Args:
            **extra: merged into the metadata's ``extra`` (e.g. ``end_reason="duration"``).

        Returns:
            The Parquet file, or ``None`` when no row was recorded (nothing is written).

        Raises:
            StorageError: the episode could not be written (the journal is kept for
                ``s3 data recover``).
        """
        self.flush()
        self._close()
        try:
            return finalize_journal(self.journal_path, extra=extra)
        except StorageError:
            raise
        except OSError as exc:
            raise StorageError(
                f"cannot write the episode of {self.journal_path} ({exc.strerror or exc}); free "
                f"space there, then run `s3 data recover {self.directory}`"
            ) from exc

    def abort(self) -> None:
        """Close and delete the journal without writing an episode."""
        self._close()
        self.journal_path.unlink(missing_ok=True)

    def _write(self, arrays: list[np.ndarray]) -> None:
        """Write one batch with its checksum, flush and ``fsync`` (errors name the journal)."""
        assert self._file is not None
        batch = pa.RecordBatch.from_arrays([pa.array(a) for a in arrays], schema=self._schema)
        try:
            self._writer.write_batch(batch, custom_metadata={CHECKSUM_KEY: batch_checksum(arrays)})
            self._file.flush()
            os.fsync(self._file.fileno())
        except OSError as exc:
            self._failed = StorageError(
                f"cannot write the journal {self.journal_path} ({exc.strerror or exc}); free "
                f"space on that disk or record into another folder (--out). The "
                f"{self.rows_written} rows written before are kept: `s3 data recover "
                f"{self.directory}` turns them into an episode"
            )
            raise self._failed from exc

    def _close(self) -> None:
        """Close the stream writer and the journal file (idempotent; releases the lock)."""
        if self._file is None:
            return
        file, self._file = self._file, None
        if self._failed is not None:  # the disk refused a write: bytes still buffered are lost
            with contextlib.suppress(OSError):
                file.close()
            return
        with contextlib.ExitStack() as stack:
            stack.callback(file.close)
            self._writer.close()
            file.flush()
            os.fsync(file.fileno())


def read_journal(path: str | Path) -> tuple[dict[str, np.ndarray], EpisodeMeta, bool]:
    """Read every intact batch of a journal (a truncated or damaged tail is dropped).

    Returns:
        ``(columns, meta, complete)``; ``complete`` is False when a tail was dropped.

    Raises:
        DataFormatError: the header (schema and metadata) is unreadable, foreign or damaged.
    """
    scan = scan_journal(path)
    return scan.columns, scan.meta, not scan.damage


def finalize_journal(journal: str | Path, *, extra: Mapping[str, Any] | None = None) -> Path | None:
    """Turn a journal into a finished episode file and delete the journal.

    An existing episode file of the same name is never replaced: the new one gets the first
    free ``<name>-recovered<k>`` name (and episode id).

    Args:
        journal: the ``.journal.arrows`` file.
        extra: merged into the metadata's ``extra``.

    Returns:
        The Parquet file, or ``None`` if the journal held no intact row (it is deleted).
    """
    journal = Path(journal)
    scan = scan_journal(journal)
    columns, meta = scan.columns, scan.meta
    if scan.rows == 0:
        journal.unlink()
        return None
    details = {**meta.extra, **(extra or {})}
    if scan.damage:
        details["truncated_tail"] = True
        details["damaged_tail"] = scan.damage
    meta = meta.replace(
        labels=episode_labels(columns, meta.track_labels), num_rows=scan.rows, extra=details
    )
    stem = journal.name[: -len(JOURNAL_SUFFIX)]
    path = journal.with_name(stem + EPISODE_SUFFIX)
    for k in range(1, 1000):
        try:
            path = write_episode(path, columns, meta, overwrite=False)
            break
        except FileExistsError:
            path = journal.with_name(f"{stem}-recovered{k}{EPISODE_SUFFIX}")
            meta = meta.replace(episode_id=f"{scan.meta.episode_id}-recovered{k}")
    else:  # pragma: no cover - a thousand copies of one episode
        raise DataFormatError(f"{journal}: too many episodes named {stem}*; clean up the folder")
    journal.unlink()
    _fsync_dir(journal.parent)
    return path


@dataclass(frozen=True)
class Recovered:
    """Outcome of recovering one journal.

    Attributes:
        journal: the journal that was found.
        episode: the episode file written (``None`` if nothing could be saved).
        rows: rows saved.
        error: why nothing was saved (empty on success).
        note: what else to know (a damaged tail, a name changed to keep an existing episode).
        live: the journal belongs to a running recording and was left alone.
    """

    journal: Path
    episode: Path | None
    rows: int
    error: str = ""
    note: str = ""
    live: bool = False


def recover(directory: str | Path) -> list[Recovered]:
    """Finalise every journal in ``directory`` (recursively) left by a killed recording.

    Journals a live recording holds locked are left alone (reported with ``live=True``).
    Unreadable journals are renamed to ``*.corrupt`` (kept for inspection) and reported.

    Raises:
        DataFormatError: ``directory`` does not exist or is not a folder.
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise DataFormatError(
            f"{directory}: no such folder; give the folder a recording wrote into (s3 collect "
            "--out), where the *.journal.arrows files are"
        )
    return [_recover_one(journal) for journal in sorted(directory.rglob("*" + JOURNAL_SUFFIX))]


def _recover_one(journal: Path) -> Recovered:
    """Recover one journal unless a live recording holds its lock."""
    with open(journal, "rb") as fh:
        if not try_lock(fh):
            return Recovered(journal, None, 0, _live_message(journal), live=True)
        try:
            scan = scan_journal(journal)
            episode = finalize_journal(journal, extra={"recovered": True})
        except DataFormatError as exc:
            journal.rename(journal.with_name(journal.name + ".corrupt"))
            LOGGER.warning("could not recover %s: %s", journal, exc)
            return Recovered(journal, None, 0, str(exc))
    if episode is None:
        return Recovered(journal, None, 0, "no complete row", note=scan.damage)
    notes = [scan.damage] if scan.damage else []
    if episode.name != journal.name[: -len(JOURNAL_SUFFIX)] + EPISODE_SUFFIX:
        notes.append(f"an episode of that name exists, kept both (new one: {episode.name})")
    return Recovered(journal, episode, scan.rows, note="; ".join(notes))


def _live_message(journal: Path) -> str:
    """Why a locked journal is left alone, naming the process that records it."""
    try:
        pid = scan_journal(journal).owner_pid
    except DataFormatError:
        pid = None
    who = f"process {pid}" if pid is not None else "another process"
    return (
        f"{journal} is being recorded right now by {who}; left untouched. Stop that recording "
        f"(Ctrl-C or `kill {pid or '<pid>'}`, which saves it) instead of recovering it; "
        "recover only journals left by a crashed recording"
    )
