"""The dynamics guard's two paths, timed inside the ``S3Distilled-v0`` step in one run.

Every backend step ends with :func:`gym_s3.dynamics.base.guard`, which freezes cars whose new
state is non-finite or runaway. Its sync-free path selects every tensor of the state row-wise
with ``torch.where`` (what accelerators and compiled graphs run); the eager CPU path passes the
step's state through when every car is sound and freezes only the bad rows. This script drives
the env core (core step + same-step autoreset, random actions, as ``bench_distilled.py``) and
alternates the two paths in blocks of steps on the same cars, so both see the same machine
load; it prints the median milliseconds per step of each and their ratio. Nothing is asserted.

    python benchmarks/bench_guard.py                                  # every backend, N = 4096
    python benchmarks/bench_guard.py --backends trans --num-envs 1024 --blocks 20
"""

from __future__ import annotations

import argparse
import functools
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import gym_s3.dynamics.base as dynamics_base  # noqa: E402
from gym_s3.envs.config import DistilledConfig  # noqa: E402
from gym_s3.envs.core import DistilledCore  # noqa: E402


def time_paths(
    backend: str, n: int, blocks: int, steps: int, seed: int, threads: int
) -> dict[str, float]:
    """Median ms per env step of each guard path (``where``: sync-free, ``rows``: eager CPU)."""
    core = DistilledCore(n, DistilledConfig(backend=backend, seed=seed, threads=threads))
    core.reset()
    g = torch.Generator().manual_seed(seed)
    actions = [torch.rand(n, 2, generator=g) * 2 - 1 for _ in range(8)]
    for k in range(30):  # spread the cars over their episodes
        out = core.step(actions[k % 8])
        core.autoreset(out.done)
    original = dynamics_base.guard
    paths = {"where": functools.partial(original, sync_free=True), "rows": original}
    times: dict[str, list[float]] = {name: [] for name in paths}
    try:
        for block in range(blocks):  # the order alternates so neither path always runs first
            for name in sorted(paths, reverse=block % 2 == 1):
                fn = paths[name]
                dynamics_base.guard = fn
                t0 = time.perf_counter()
                for k in range(steps):
                    out = core.step(actions[k % 8])
                    core.autoreset(out.done)
                times[name].append((time.perf_counter() - t0) / steps)
    finally:
        dynamics_base.guard = original
    return {name: 1e3 * statistics.median(v) for name, v in times.items()}


def main(argv: list[str] | None = None) -> int:
    """Print the table; returns the exit status."""
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--backends", nargs="+", default=["bicycle", "ddm", "trans", "dytr"],
                        help="dynamics backends to time (bicycle, ddm, trans, dytr)")  # fmt: skip
    parser.add_argument("--num-envs", type=int, default=4096, help="cars N [count]")
    parser.add_argument("--blocks", type=int, default=12,
                        help="timed blocks per path (the median is over them) [count]")  # fmt: skip
    parser.add_argument("--steps", type=int, default=5, help="env steps per block [count]")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads [count]")
    parser.add_argument("--seed", type=int, default=0, help="env and action seed")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)  # the env sets it again from DistilledConfig.threads
    print(f"torch {torch.__version__}, cpu, threads {torch.get_num_threads()}, N = {args.num_envs}")
    print(f"{'backend':8s} {'where [ms]':>11s} {'rows [ms]':>10s} {'where / rows':>13s}")
    for backend in args.backends:
        ms = time_paths(backend, args.num_envs, args.blocks, args.steps, args.seed, args.threads)
        ratio = ms["where"] / ms["rows"]
        print(f"{backend:8s} {ms['where']:11.2f} {ms['rows']:10.2f} {ratio:13.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
