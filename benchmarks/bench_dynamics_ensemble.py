"""Cost of an ensemble of dynamics models in ``S3Distilled-v0`` against one model.

An ensemble of K models splits the N cars into K slices and steps each with its own model
(:class:`gym_s3.sources.EnsembleCars`). This times the env step (core step + same-step autoreset,
random actions, as ``bench_distilled.py``) of one shipped model and of K copies of it, so the
ratio is the price of the split alone (K smaller forwards instead of one, the concatenations),
not of other weights. The configurations alternate over ``--rounds`` in one process; it prints
the median of each and its ratio to one model. Nothing is asserted.

    python benchmarks/bench_dynamics_ensemble.py                       # dytr, N = 2048, K = 1 2 3
    python benchmarks/bench_dynamics_ensemble.py --backend ddm --sizes 2048 4096 --members 1 3
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_distilled import bench_one  # noqa: E402

from gym_s3.threads import use_threads  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    """Time each ensemble size, alternated, and print the medians and ratios."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)  # fmt: skip
    p.add_argument("--backend", default="dytr", help="backend whose shipped checkpoint is copied")
    p.add_argument("--sizes", type=int, nargs="+", default=[2048],
                   help="numbers of cars N [count]")  # fmt: skip
    p.add_argument("--members", type=int, nargs="+", default=[1, 2, 3],
                   help="ensemble sizes K to time (1: the model alone; ratios are to the first "
                   "one listed) [count]")  # fmt: skip
    p.add_argument("--rounds", type=int, default=3,
                   help="alternated rounds per configuration; the median over them is printed "
                   "[count]")  # fmt: skip
    p.add_argument("--repeats", type=int, default=30,
                   help="timed env steps per round (their median is the round's time) "
                   "[count]")  # fmt: skip
    p.add_argument("--warmup", type=int, default=5,
                   help="untimed env steps before each round, on top of two first ones "
                   "[count]")  # fmt: skip
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads [count]")
    p.add_argument("--tracks", nargs="+", default=["putnam", "procedural:0"],
                   help="tracks of the scenario pool")  # fmt: skip
    args = p.parse_args(argv)
    use_threads(args.threads)
    import torch

    print(f"torch {torch.__version__}, CPU, threads {torch.get_num_threads()}, backend "
          f"{args.backend}, {args.rounds} alternated rounds of {args.repeats} steps")  # fmt: skip
    print(
        f"{'N':>6} {'K':>3} {'env steps/s':>12} {'ms/step':>9} {'vs K=' + str(args.members[0]):>7}"
    )
    for n in args.sizes:
        times: dict[int, list[float]] = {k: [] for k in args.members}
        for _ in range(args.rounds):
            for k in args.members:
                kw = {} if k == 1 else {"checkpoint": [args.backend] * k}
                r = bench_one(args.backend, n, compiled=False, device="cpu",
                              repeats=args.repeats, warmup=args.warmup,
                              tracks=tuple(args.tracks), forward=False, **kw)  # fmt: skip
                times[k].append(r.step_s)
        base = statistics.median(times[args.members[0]])
        for k in args.members:
            med = statistics.median(times[k])
            print(f"{n:6d} {k:3d} {n / med / 1e3:11.1f}k {med * 1e3:9.2f} {med / base:7.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
