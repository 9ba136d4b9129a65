"""The cost of resetting cars of ``S3Distilled-v0``: fixed cost, cost per car, and the prefill.

A learned backend with attention caches (``trans``, ``dytr``) starts a fresh car from a history of
steady straight motion, and its carried keys and values must match that history. They used to be
built by a window forward over ``receptive_field - 1`` copies of the steady row; since every copy
is the same token, one token's pass gives the same caches
(:meth:`~gym_s3.dynamics.attention.SlidingWindowTransformer.steady_caches`). This script resets R
cars of an N-car core (R = 1 shows the fixed cost of a reset, R = N a whole batch) and times, in
one run and alternated in blocks so both see the same machine load:

* ``steady``: the reset as the env runs it (one token's pass);
* ``window``: the same reset with the backend's ``steady_extra`` replaced by the window forward
  it stands for (``extra_from_history`` on the steady history), the previous path.

Learned backends only (``ddm``, ``trans``, ``dytr``; ``ddm`` carries no cache, so its two paths
are the same work).

It prints the median milliseconds of each and their ratio. Nothing is asserted.

    python benchmarks/bench_reset.py                          # trans and dytr, N = 4096, eager
    python benchmarks/bench_reset.py --backends ddm trans --cars 1 64 4096 --compile on
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gym_s3.envs.config import DistilledConfig  # noqa: E402
from gym_s3.envs.core import DistilledCore  # noqa: E402


def window_extra(backend):
    """The previous prefill: a window forward over copies of the steady row."""

    def extra(row: torch.Tensor) -> dict[str, torch.Tensor]:
        return backend.extra_from_history(row[:, None].expand(-1, backend.history_length, -1))

    return extra


def time_resets(core: DistilledCore, cars: int, repeats: int, gen: torch.Generator) -> float:
    """Median ms of resetting ``cars`` random cars of ``core``."""
    times = []
    for _ in range(repeats):
        mask = torch.zeros(core.num_envs, dtype=torch.bool)
        mask[torch.randperm(core.num_envs, generator=gen)[:cars]] = True
        start = time.perf_counter()
        core.reset(mask)
        times.append(time.perf_counter() - start)
    return 1e3 * statistics.median(times)


def main(argv: list[str] | None = None) -> None:
    """Print one row per backend and number of reset cars."""
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--backends", nargs="+", default=["trans", "dytr"],
                        help="learned backends to time (ddm, trans, dytr)")  # fmt: skip
    parser.add_argument("--num-envs", type=int, default=4096, help="cars N of the core [count]")
    parser.add_argument("--cars", nargs="+", type=int, default=[1, 64, 512, 4096],
                        help="cars reset at once R, one row each (at most --num-envs) "
                        "[count]")  # fmt: skip
    parser.add_argument("--compile", choices=["off", "on"], default="off",
                        help="torch.compile the env's reset")  # fmt: skip
    parser.add_argument("--blocks", type=int, default=6,
                        help="alternated blocks of each path per row; the median over them is "
                        "printed [count]")  # fmt: skip
    parser.add_argument("--repeats", type=int, default=5,
                        help="timed resets per block after one untimed one; the block's time is "
                        "their median [count]")  # fmt: skip
    parser.add_argument("--threads", type=int, default=1, help="torch threads [count]")
    args = parser.parse_args(argv)
    # the paths are swapped on one core, each block a recompile of the reset's graph fragments
    torch._dynamo.config.recompile_limit = 64
    print(f"torch {torch.__version__}, {args.threads} thread(s), N = {args.num_envs}, "
          f"compile {args.compile}; medians over {args.blocks} alternated blocks of "
          f"{args.repeats}")  # fmt: skip
    print(f"{'backend':8} {'R':>5} {'window ms':>10} {'steady ms':>10} {'ratio':>6}")
    for name in args.backends:
        torch._dynamo.reset()  # each backend compiles afresh (as bench_distilled.py)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            config = DistilledConfig.from_kwargs(
                backend=name, seed=0, threads=args.threads, compile=args.compile == "on"
            )
            core = DistilledCore(args.num_envs, config)
        core.reset(seed=0)
        backend = core.backend
        paths = {"window": window_extra(backend), "steady": backend.steady_extra}
        gen = torch.Generator().manual_seed(0)
        for cars in args.cars:
            times: dict[str, list[float]] = {k: [] for k in paths}
            for _ in range(args.blocks):
                for key, extra in paths.items():
                    backend.steady_extra = extra  # instance attribute: this core only
                    time_resets(core, cars, 1, gen)  # warm-up (compiles on the first call)
                    times[key].append(time_resets(core, cars, args.repeats, gen))
            del backend.steady_extra
            window, steady = (statistics.median(times[k]) for k in ("window", "steady"))
            print(f"{name:8} {cars:5d} {window:10.2f} {steady:10.2f} {window / steady:6.2f}")


if __name__ == "__main__":
    main()
