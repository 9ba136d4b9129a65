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
normaliser, statistics of the advantage, weighted means for logs) are in
:mod:`gym_s3.distributed.collectives`, each a no-op returning the local value in a single process;
joining the job and reporting failures is :mod:`gym_s3.distributed.launch`.

Failures: a rank that raises reports its rank and cause on stderr (and to torchrun's error file)
and leaves the group at once, so the other ranks see the connection close instead of waiting;
a rank that stops answering makes the others' collectives time out after ``timeout_s``. Either
way the surviving ranks raise :class:`PeerFailedError`, which names the rank, the timeout and
what to check, instead of hanging.
"""

from __future__ import annotations

from gym_s3.distributed.collectives import (
    agree,
    all_true,
    barrier,
    global_mean_std,
    global_moments,
    shard,
    weighted_means,
    wrap,
)
from gym_s3.distributed.launch import (
    DEFAULT_TIMEOUT_S,
    TIMEOUT_ENV,
    DistContext,
    PeerFailedError,
    current,
    is_collective_failure,
    is_main,
    launch,
    launch_info,
    peer_failure_message,
    resolve_timeout,
)

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "TIMEOUT_ENV",
    "DistContext",
    "PeerFailedError",
    "agree",
    "all_true",
    "barrier",
    "current",
    "global_mean_std",
    "global_moments",
    "is_collective_failure",
    "is_main",
    "launch",
    "launch_info",
    "peer_failure_message",
    "resolve_timeout",
    "shard",
    "weighted_means",
    "wrap",
]
