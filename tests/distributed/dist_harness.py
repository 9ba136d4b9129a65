"""Start K real processes as the ranks of a gloo job, configured the way torchrun does it.

Each rank runs a worker function of :mod:`dist_workers` in a fresh interpreter (``spawn``), with
``RANK``/``WORLD_SIZE``/``LOCAL_RANK``/``MASTER_ADDR``/``MASTER_PORT`` set and one torch thread.
A worker that raises writes its traceback to ``<results>/error_rank<r>.txt`` and exits with code 1,
so the test can show it.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import socket
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def free_port() -> int:
    """A TCP port that was free a moment ago on the loopback interface."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _entry(rank: int, world: int, port: int, worker: str, results: str, args: tuple) -> None:
    """Child process: torchrun's environment, one thread, the worker; traceback file on error."""
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank),
                      MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))  # fmt: skip
    sys.stderr = open(Path(results) / f"stderr_rank{rank}.txt", "w", buffering=1)  # noqa: SIM115
    import torch

    torch.set_num_threads(1)
    import dist_workers

    try:
        getattr(dist_workers, worker)(rank, Path(results), *args)
    except BaseException:
        (Path(results) / f"error_rank{rank}.txt").write_text(traceback.format_exc())
        sys.stderr.flush()
        os._exit(1)
    sys.stderr.flush()


@dataclass
class RankRun:
    """Outcome of :func:`run_ranks`.

    Attributes:
        exitcodes: exit code per rank (``None``: still running at the deadline, then killed).
        wall_s: time until every rank had ended or the deadline passed [s].
        results: the results folder.
    """

    exitcodes: list[int | None]
    wall_s: float
    results: Path

    def stderr(self, rank: int) -> str:
        """What rank ``rank`` wrote to stderr."""
        path = self.results / f"stderr_rank{rank}.txt"
        return path.read_text() if path.exists() else ""

    def errors(self) -> str:
        """Tracebacks of the ranks that raised (for assertion messages)."""
        texts = [p.read_text() for p in sorted(self.results.glob("error_rank*.txt"))]
        return "\n".join(texts) or "(no traceback)"


def run_ranks(worker: str, results: Path, world: int = 2, args: tuple[Any, ...] = (),
              deadline_s: float = 120.0) -> RankRun:  # fmt: skip
    """Run ``dist_workers.<worker>(rank, results, *args)`` on ``world`` spawned ranks.

    Args:
        worker: name of the worker function.
        results: folder the workers write their outputs to.
        world: number of ranks.
        args: extra arguments of the worker.
        deadline_s: ranks still alive after this long are killed (exit code ``None``) [s].
    """
    results.mkdir(parents=True, exist_ok=True)
    ctx = mp.get_context("spawn")
    port = free_port()
    procs = [ctx.Process(target=_entry, args=(r, world, port, worker, str(results), args))
             for r in range(world)]  # fmt: skip
    start = time.monotonic()
    for p in procs:
        p.start()
    for p in procs:
        p.join(max(0.0, deadline_s - (time.monotonic() - start)))
    wall = time.monotonic() - start
    codes: list[int | None] = []
    for p in procs:
        if p.is_alive():
            p.kill()
            p.join()
            codes.append(None)
        else:
            codes.append(p.exitcode)
    return RankRun(codes, wall, results)
