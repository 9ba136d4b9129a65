"""Recording faults (issue 23): live journals, name clashes, flipped bits, signals, full disks.

* ``s3 data recover`` run while a recording is live leaves its journal alone and names the PID;
  the recording then finishes with every row;
* recovering a journal whose episode name is taken keeps both files, the old one byte-identical;
* a single flipped bit anywhere in a journal's batches never comes back as a changed value: the
  damaged tail is cut and reported, and ``s3 data validate`` fails on the journal;
* a real recording process stopped by SIGKILL or a full disk loses at most 1 s of rows (the
  recorder's 20-row flush), and stopped by SIGINT or SIGTERM loses none (rows handed to the
  recorder against rows in the episode after recovery).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from badinput_file_cases import episode_columns, episode_meta
from badinput_support import CliExit, run_cli

from gym_s3.data.files import read_episode, write_episode
from gym_s3.data.journal import JOURNAL_SUFFIX, scan_journal
from gym_s3.data.recorder import EpisodeRecorder, recover

pytestmark = pytest.mark.timeout(120)
CHILD = Path(__file__).with_name("recording_child.py")
#: the recorder's flush interval: 1 s of rows at 20 Hz [rows]
ONE_SECOND_ROWS = 20


def _rows(n: int, start: int = 0) -> list[dict]:
    """``n`` valid rows with ``t = 0.05 i`` and ``x = i`` from row ``start``."""
    template = {k: v[0].item() for k, v in episode_columns(1).items()}
    return [{**template, "t": 0.05 * i, "x": float(i)} for i in range(start, start + n)]


def test_recover_leaves_a_live_recording_alone(tmp_path: Path) -> None:
    """Recovering during a recording changes nothing; the recording keeps every row."""
    recorder = EpisodeRecorder(tmp_path, episode_meta("live", "e000"), flush_rows=10)
    for row in _rows(192):
        recorder.append(row)
    before = recorder.journal_path.read_bytes()
    (result,) = recover(tmp_path)
    assert result.live and result.episode is None
    assert f"process {os.getpid()}" in result.error
    with pytest.raises(CliExit) as info:
        run_cli(["data", "recover", str(tmp_path)])
    assert info.value.code == 2 and f"process {os.getpid()}" in info.value.stderr
    assert recorder.journal_path.read_bytes() == before
    for row in _rows(8, start=192):
        recorder.append(row)
    path = recorder.finish()
    assert path is not None
    np.testing.assert_array_equal(read_episode(path)[0]["x"], np.arange(200))


def test_recovery_never_replaces_a_finished_episode(tmp_path: Path) -> None:
    """A journal named like a finished episode is recovered next to it, not over it."""
    meta = episode_meta("s0", "e0")
    finished = write_episode(tmp_path / "s0__e0.parquet", episode_columns(100), meta)
    saved = finished.read_bytes()
    elsewhere = tmp_path / "other"
    recorder = EpisodeRecorder(elsewhere, meta, flush_rows=10)
    for row in _rows(30):
        recorder.append(row)
    assert recorder._file is not None
    recorder._file.close()  # the recording process dies
    recorder.journal_path.rename(tmp_path / recorder.journal_path.name)
    (result,) = recover(tmp_path)
    assert result.episode is not None and result.episode != finished
    assert "kept both" in result.note
    assert finished.read_bytes() == saved and read_episode(finished)[1].num_rows == 100
    columns, new_meta = read_episode(result.episode)
    assert len(columns["t"]) == 30 and new_meta.episode_id == "e0-recovered1"


def _journal_of(folder: Path, rows: int) -> Path:
    """A journal of ``rows`` rows (batches of 10) left by a dead recording."""
    recorder = EpisodeRecorder(folder, episode_meta("s0", "e0"), flush_rows=10)
    for row in _rows(rows):
        recorder.append(row)
    assert recorder._file is not None
    recorder._file.close()
    return recorder.journal_path


def test_flipped_bits_are_never_recovered_as_values(tmp_path: Path) -> None:
    """60 single-bit flips across the batches: each recovers an unchanged prefix or nothing.

    A flip in a batch's bytes must cut the journal at that batch (reported as damage, and
    ``s3 data validate`` fails); it may never yield rows whose values differ from those written.
    """
    pristine = _journal_of(tmp_path / "pristine", 40).read_bytes()
    header = len(pristine) // 4  # the schema with its metadata comes first
    rng = np.random.default_rng(0)
    detected = 0
    for k, position in enumerate(rng.integers(header, len(pristine) - 8, size=60)):
        folder = tmp_path / f"flip{k}"
        folder.mkdir()
        journal = folder / ("s0__e0" + JOURNAL_SUFFIX)
        data = bytearray(pristine)
        data[position] ^= 1 << int(rng.integers(8))
        journal.write_bytes(bytes(data))
        try:
            scan = scan_journal(journal)
        except ValueError:
            detected += 1  # a damaged header is refused as a whole
            continue
        np.testing.assert_array_equal(scan.columns["x"], np.arange(scan.rows), f"flip {k}")
        if scan.damage:
            detected += 1
            with pytest.raises(CliExit) as info:
                run_cli(["data", "validate", str(folder)])
            assert "checksum" in info.value.stderr or "truncated" in info.value.stderr
            assert "s3 data recover" in info.value.stderr
    assert detected >= 30, detected  # the rest hit padding or unused header bytes


def _record_until(tmp_path: Path, stop: signal.Signals | None, file_limit: int = 0) -> tuple:
    """Run the recording child, stop it after 310 rows (or let the disk fill); recover.

    310 is not a multiple of the 20-row flush, so SIGKILL finds rows in the buffer.

    Returns:
        ``(rows handed to the recorder, rows in the saved episode, child's output lines)``.
    """
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, str(CHILD), str(tmp_path), str(file_limit)],
                            stdout=subprocess.PIPE, text=True, env=env)  # fmt: skip
    assert proc.stdout is not None
    handed, lines = 0, []
    for line in proc.stdout:
        lines.append(line.strip())
        if line.strip().isdigit():
            handed = int(line)
            if stop is not None and handed >= 310:
                proc.send_signal(stop)
                break
    lines += [line.strip() for line in proc.stdout]
    proc.wait(30)
    handed = max([handed] + [int(s) for s in lines if s.isdigit()])
    recover(tmp_path)
    (episode,) = tmp_path.glob("*.parquet")
    columns, _ = read_episode(episode)
    np.testing.assert_array_equal(columns["x"], np.arange(len(columns["x"])))
    assert not list(tmp_path.glob("*" + JOURNAL_SUFFIX))
    return handed, len(columns["x"]), lines


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_stop_signals_lose_no_row(tmp_path: Path, stop: signal.Signals) -> None:
    """SIGINT and SIGTERM finish the episode with every row handed to the recorder."""
    handed, saved, lines = _record_until(tmp_path, stop)
    assert "finished" in lines
    assert saved >= handed, f"{stop.name}: lost {handed - saved} rows"


def test_sigkill_loses_at_most_one_second(tmp_path: Path) -> None:
    """SIGKILL loses at most the rows of one flush (1 s of samples)."""
    handed, saved, _ = _record_until(tmp_path, signal.SIGKILL)
    assert handed - saved <= ONE_SECOND_ROWS, f"lost {handed - saved} rows"


def test_full_disk_loses_at_most_one_second_and_names_the_journal(tmp_path: Path) -> None:
    """A journal that cannot grow (64 KiB file limit): the error names it, <= 1 s lost."""
    handed, saved, lines = _record_until(tmp_path, None, file_limit=64 * 1024)
    (error,) = [line for line in lines if line.startswith("storage-error")]
    assert "saved" in lines  # the durable rows were finished into an episode by the child
    assert str(tmp_path / "child__e0.journal.arrows") in error and "free space" in error
    assert handed - saved <= ONE_SECOND_ROWS, f"lost {handed - saved} rows"
