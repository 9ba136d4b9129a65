"""The crash-safe recorder: journal cadence, finishing, recovery, and a real SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from data_helpers import meta_for, straight_columns

from gym_s3.data.files import read_episode
from gym_s3.data.recorder import JOURNAL_SUFFIX, EpisodeRecorder, read_journal, recover
from gym_s3.data.schema import COLUMN_NAMES
from gym_s3.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]


def rows_of(n: int, **kwargs) -> list[dict]:
    """``n`` synthetic rows as dicts."""
    cols = straight_columns(n, **kwargs)
    return [{k: v[i] for k, v in cols.items()} for i in range(n)]


def test_finish_writes_all_rows_and_labels(tmp_path: Path) -> None:
    """Every appended row is in the finished file; labels and extra metadata are set."""
    rec = EpisodeRecorder(tmp_path, meta_for(surface="snow"))
    rows = rows_of(45, speed=12.0, mu=0.25, surface="snow")
    for row in rows:
        rec.append(row)
    path = rec.finish(end_reason="test")
    assert path is not None and path.exists() and not rec.journal_path.exists()
    cols, meta = read_episode(path)
    assert meta.num_rows == 45 and meta.extra["end_reason"] == "test"
    assert "low_friction" in meta.labels  # mu 0.25 < 0.5 everywhere
    expected = straight_columns(45, speed=12.0, mu=0.25, surface="snow")
    for name in COLUMN_NAMES:
        np.testing.assert_array_equal(cols[name], expected[name])


def test_rows_become_durable_every_flush_rows(tmp_path: Path) -> None:
    """19 rows stay buffered; the 20th makes all 20 durable in the journal."""
    rec = EpisodeRecorder(tmp_path, meta_for(), flush_rows=20, flush_s=3600.0)
    rows = rows_of(40)
    for row in rows[:19]:
        rec.append(row)
    assert len(read_journal(rec.journal_path)[0]["t"]) == 0
    rec.append(rows[19])
    cols, _, complete = read_journal(rec.journal_path)
    assert len(cols["t"]) == 20 and complete
    rec.abort()
    assert not rec.journal_path.exists()


def test_old_rows_are_flushed_by_time(tmp_path: Path) -> None:
    """A row older than flush_s is written at the next append even below flush_rows."""
    rec = EpisodeRecorder(tmp_path, meta_for(), flush_rows=1000, flush_s=0.05)
    rows = rows_of(2)
    rec.append(rows[0])
    time.sleep(0.1)
    rec.append(rows[1])
    assert len(read_journal(rec.journal_path)[0]["t"]) == 2
    rec.abort()


def test_recover_unfinished_journal(tmp_path: Path) -> None:
    """A journal never finished (process gone) becomes an episode with its durable rows."""
    rec = EpisodeRecorder(tmp_path, meta_for("s1", "e3"), flush_rows=10)
    for row in rows_of(25):
        rec.append(row)
    rec._file.close()  # the process dies: no finish, buffered rows lost
    results = recover(tmp_path)
    assert len(results) == 1 and results[0].rows == 20
    cols, meta = read_episode(results[0].episode)
    assert meta.extra["recovered"] is True and meta.episode_id == "e3"
    np.testing.assert_array_equal(cols["t"], straight_columns(20)["t"])
    assert not list(tmp_path.glob("*" + JOURNAL_SUFFIX))


def test_recover_drops_a_torn_batch(tmp_path: Path) -> None:
    """A journal cut inside its last batch keeps the complete batches and says so."""
    rec = EpisodeRecorder(tmp_path, meta_for(), flush_rows=10)
    for row in rows_of(30):
        rec.append(row)
    journal = rec.journal_path
    rec._file.close()
    data = journal.read_bytes()
    journal.write_bytes(data[:-200])
    (result,) = recover(tmp_path)
    assert result.rows == 20
    _, meta = read_episode(result.episode)
    assert meta.extra["truncated_tail"] is True


def test_recover_reports_unreadable_journal(tmp_path: Path) -> None:
    """Garbage with a journal name is kept as *.corrupt and reported, not loaded."""
    bad = tmp_path / ("x" + JOURNAL_SUFFIX)
    bad.write_bytes(b"\x00garbage" * 10)
    (result,) = recover(tmp_path)
    assert result.episode is None and "unreadable" in result.error
    assert (tmp_path / (bad.name + ".corrupt")).exists()


def test_empty_journal_writes_nothing(tmp_path: Path) -> None:
    """Finishing without rows writes no episode and removes the journal."""
    rec = EpisodeRecorder(tmp_path, meta_for())
    assert rec.finish() is None
    assert not list(tmp_path.iterdir())


def test_refuses_to_overwrite(tmp_path: Path) -> None:
    """A second recorder for the same session/episode id raises instead of overwriting."""
    EpisodeRecorder(tmp_path, meta_for("s", "e"))
    with pytest.raises(ConfigError, match="already exists"):
        EpisodeRecorder(tmp_path, meta_for("s", "e"))


def test_row_missing_columns(tmp_path: Path) -> None:
    """A row without every column is refused, naming what is missing."""
    rec = EpisodeRecorder(tmp_path, meta_for())
    row = rows_of(1)[0]
    del row["yaw_rate"]
    with pytest.raises(ConfigError, match="yaw_rate"):
        rec.append(row)
    rec.abort()


CHILD = textwrap.dedent(
    """
    import sys
    sys.path[:0] = [{repo!r}, {tests!r}]
    from data_helpers import meta_for, straight_columns
    from gym_s3.data.recorder import EpisodeRecorder
    cols = straight_columns(100000)
    rec = EpisodeRecorder({out!r}, meta_for("killed", "e0"))
    for i in range(100000):
        rec.append({{k: v[i] for k, v in cols.items()}})
        print(i, flush=True)
    """
)


@pytest.mark.timeout(60)
def test_sigkill_loses_at_most_one_second(tmp_path: Path) -> None:
    """A recording process killed with SIGKILL loses at most 20 rows (1 s at 20 Hz).

    The child prints the index of every row after appending it; the parent kills it after row
    300 was appended, recovers the journal and finds every row up to at least ``last - 19``, with
    the values that were appended.
    """
    code = CHILD.format(repo=str(REPO), tests=str(Path(__file__).parent), out=str(tmp_path))
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})  # fmt: skip
    last = -1
    assert proc.stdout is not None
    for line in proc.stdout:
        last = int(line)
        if last >= 300:
            break
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    (result,) = recover(tmp_path)
    assert result.episode is not None
    cols, meta = read_episode(result.episode)
    n = len(cols["t"])
    assert n >= last + 1 - 19, f"lost {last + 1 - n} rows"
    expected = straight_columns(n)
    np.testing.assert_array_equal(cols["x"], expected["x"])
    assert meta.extra["recovered"] is True
