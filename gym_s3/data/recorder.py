"""The crash-safe episode recorder.

While an episode is recorded, rows go to a *journal*: an Arrow IPC stream
(``<name>.journal.arrows``) whose header carries the schema and the episode metadata. Rows are
buffered and written as one record batch, flushed and ``fsync``-ed, every ``flush_rows`` rows
(default 20 = 1 s at 20 Hz) or when the oldest buffered row is ``flush_s`` seconds old, whichever
comes first; a process killed with SIGKILL loses at most the rows of that buffer.

:meth:`EpisodeRecorder.finish` turns the journal into the finished episode (a Parquet file with the
metadata, written atomically) and deletes the journal. :func:`recover` does the same for journals
left behind by a killed process, keeping every complete batch. Both go through
:func:`finalize_journal`, so a recovered file is exactly what a clean finish would have written
for the same rows.
"""

from __future__ import annotations

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

from gym_s3.data.files import EPISODE_SUFFIX, _fsync_dir, arrow_schema, write_episode
from gym_s3.data.labelling import episode_labels
from gym_s3.data.schema import COLUMN_NAMES, COLUMNS, META_KEY, EpisodeMeta
from gym_s3.errors import ConfigError, DataFormatError

LOGGER = logging.getLogger(__name__)
#: File name suffix of a journal (an episode being recorded, or left by a crash).
JOURNAL_SUFFIX = ".journal.arrows"
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
        self._schema = arrow_schema(meta)
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
        self._writer = pa.ipc.new_stream(self._file, self._schema)
        # the stream writes its schema lazily: an empty batch makes the header (with the
        # metadata) durable before the first row
        self._writer.write_batch(pa.RecordBatch.from_pylist([], schema=self._schema))
        self._sync()
        self._pending: list[Mapping[str, Any]] = []
        self._oldest: float | None = None
        self.rows_written = 0

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
        """
        if self._file is None:
            raise ConfigError(f"the recorder of {self.path.name} is closed")
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
        """Write the buffered rows as one batch and make them durable (flush + fsync)."""
        if self._file is None or not self._pending:
            return
        arrays = [
            pa.array(np.asarray([r[c.name] for r in self._pending], dtype=c.dtype)) for c in COLUMNS
        ]
        self._writer.write_batch(pa.RecordBatch.from_arrays(arrays, schema=self._schema))
        self._sync()
        self.rows_written += len(self._pending)
        self._pending.clear()
        self._oldest = None

    def finish(self, **extra: Any) -> Path | None:
        """Close the journal and write the finished episode.

        Args:
            **extra: merged into the metadata's ``extra`` (e.g. ``end_reason="duration"``).

        Returns:
            The Parquet file, or ``None`` when no row was recorded (nothing is written).
        """
        self.flush()
        self._close()
        return finalize_journal(self.journal_path, extra=extra)

    def abort(self) -> None:
        """Close and delete the journal without writing an episode."""
        self._close()
        self.journal_path.unlink(missing_ok=True)

    def _sync(self) -> None:
        """Flush the journal and ``fsync`` it."""
        assert self._file is not None
        self._file.flush()
        os.fsync(self._file.fileno())

    def _close(self) -> None:
        """Close the stream writer and the journal file (idempotent)."""
        if self._file is None:
            return
        self._writer.close()
        self._sync()
        self._file.close()
        self._file = None


def read_journal(path: str | Path) -> tuple[dict[str, np.ndarray], EpisodeMeta, bool]:
    """Read every complete batch of a journal (a truncated tail is dropped).

    Returns:
        ``(columns, meta, complete)``; ``complete`` is False when a partial batch was dropped.

    Raises:
        DataFormatError: the header (schema and metadata) is unreadable or foreign.
    """
    path = Path(path)
    batches: list[pa.RecordBatch] = []
    complete = True
    with open(path, "rb") as fh:
        try:
            reader = pa.ipc.open_stream(fh)
        except (pa.ArrowException, OSError) as exc:
            raise DataFormatError(f"{path}: journal header is unreadable ({exc})") from exc
        raw = (reader.schema.metadata or {}).get(META_KEY.encode())
        if raw is None:
            raise DataFormatError(f"{path}: not a sim2sim2sim journal (no '{META_KEY}' metadata)")
        meta = EpisodeMeta.from_json(raw, str(path))
        while True:
            try:
                batches.append(reader.read_next_batch())
            except StopIteration:
                break
            except (pa.ArrowException, OSError):
                complete = False
                break
    if batches:
        table = pa.Table.from_batches(batches)
        columns = {name: table.column(name).to_numpy() for name in COLUMN_NAMES}
    else:
        columns = {c.name: np.zeros(0, dtype=c.dtype) for c in COLUMNS}
    return columns, meta, complete


def finalize_journal(journal: str | Path, *, extra: Mapping[str, Any] | None = None) -> Path | None:
    """Turn a journal into a finished episode file and delete the journal.

    Args:
        journal: the ``.journal.arrows`` file.
        extra: merged into the metadata's ``extra``.

    Returns:
        The Parquet file, or ``None`` if the journal held no complete row (it is deleted).
    """
    journal = Path(journal)
    columns, meta, complete = read_journal(journal)
    n = len(columns["t"])
    if n == 0:
        journal.unlink()
        return None
    details = {**meta.extra, **(extra or {})}
    if not complete:
        details["truncated_tail"] = True
    meta = meta.replace(
        labels=episode_labels(columns, meta.track_labels), num_rows=n, extra=details
    )
    stem = journal.name[: -len(JOURNAL_SUFFIX)]
    path = write_episode(journal.with_name(stem + EPISODE_SUFFIX), columns, meta)
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
    """

    journal: Path
    episode: Path | None
    rows: int
    error: str = ""


def recover(directory: str | Path) -> list[Recovered]:
    """Finalise every journal in ``directory`` (recursively) left by a killed recording.

    Unreadable journals are renamed to ``*.corrupt`` (kept for inspection) and reported.
    """
    results = []
    for journal in sorted(Path(directory).rglob("*" + JOURNAL_SUFFIX)):
        try:
            episode = finalize_journal(journal, extra={"recovered": True})
        except DataFormatError as exc:
            journal.rename(journal.with_name(journal.name + ".corrupt"))
            results.append(Recovered(journal, None, 0, str(exc)))
            LOGGER.warning("could not recover %s: %s", journal, exc)
            continue
        rows = 0 if episode is None else _rows_of(episode)
        results.append(Recovered(journal, episode, rows, "" if episode else "no complete row"))
    return results


def _rows_of(path: Path) -> int:
    """Rows of a Parquet file (from its footer)."""
    import pyarrow.parquet as pq

    return int(pq.ParquetFile(path).metadata.num_rows)
