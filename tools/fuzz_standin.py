"""Run the stand-in protocol fuzz campaign from the shell and print its counts.

Usage::

    python tools/fuzz_standin.py                 # full campaign, > 10,000 inputs, fixed seed
    python tools/fuzz_standin.py --scale default # the ~1,500 inputs of the default test run
    python tools/fuzz_standin.py --seed 7 --multiplier 2 --only framing,sequences

It uses the same categories, oracles and measurements as
``tests/reliability/test_protocol_fuzz.py`` (the campaign code lives in ``tests/reliability``) and
prints, per category, the inputs tried, failures found and time, then memory, threads,
connections and idle CPU. Exit status 1 if any input failed.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tests" / "reliability"), str(REPO)]

from fuzz_campaign import CATEGORIES, CategoryResult, run_campaign  # noqa: E402

_MB = 2**20


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, run the campaign, print the report; returns the exit status."""
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--scale", choices=("full", "default"), default="full",
                        help="full: more than 10,000 inputs; default: about 1,500, as in the "
                        "default test run")  # fmt: skip
    parser.add_argument("--seed", type=int, default=20260511,
                        help="hypothesis seed (not used with --derandomize)")  # fmt: skip
    parser.add_argument("--derandomize", action="store_true",
                        help="hypothesis's derandomized, reproducible mode instead of "
                        "--seed")  # fmt: skip
    parser.add_argument("--multiplier", type=float, default=1.0,
                        help="factor on every category's number of inputs (max_examples) "
                        "[factor]")  # fmt: skip
    parser.add_argument("--replays", type=int, default=3,
                        help="times the kept first inputs of every category are sent again "
                        "after the campaign, for the memory check [count]")  # fmt: skip
    names = ", ".join(c.key for c in CATEGORIES)
    parser.add_argument("--only", default="",
                        help=f"comma-separated categories to run, of {names}; empty: all "
                        "(default: %(default)r)")  # fmt: skip
    args = parser.parse_args(argv)
    keys = tuple(k for k in args.only.split(",") if k) or None

    def progress(result: CategoryResult) -> None:
        status = "ok" if not result.failures else f"{len(result.failures)} FAILURE(S)"
        print(
            f"{result.title:34s} inputs {result.inputs:6d}  {result.seconds:7.1f} s  "
            f"rss {result.rss_after / _MB:6.0f} MB  {status}",
            flush=True,
        )
        for text in result.failures:
            print("    " + text.replace("\n", "\n    ")[:4000], flush=True)

    start = time.perf_counter()
    report = run_campaign(
        args.scale,
        seed=None if args.derandomize else args.seed,
        keys=keys,
        multiplier=args.multiplier,
        replays=args.replays,
        progress=progress,
    )
    wall = time.perf_counter() - start
    replay = ", ".join(f"{rss / _MB:.1f}" for rss in report.replay_rss)
    print(f"\nfuzz inputs tried: {report.inputs}   failures: {len(report.failures)}")
    print(f"rss after warm-up {report.rss_start / _MB:.1f} MB, after the campaign "
          f"{report.rss_end / _MB:.1f} MB (includes hypothesis's own bookkeeping)")  # fmt: skip
    print(f"replays: {report.replayed} inputs re-sent, rss after each [MB]: {replay} "
          f"(growth {report.replay_growth / _MB:.2f} MB)")  # fmt: skip
    print(f"server threads: peak {report.peak_threads}, after all clients left "
          f"{report.threads_after}; open connections {report.connections_after}; vehicles left "
          f"{report.vehicles_after}; unknown types recorded {report.unknown_recorded}")  # fmt: skip
    print(f"idle CPU over 1 s after the campaign: {report.idle_cpu:.3f} s; real beamngpy episodes: "
          f"{report.beamngpy_runs}; wall time {wall:.0f} s")  # fmt: skip
    return 1 if report.failures else 0


if __name__ == "__main__":
    sys.exit(main())
