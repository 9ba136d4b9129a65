"""Torch CPU thread settings of the env, the trainer and the pipeline: one rule, one place.

Measured (``benchmarks/bench_contention.py``): on a 2-core machine with one other CPU-bound
process, torch's default of one intra-op thread per core makes ``S3Distilled-v0`` 10-30x slower,
because its OpenMP threads wait for each other at every parallel op while one of them is
descheduled; with one thread the same step keeps most of its quiet speed. The env's batched ops
are small (N-element vectors), so a second thread buys little even on a quiet machine. The default
is therefore **one thread on the CPU**.

Precedence (first that applies):

1. an explicit ``threads`` argument (``DistilledConfig.threads``, ``--threads`` of ``s3 train`` /
   ``s3 pipeline``); ``0`` leaves torch's setting alone;
2. the environment variable ``S3_TORCH_THREADS`` (same meaning);
3. ``OMP_NUM_THREADS`` set by the user: torch already follows it, nothing is changed;
4. :data:`DEFAULT_CPU_THREADS`.

Accelerator runs are left alone (the GPU does the work; the CPU threads only launch kernels).
"""

from __future__ import annotations

import os

import torch

from gym_s3.errors import ConfigError

__all__ = ["DEFAULT_CPU_THREADS", "ENV_VAR", "configure_threads", "resolve_threads", "use_threads"]

#: environment variable that overrides the default thread count (``0``: leave torch alone)
ENV_VAR = "S3_TORCH_THREADS"
#: torch intra-op threads used on the CPU unless overridden
DEFAULT_CPU_THREADS = 1


def resolve_threads(threads: int | None = None) -> int | None:
    """The thread count to apply by the precedence above, or ``None`` to leave torch alone."""
    if threads is None:
        raw = os.environ.get(ENV_VAR, "").strip()
        if raw:
            try:
                threads = int(raw)
            except ValueError:
                raise ConfigError(
                    f"{ENV_VAR} must be a whole number of threads (0 = torch's choice), got {raw!r}"
                ) from None
        elif os.environ.get("OMP_NUM_THREADS", "").strip():
            return None
        else:
            threads = DEFAULT_CPU_THREADS
    if not isinstance(threads, int) or threads < 0:
        raise ConfigError(f"threads must be an int >= 0 (0 = torch's choice), got {threads!r}")
    return threads or None


def configure_threads(threads: int | None = None, *, device: torch.device | str = "cpu") -> int:
    """Apply the thread rule for work on ``device``; returns torch's intra-op thread count.

    Args:
        threads: explicit count (``None``: ``$S3_TORCH_THREADS`` or the default; ``0``: leave
            torch's setting).
        device: where the work runs; only ``cpu`` changes anything.
    """
    n = resolve_threads(threads)
    if n is not None and torch.device(device).type == "cpu" and torch.get_num_threads() != n:
        torch.set_num_threads(n)
    return torch.get_num_threads()


def use_threads(threads: int | None = None) -> int:
    """Apply a command line's ``--threads`` for the whole run; returns torch's thread count.

    A given count is also written to ``$S3_TORCH_THREADS``, so envs built later in this process
    (which apply the rule again) and child processes keep it.
    """
    if threads is not None:
        resolve_threads(threads)  # validates
        os.environ[ENV_VAR] = str(threads)
    return configure_threads(threads)
