"""A recording process for the fault tests: appends rows until a signal or a full disk stops it.

Run as ``python recording_child.py OUT_DIR FILE_LIMIT_BYTES``. It records one episode with the
real :class:`~gym_s3.data.recorder.EpisodeRecorder` (default flush: 20 rows = 1 s at 20 Hz) under
:func:`~gym_s3.interrupts.stop_signals_interrupt`, as ``s3 collect`` does, and prints the number
of rows handed to the recorder after every append. SIGINT and SIGTERM finish the episode (prints
``finished``); a full disk (``FILE_LIMIT_BYTES`` > 0 sets ``RLIMIT_FSIZE``) prints the error and
finishes what is durable (prints ``storage-error <message>``, then ``saved``). Row ``i`` has
``t = 0.05 i`` and ``x = i``, so the parent can check every recovered value.
"""

from __future__ import annotations

import resource
import signal
import sys
import time
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[2]), str(Path(__file__).parent)]

from badinput_file_cases import episode_columns, episode_meta  # noqa: E402

from gym_s3.data.recorder import EpisodeRecorder  # noqa: E402
from gym_s3.errors import StorageError  # noqa: E402
from gym_s3.interrupts import stop_signals_interrupt  # noqa: E402

#: rows appended per second (faster than 20 Hz so the tests are short) [1/s]
RATE_HZ = 400.0


def main(out: str, file_limit: int) -> int:
    """Record until stopped; returns the exit code."""
    if file_limit > 0:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of a killed process
        resource.setrlimit(resource.RLIMIT_FSIZE, (file_limit, resource.RLIM_INFINITY))
    template = {k: v[0].item() for k, v in episode_columns(1).items()}
    with stop_signals_interrupt():
        recorder = EpisodeRecorder(out, episode_meta("child", "e0"))
        try:
            for i in range(10**7):
                recorder.append({**template, "t": 0.05 * i, "x": float(i)})
                print(i + 1, flush=True)
                time.sleep(1.0 / RATE_HZ)
        except KeyboardInterrupt:
            recorder.finish(end_reason="interrupted")
            print("finished", flush=True)
            return 130
        except StorageError as exc:
            print("storage-error", exc, flush=True)
            if recorder.finish(end_reason="disk_full") is not None:
                print("saved", flush=True)
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2])))
