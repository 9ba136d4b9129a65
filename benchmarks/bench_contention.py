"""Throughput of ``S3Distilled-v0`` on a quiet machine and beside one competing CPU-bound process.

For each thread setting it starts a fresh Python process (OpenMP reads its environment when torch
loads) that times the env step (core step + same-step autoreset, random actions; like
``bench_distilled.py``) and prints the median steps/s; it does so once with the machine as it is
("quiet") and once while this script runs its own competitor, a busy-looping Python process, and
prints ``loaded / quiet``. The settings:

* ``default``: what a user gets without setting anything (:mod:`gym_s3.threads`: 1 thread);
* ``torch-default``: ``S3_TORCH_THREADS=0``, torch's own choice (one thread per core);
* ``torch-default+passive``: the same with ``OMP_WAIT_POLICY=PASSIVE`` (OpenMP threads sleep
  instead of spinning while they wait).

``OMP_NUM_THREADS``/``MKL_NUM_THREADS`` are removed from the children's environment so each
setting is what it says. Nothing is asserted; on a machine that is already busy, "quiet" is not.

    python benchmarks/bench_contention.py                         # bicycle and trans, N = 4096
    python benchmarks/bench_contention.py --backends ddm --num-envs 1024 --seconds 10
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SETTINGS: dict[str, dict[str, str]] = {
    "default": {},
    "torch-default": {"S3_TORCH_THREADS": "0"},
    "torch-default+passive": {"S3_TORCH_THREADS": "0", "OMP_WAIT_POLICY": "PASSIVE"},
}


def child(backend: str, n: int, seconds: float) -> None:
    """Time the env step for about ``seconds`` and print one JSON line (runs in the child)."""
    import warnings

    import torch

    sys.path.insert(0, str(ROOT))
    from gym_s3.envs.config import DistilledConfig
    from gym_s3.envs.core import DistilledCore

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # untrained learned backends warn; fine for timing
        core = DistilledCore(n, DistilledConfig.from_kwargs(backend=backend, seed=0))
    gen = torch.Generator().manual_seed(0)
    actions = [torch.rand(n, 2, generator=gen) * 2 - 1 for _ in range(16)]
    core.reset(seed=0)
    times: list[float] = []
    k = 0
    end = time.perf_counter() + seconds
    while time.perf_counter() < end or len(times) < 5:
        start = time.perf_counter()
        out = core.step(actions[k % len(actions)])
        core.autoreset(out.done)
        times.append(time.perf_counter() - start)
        k += 1
    times = times[2:]  # warm-up
    rate = n / statistics.median(times)
    print(
        json.dumps({"threads": torch.get_num_threads(), "steps_per_s": rate, "steps": len(times)})
    )


def measure(backend: str, n: int, seconds: float, extra_env: dict[str, str]) -> dict:
    """Run one child with ``extra_env`` and return its JSON result."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS",
                                                            "S3_TORCH_THREADS")}  # fmt: skip
    env.update(extra_env)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    cmd = [sys.executable, __file__, "--child", "--backends", backend, "--num-envs", str(n),
           "--seconds", str(seconds)]  # fmt: skip
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def competitor() -> subprocess.Popen:
    """Start one CPU-bound process (a busy Python loop)."""
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


def main(argv: list[str] | None = None) -> None:
    """Measure every setting quiet and loaded; print medians and ratios."""
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--backends", nargs="+", default=["bicycle", "trans"],
                        help="dynamics backends to time, each under every setting (bicycle, ddm, "
                        "trans, dytr)")  # fmt: skip
    parser.add_argument("--num-envs", type=int, default=4096, help="cars N of the env [count]")
    parser.add_argument("--seconds", type=float, default=6.0,
                        help="timing of one measurement (at least 5 steps; each setting is "
                        "measured twice, quiet and loaded) [s]")  # fmt: skip
    parser.add_argument("--settings", nargs="+", default=list(SETTINGS), choices=list(SETTINGS),
                        help="thread settings to measure: default (what a user gets: 1 thread), "
                        "torch-default (S3_TORCH_THREADS=0: torch's choice, one per core), "
                        "torch-default+passive (the same, OMP_WAIT_POLICY=PASSIVE)")  # fmt: skip
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.backends[0], args.num_envs, args.seconds)
        return
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at start, "
          f"N = {args.num_envs}, {args.seconds:g} s per measurement, medians")  # fmt: skip
    header = (f"{'backend':8} {'setting':22} {'threads':>7} {'quiet/s':>10} {'loaded/s':>10} "
              f"{'loaded/quiet':>12}")  # fmt: skip
    print(header)
    print("-" * len(header))
    for backend in args.backends:
        for name in args.settings:
            quiet = measure(backend, args.num_envs, args.seconds, SETTINGS[name])
            proc = competitor()
            try:
                time.sleep(0.5)
                loaded = measure(backend, args.num_envs, args.seconds, SETTINGS[name])
            finally:
                proc.kill()
                proc.wait()
            ratio = loaded["steps_per_s"] / quiet["steps_per_s"]
            print(f"{backend:8} {name:22} {quiet['threads']:7d} {quiet['steps_per_s']:10,.0f} "
                  f"{loaded['steps_per_s']:10,.0f} {ratio:12.2f}", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
