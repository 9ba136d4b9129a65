"""Catalogue cases of journals (issue 23): live recordings, missing folders, crashes, bit flips.

``s3 data recover`` must refuse a journal a live recording holds (naming its process) and a
folder that does not exist; ``s3 data validate`` must fail on a folder holding only a crash
journal, or a journal with a flipped bit, and point to ``s3 data recover``.
"""

from __future__ import annotations

from pathlib import Path

from badinput_file_cases import episode_columns, episode_meta
from badinput_support import Case, CliExit, run_cli

from gym_s3.data.recorder import EpisodeRecorder

RECOVER = r"s3 data recover"


def _recorder(work: Path, rows: int = 30) -> EpisodeRecorder:
    """A live recorder in ``work/rec`` with ``rows`` rows appended (batches of 10)."""
    cols = episode_columns(rows)
    recorder = EpisodeRecorder(work / "rec", episode_meta("s0", "e0"), flush_rows=10)
    for i in range(rows):
        recorder.append({k: v[i].item() for k, v in cols.items()})
    return recorder


def _recover_live(work: Path) -> None:
    """``s3 data recover`` on the folder of a recording that is still running."""
    recorder = _recorder(work)
    try:
        run_cli(["data", "recover", str(work / "rec")])
    finally:
        recorder.abort()


def _crash_journal(work: Path) -> Path:
    """A folder holding only the journal of a crashed recording; returns the journal."""
    recorder = _recorder(work)
    assert recorder._file is not None
    recorder._file.close()  # the process died: no finish
    return recorder.journal_path


def _flip_a_bit(work: Path) -> None:
    """``s3 data validate`` on a journal with one bit flipped in its last batch."""
    journal = _crash_journal(work)
    data = bytearray(journal.read_bytes())
    data[-40] ^= 0x10  # inside the column bytes of the last batch
    journal.write_bytes(bytes(data))
    run_cli(["data", "validate", str(journal)])


CASES: tuple[Case, ...] = (
    Case("data-recover-live-recording", _recover_live,
         CliExit, r"being recorded right now by process \d+", r"Stop that recording"),
    Case("data-recover-missing-folder", lambda w: run_cli(["data", "recover", str(w / "nope")]),
         CliExit, r"nope: no such folder", r"give the folder a recording wrote into"),
    Case("data-validate-only-crash-journal",
         lambda w: run_cli(["data", "validate", str(_crash_journal(w).parent)]),
         CliExit, r"unfinished recording \(journal, 30 intact rows\)", RECOVER),
    Case("data-validate-flipped-bit-journal", _flip_a_bit,
         CliExit, r"rows from 20 on lost: batch \d fails its checksum", RECOVER),
)  # fmt: skip
