"""Nothing written before a failure is lost or corrupted (issue 11, bad-input catalogue).

* a checkpoint save that fails while writing (file too large for the process's limit) leaves the
  previous checkpoint at that path byte-identical and loadable;
* a recorder interrupted by an exception keeps its finished episodes and a readable journal that
  ``recover`` turns into an episode with every flushed row;
* ``s3 data generate`` refused for a non-empty folder leaves every file in it untouched;
* a collection session whose simulator dies mid-episode saves the rows recorded so far.
"""

from __future__ import annotations

import resource
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
import torch
from badinput_file_cases import episode_columns, episode_meta
from badinput_support import CliExit, run_cli

from gym_s3 import dynamics
from gym_s3.data.files import read_episode
from gym_s3.data.recorder import EpisodeRecorder, read_journal, recover
from gym_s3.errors import CheckpointError, SimulatorConnectionError, SimulatorTimeoutError

pytestmark = pytest.mark.timeout(120)


@contextmanager
def file_size_limit(limit: int) -> Iterator[None]:
    """Make writes beyond ``limit`` bytes per file fail with ``EFBIG`` in this process."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    previous = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # error instead of a killed process
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, previous)


def _snapshot(folder: Path) -> dict[str, bytes]:
    """Every file below ``folder`` by relative path, with its bytes."""
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*")
            if p.is_file()}  # fmt: skip


def test_failed_checkpoint_save_keeps_the_previous_checkpoint(tmp_path: Path) -> None:
    """A save whose sidecar cannot be written leaves the old pair intact and loadable.

    The new checkpoint has small weights and a 2 MB sidecar (a long training log); with a 1 MB
    file-size limit its weights can be written but its sidecar cannot. Before the fix the new
    weights had already replaced the old ones, so the old sidecar no longer matched its weights.
    """
    stem = tmp_path / "ckpt"
    dynamics.save(dynamics.load("bicycle"), stem)
    before = _snapshot(tmp_path)
    newer = dynamics.make("bicycle", wheelbase=3.3).requires_grad_(False)
    with file_size_limit(2**20), pytest.raises((CheckpointError, OSError)):
        dynamics.save(newer, stem, training={"log": "x" * 2 * 2**20})
    assert _snapshot(tmp_path) == before  # same files, same bytes, no temporary left behind
    reloaded, shipped = dynamics.load(stem).state_dict(), dynamics.load("bicycle").state_dict()
    assert reloaded.keys() == shipped.keys()
    assert all(torch.equal(reloaded[k], shipped[k]) for k in shipped)


def test_interrupted_recorder_keeps_finished_episodes_and_journal(tmp_path: Path) -> None:
    """An exception mid-episode keeps the finished episode and every flushed row of the next."""
    cols = episode_columns(30)
    rows = [{k: v[i].item() for k, v in cols.items()} for i in range(30)]
    first = EpisodeRecorder(tmp_path, episode_meta("s0", "e0"), flush_rows=10)
    for row in rows:
        first.append(row)
    finished = first.finish()
    assert finished is not None
    saved = finished.read_bytes()

    class Crash(Exception):
        """The failure that interrupts the recording."""

    second = EpisodeRecorder(tmp_path, episode_meta("s0", "e1"), flush_rows=10)
    with pytest.raises(Crash):
        for i, row in enumerate(rows):
            if i == 25:
                raise Crash  # 20 rows flushed, 5 buffered: the process dies here
            second.append(row)
    assert finished.read_bytes() == saved
    assert second._file is not None
    second._file.close()  # the process is gone: the OS closes its files and drops the lock
    columns, meta, complete = read_journal(second.journal_path)
    assert complete and len(columns["t"]) == 20 and meta.episode_id == "e1"
    (result,) = recover(tmp_path)
    assert result.rows == 20 and result.episode is not None
    got, _ = read_episode(result.episode)
    np.testing.assert_array_equal(got["t"], cols["t"][:20])
    assert read_episode(finished)[1].num_rows == 30


def test_refused_generate_leaves_a_non_empty_folder_untouched(tmp_path: Path) -> None:
    """``s3 data generate`` into a folder with files exits 2 and changes none of them."""
    (tmp_path / "notes.txt").write_text("my experiment\n")
    from gym_s3.data.files import write_episode

    write_episode(tmp_path / "old" / "s0__e0.parquet", episode_columns(), episode_meta())
    before = _snapshot(tmp_path)
    with pytest.raises(CliExit) as info:
        run_cli(["data", "generate", "--out", str(tmp_path), "--preset", "tiny", "--no-progress"])
    assert info.value.code == 2 and "is not empty" in info.value.stderr
    assert _snapshot(tmp_path) == before


def test_session_keeps_rows_when_the_simulator_dies(tmp_path: Path) -> None:
    """A stand-in stopped mid-episode: a simulator error, and the rows so far saved as a log."""
    pytest.importorskip("beamngpy")
    from gym_s3.beamng.client.link import BeamNGConfig
    from wheel_collector.expert import ExpertInput
    from wheel_collector.session import CollectionSession, SessionConfig

    config = SessionConfig(out_dir=str(tmp_path), duration_s=0.0, flush_rows=5,
                           sim=BeamNGConfig(standin=True, socket_timeout=2.0))  # fmt: skip
    session = CollectionSession(config, ExpertInput(seed=0), seed=0)
    with pytest.raises((SimulatorConnectionError, SimulatorTimeoutError)):
        with session:
            session.run(max_steps=12)
            session.link.server.stop()  # the simulator goes away mid-episode
            session.run(max_steps=20)
    (episode,) = sorted(tmp_path.glob("*.parquet"))
    columns, meta = read_episode(episode)
    assert len(columns["t"]) >= 12 and meta.session_id == session.session_id
    assert not list(tmp_path.glob("*.journal.arrows"))
