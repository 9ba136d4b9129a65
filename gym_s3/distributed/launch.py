"""Joining a torchrun job: rank, world size, device, seed, timeouts and failure reports.

:func:`launch` reads torchrun's environment (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``,
``MASTER_ADDR``, ``MASTER_PORT``), joins the process group with a timeout on every collective and
turns a peer's failure into :class:`PeerFailedError`; :func:`current` describes the process's
place in the job as a :class:`DistContext`.
"""

from __future__ import annotations

import datetime
import math
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import torch

from gym_s3.errors import ConfigError, S3Error

#: Environment variable with the collective-operation timeout [s] (``--dist-timeout`` wins).
TIMEOUT_ENV = "S3_DIST_TIMEOUT_S"
#: Default collective-operation timeout [s]: long enough for rank 0's evaluations and checkpoints.
DEFAULT_TIMEOUT_S = 300.0

#: Text of the errors that gloo and NCCL raise when a peer is gone or a collective timed out.
_COLLECTIVE_MARKERS = ("gloo", "nccl", "timed out", "timeout", "connection reset",
                       "connection closed", "broken pipe", "processgroup", "c10d")  # fmt: skip


class PeerFailedError(S3Error, RuntimeError):
    """Another rank failed or a collective operation timed out; this rank stopped cleanly."""


@dataclass(frozen=True)
class DistContext:
    """Where this process stands in a data-parallel job.

    Attributes:
        rank: global rank in ``[0, world_size)``.
        local_rank: rank on this machine (selects the GPU).
        world_size: number of processes K.
        backend: ``"gloo"``, ``"nccl"``, or ``"none"`` for a single process.
        timeout_s: timeout of every collective operation [s].
    """

    rank: int = 0
    local_rank: int = 0
    world_size: int = 1
    backend: str = "none"
    timeout_s: float = DEFAULT_TIMEOUT_S

    @property
    def enabled(self) -> bool:
        """Whether more than one process takes part."""
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        """Whether this is rank 0 (logs, evaluates, writes checkpoints)."""
        return self.rank == 0

    @property
    def comm_device(self) -> torch.device:
        """Device of the tensors passed to collectives (the rank's GPU for NCCL, else CPU)."""
        if self.backend == "nccl":
            return torch.device("cuda", self.local_rank)
        return torch.device("cpu")

    def device(self, requested: str | torch.device) -> torch.device:
        """The rank's device: ``cuda`` becomes ``cuda:<local_rank>`` when several ranks run.

        Args:
            requested: the device the user asked for (``cpu``, ``cuda``, ``cuda:0``, ...).
        """
        dev = torch.device(requested)
        if self.enabled and dev.type == "cuda":
            return torch.device("cuda", self.local_rank)
        return dev

    def seed(self, base: int) -> int:
        """Seed of this rank's environments and sampling: ``base + rank``."""
        return int(base) + self.rank

    def share(self, total: int) -> int:
        """This rank's part of a job-wide count, ``ceil(total / world_size)`` (same on all)."""
        return math.ceil(int(total) / self.world_size)

    def label(self) -> str:
        """``rank r/K`` for messages."""
        return f"rank {self.rank}/{self.world_size}"


def launch_info() -> tuple[int, int, int] | None:
    """``(rank, local_rank, world_size)`` from torchrun's environment, or ``None`` outside it.

    Raises:
        ConfigError: the variables are present but not integers, or inconsistent.
    """
    if "WORLD_SIZE" not in os.environ and "RANK" not in os.environ:
        return None
    try:
        world = int(os.environ.get("WORLD_SIZE", "1"))
        rank = int(os.environ.get("RANK", "0"))
        local = int(os.environ.get("LOCAL_RANK", str(rank)))
    except ValueError as exc:
        raise ConfigError(
            f"RANK/WORLD_SIZE/LOCAL_RANK must be integers ({exc}); launch with torchrun, which "
            "sets them, or unset them for a single-process run"
        ) from exc
    if world < 1 or not 0 <= rank < world or local < 0:
        raise ConfigError(
            f"inconsistent launch variables RANK={rank}, WORLD_SIZE={world}, LOCAL_RANK={local}; "
            "RANK must be in [0, WORLD_SIZE) (torchrun sets them for you)"
        )
    return rank, local, world


def resolve_timeout(timeout_s: float | None = None) -> float:
    """The collective timeout [s]: ``timeout_s`` if given, else ``$S3_DIST_TIMEOUT_S``, else 300.

    Raises:
        ConfigError: a non-positive or unparseable value.
    """
    source = "--dist-timeout"
    if timeout_s is None:
        text = os.environ.get(TIMEOUT_ENV)
        if text is None:
            return DEFAULT_TIMEOUT_S
        source = f"${TIMEOUT_ENV}"
        try:
            timeout_s = float(text)
        except ValueError as exc:
            raise ConfigError(f"{source} must be a number of seconds, got {text!r}") from exc
    if not (math.isfinite(timeout_s) and timeout_s > 0):
        raise ConfigError(f"{source} must be a positive number of seconds, got {timeout_s!r}")
    return float(timeout_s)


_TIMEOUT_S = DEFAULT_TIMEOUT_S  # timeout of the group this module initialised


def current() -> DistContext:
    """The context of the initialised default process group (a single process if none)."""
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        return DistContext()
    rank, world = dist.get_rank(), dist.get_world_size()
    local = int(os.environ.get("LOCAL_RANK", str(rank)))
    return DistContext(rank, local, world, str(dist.get_backend()), _TIMEOUT_S)


def is_main() -> bool:
    """Whether this process is rank 0 (always true in a single process)."""
    return current().is_main


def _init(device: str | torch.device, timeout_s: float, info: tuple[int, int, int]) -> None:
    """Join the process group of a torchrun launch (``gloo`` on CPU, ``nccl`` on CUDA)."""
    import torch.distributed as dist

    global _TIMEOUT_S
    rank, local, world = info
    if not dist.is_available():
        raise ConfigError("this torch build has no torch.distributed; install a standard build")
    missing = [k for k in ("MASTER_ADDR", "MASTER_PORT") if k not in os.environ]
    if missing:
        raise ConfigError(f"WORLD_SIZE={world} but {missing} unset; launch with torchrun")
    kind = torch.device(device).type
    kwargs = {}
    if kind == "cuda":
        if not torch.cuda.is_available() or local >= torch.cuda.device_count():
            found = torch.cuda.device_count() if torch.cuda.is_available() else 0
            raise ConfigError(
                f"rank {rank} (local rank {local}) needs a GPU but this machine has {found}; "
                "start at most one process per GPU (--nproc-per-node) or use --device cpu"
            )
        torch.cuda.set_device(local)
        kwargs["device_id"] = torch.device("cuda", local)
    backend = "nccl" if kind == "cuda" else "gloo"
    timeout = datetime.timedelta(seconds=timeout_s)
    try:
        dist.init_process_group(backend, rank=rank, world_size=world, timeout=timeout, **kwargs)
    except Exception as exc:  # rendezvous failures: store/network errors
        raise PeerFailedError(
            f"rank {rank}/{world}: could not join the process group at "
            f"{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']} within {timeout_s:.0f} s "
            f"({_first_line(exc)}); check that every rank was started and can reach rank 0"
        ) from exc
    _TIMEOUT_S = timeout_s


@contextmanager
def launch(device: str | torch.device = "cpu", *, timeout_s: float | None = None
           ) -> Iterator[DistContext]:  # fmt: skip
    """Run a block as one rank of a torchrun job (or as the single process outside torchrun).

    Joins the process group if torchrun's variables ask for more than one process and no group
    exists yet, and leaves it at the end; inside an existing group it only reports it. Failures
    inside the block are made explicit: a collective that failed because a peer died or timed
    out becomes :class:`PeerFailedError`; any other exception is reported with this rank's
    number on stderr (and in torchrun's error file) before it propagates.

    Args:
        device: the training device (``cuda`` selects NCCL and the GPU of the local rank).
        timeout_s: collective timeout [s] (default: :func:`resolve_timeout`).

    Yields:
        this process's :class:`DistContext`.
    """
    import torch.distributed as dist

    created = False
    if not (dist.is_available() and dist.is_initialized()):
        info = launch_info()
        if info is not None and info[2] > 1:
            _init(device, resolve_timeout(timeout_s), info)
            created = True
    ctx = current()
    failed = False
    try:
        yield ctx
    except (KeyboardInterrupt, SystemExit):
        failed = True
        raise
    except Exception as exc:
        failed = True
        if not ctx.enabled or isinstance(exc, PeerFailedError):
            raise
        if is_collective_failure(exc):
            raise PeerFailedError(peer_failure_message(ctx, exc)) from exc
        if not getattr(exc, "_s3_rank_reported", False):  # nested launches report once
            _report_local_failure(ctx, exc)
            exc._s3_rank_reported = True  # type: ignore[attr-defined]
        raise
    finally:
        if created and (not failed or ctx.backend == "gloo"):
            dist.destroy_process_group()


def is_collective_failure(exc: BaseException) -> bool:
    """Whether ``exc`` comes from a collective whose peer died or that timed out."""
    import torch.distributed as dist

    if isinstance(exc, dist.DistError):
        return True
    text = str(exc).lower()
    return isinstance(exc, RuntimeError) and any(m in text for m in _COLLECTIVE_MARKERS)


def peer_failure_message(ctx: DistContext, exc: BaseException) -> str:
    """The message of :class:`PeerFailedError` for a failed collective ``exc``."""
    return (
        f"{ctx.label()} stopped: a peer rank failed or did not answer within the "
        f"{ctx.timeout_s:.0f} s collective timeout ({_first_line(exc)}). Look at the other "
        f"ranks' output for the cause; if a rank is only slow (rank 0 evaluating or writing "
        f"checkpoints), raise --dist-timeout or ${TIMEOUT_ENV}."
    )


def _first_line(exc: BaseException) -> str:
    """``Type: first line of the message`` of ``exc``."""
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0] if lines else ''}"


def _report_local_failure(ctx: DistContext, exc: BaseException) -> None:
    """Name this rank as the one that failed (stderr and torchrun's error file)."""
    print(f"[{ctx.label()}] failed: {_first_line(exc)}; leaving the process group so the "
          "other ranks stop", file=sys.stderr, flush=True)  # fmt: skip
    if os.environ.get("TORCHELASTIC_ERROR_FILE"):
        from torch.distributed.elastic.multiprocessing.errors import get_error_handler

        get_error_handler().record_exception(exc)
