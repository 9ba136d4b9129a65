"""Data-parallel training on ``torch.distributed``, as launched by ``torchrun``.

``s3 train`` and ``s3 distill train`` run unchanged under
``torchrun --nproc-per-node K ...``: torchrun starts K processes and tells each one its place
through the environment variables ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR`` and
``MASTER_PORT``. :func:`launch` reads them, joins the process group (``gloo`` on CPU, ``nccl`` on
CUDA) with a timeout on every collective operation, and gives the training loops a
:class:`DistContext`: rank, world size, the rank's device and seed, and whether it is the main
rank (rank 0, the only one that logs, evaluates and writes files). Without those variables (or
with ``WORLD_SIZE=1``) everything is a no-op and single-process runs are unchanged.

Gradients are averaged by :class:`torch.nn.parallel.DistributedDataParallel` (:func:`wrap`); the
small collectives the loops need besides (an agreed stop flag, batch moments of the observation
normaliser, statistics of the advantage, weighted means for logs) are the helpers below, each a
no-op returning the local value in a single process.

Failures: a rank that raises reports its rank and cause on stderr (and to torchrun's error file)
and leaves the group at once, so the other ranks see the connection close instead of waiting;
a rank that stops answering makes the others' collectives time out after ``timeout_s``. Either
way the surviving ranks raise :class:`PeerFailedError`, which names the rank, the timeout and
what to check, instead of hanging.
"""

from __future__ import annotations

import datetime
import math
import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

import torch
from torch import Tensor, nn

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
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0] if lines else ''}"


def _report_local_failure(ctx: DistContext, exc: BaseException) -> None:
    """Name this rank as the one that failed (stderr and torchrun's error file)."""
    print(f"[{ctx.label()}] failed: {_first_line(exc)}; leaving the process group so the "
          "other ranks stop", file=sys.stderr, flush=True)  # fmt: skip
    if os.environ.get("TORCHELASTIC_ERROR_FILE"):
        from torch.distributed.elastic.multiprocessing.errors import get_error_handler

        get_error_handler().record_exception(exc)


def wrap(module: nn.Module, ctx: DistContext) -> nn.Module:
    """``module`` wrapped in DistributedDataParallel (bucketed gradient all-reduce), if enabled.

    Parameters are broadcast from rank 0 at construction, so every rank starts from rank 0's
    weights. Buffers are not re-broadcast on each forward: the loops keep them identical
    themselves (e.g. the observation normaliser merges all-reduced moments).
    """
    if not ctx.enabled:
        return module
    from torch.nn.parallel import DistributedDataParallel

    ids = [ctx.local_rank] if ctx.backend == "nccl" else None
    return DistributedDataParallel(module, device_ids=ids, forward_sync_buffers=False)


def agree(flag: bool, ctx: DistContext) -> bool:
    """Rank 0's ``flag`` on every rank (e.g. the time-budget stop decision)."""
    if not ctx.enabled:
        return bool(flag)
    import torch.distributed as dist

    t = torch.tensor([1 if flag else 0], dtype=torch.int32, device=ctx.comm_device)
    dist.broadcast(t, src=0)
    return bool(t.item())


def all_true(flag: bool, ctx: DistContext) -> bool:
    """Whether ``flag`` holds on every rank."""
    if not ctx.enabled:
        return bool(flag)
    import torch.distributed as dist

    t = torch.tensor([1 if flag else 0], dtype=torch.int32, device=ctx.comm_device)
    dist.all_reduce(t, op=dist.ReduceOp.MIN)
    return bool(t.item())


def _sum(t: Tensor, ctx: DistContext) -> Tensor:
    """Sum of ``t`` over ranks (returned on ``t``'s device)."""
    if not ctx.enabled:
        return t
    import torch.distributed as dist

    buf = t.to(ctx.comm_device).clone()
    dist.all_reduce(buf)
    return buf.to(t.device)


def weighted_means(values: Mapping[str, tuple[float, float]], ctx: DistContext
                   ) -> dict[str, float]:  # fmt: skip
    """Job-wide weighted means: ``sum(value * weight) / sum(weight)`` over ranks, per key.

    Args:
        values: key -> ``(value, weight)`` of this rank; every rank passes the same keys (give
            weight 0 where a rank has no value).
        ctx: this process's place in the job.

    Returns:
        key -> mean, for the keys with a positive total weight.
    """
    keys = list(values)
    w = torch.tensor([values[k][1] for k in keys], dtype=torch.float64)
    v = torch.tensor([values[k][0] if values[k][1] > 0 else 0.0 for k in keys],
                     dtype=torch.float64)  # fmt: skip
    total = _sum(torch.cat([v * w, w]), ctx)
    return {k: float(total[i] / total[len(keys) + i]) for i, k in enumerate(keys)
            if total[len(keys) + i] > 0}  # fmt: skip


def global_moments(x: Tensor, ctx: DistContext) -> tuple[int, Tensor, Tensor]:
    """Count, mean and population variance of the finite rows of ``x`` over all ranks.

    Two passes in float64 (sum, then the squared deviations from the job-wide mean), so the
    result equals the moments of every rank's rows concatenated, to float64 rounding.

    Args:
        x: ``(..., F)`` samples of this rank; rows with a non-finite entry are ignored.
        ctx: this process's place in the job.

    Returns:
        ``(n, mean (F,), var (F,))`` in float64 on ``x``'s device (``n == 0``: zeros).
    """
    flat = x.reshape(-1, x.shape[-1]).to(torch.float64)
    flat = flat[torch.isfinite(flat).all(dim=-1)]
    n_sum = _sum(torch.cat([flat.new_tensor([flat.shape[0]]), flat.sum(dim=0)]), ctx)
    n = int(n_sum[0].item())
    if n == 0:
        zeros = flat.new_zeros(x.shape[-1])
        return 0, zeros, zeros
    mean = n_sum[1:] / n
    m2 = _sum((flat - mean).square().sum(dim=0), ctx)
    return n, mean, m2 / n


def global_mean_std(x: Tensor, ctx: DistContext) -> tuple[Tensor, Tensor]:
    """Mean and unbiased standard deviation of every element of ``x`` over all ranks.

    Equal, to rounding, to ``cat(all ranks' x).mean()`` and ``.std()`` (Bessel-corrected, as
    ``torch.std``); scalars in ``x``'s dtype and device.
    """
    flat = x.detach().reshape(-1, 1)
    n, mean, var = global_moments(flat, ctx)
    std = torch.sqrt(var * n / max(n - 1, 1))
    return mean[0].to(x.dtype), std[0].to(x.dtype)


def shard(index: Tensor, ctx: DistContext) -> Tensor:
    """This rank's part ``index[rank::world_size]`` of an order every rank drew alike.

    The shards of the ranks are disjoint and together cover ``index`` (the strided split of
    :class:`torch.utils.data.DistributedSampler`, without its padding).
    """
    return index[ctx.rank :: ctx.world_size] if ctx.enabled else index


def barrier(ctx: DistContext) -> None:
    """Wait until every rank gets here (e.g. after rank 0 wrote a checkpoint)."""
    if ctx.enabled:
        import torch.distributed as dist

        if ctx.backend == "nccl":
            dist.barrier(device_ids=[ctx.local_rank])
        else:
            dist.barrier()
