"""Throughput of ``S3Distilled-v0``: env-only steps per second per backend, overhead, memory.

For every backend and batch size N it times the env step the training faces run (core step +
same-step autoreset of the cars that finished; random actions drawn beforehand), eager and with
``torch.compile``, and prints medians. At ``--overhead-n`` (default 4096) it also times the bare
backend forward (``backend.step`` on the same state) and prints the overhead ratio env step /
backend forward, and the memory of the per-car tensors; ``done`` is the mean number of cars that
finished (and were reset) per timed step under the random actions. Nothing is asserted.

    python benchmarks/bench_distilled.py                      # all backends, eager + compile
    python benchmarks/bench_distilled.py --backends bicycle --sizes 4096 --compile off
    python benchmarks/bench_distilled.py --device cuda        # on a GPU (synchronised timing)

Compile times are printed separately (the first call compiles; expect tens of seconds on a CPU).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gym_s3.envs.config import DistilledConfig  # noqa: E402
from gym_s3.envs.core import DistilledCore  # noqa: E402

BACKENDS = ("bicycle", "ddm", "trans", "dytr")


@dataclass
class Result:
    """One benchmark row."""

    backend: str
    n: int
    compiled: bool
    step_s: float
    compile_s: float = float("nan")
    forward_s: float = float("nan")
    bytes_per_env: float = float("nan")
    done_per_step: float = float("nan")

    @property
    def steps_per_s(self) -> float:
        """Env steps per second (N cars per step)."""
        return self.n / self.step_s


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _median_time(fn, device: torch.device, repeats: int) -> float:
    """Median wall time of ``fn()`` [s] over ``repeats`` calls (after the caller's warm-up)."""
    times = []
    for _ in range(repeats):
        _sync(device)
        start = time.perf_counter()
        fn()
        _sync(device)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def bench_one(
    backend: str, n: int, *, compiled: bool, device: str, repeats: int, warmup: int,
    tracks: tuple[str, ...], forward: bool, **env_kwargs,
) -> Result:  # fmt: skip
    """Time the env step of ``backend`` with N cars (and optionally the bare forward).

    ``env_kwargs`` are extra env arguments (e.g. ``nonfinite_action="zero"`` on a GPU, which
    keeps the action check free of host synchronisation).
    """
    if compiled:
        torch._dynamo.reset()  # fresh caches and recompile counters for every configuration
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # untrained learned backends warn; fine for timing
        config = DistilledConfig.from_kwargs(
            backend=backend, device=device, compile=compiled, seed=0, tracks=tracks, **env_kwargs
        )
        core = DistilledCore(n, config)
    dev = core.device
    gen = torch.Generator().manual_seed(0)
    actions = [(torch.rand(n, 2, generator=gen) * 2 - 1).to(dev) for _ in range(16)]
    k = [0]
    finished: list[Tensor] = []

    def env_step() -> None:
        out = core.step(actions[k[0] % len(actions)])
        core.autoreset(out.done)
        finished.append(out.done)
        k[0] += 1

    core.reset(seed=0)
    _sync(dev)
    start = time.perf_counter()
    env_step()  # compiles on the first call when compiled
    env_step()
    _sync(dev)
    compile_s = time.perf_counter() - start if compiled else float("nan")
    for _ in range(warmup):
        env_step()
    finished.clear()
    result = Result(backend, n, compiled, _median_time(env_step, dev, repeats), compile_s)
    result.done_per_step = float(torch.stack(finished).sum()) / len(finished)
    if forward:
        state, mu = core.state, core.wheel_mu
        be = core.backend
        act = actions[0]

        def fwd():
            with torch.no_grad():
                return be.step(state, act, mu)

        fwd_fn = torch.compile(fwd, fullgraph=True, dynamic=False) if compiled else fwd
        for _ in range(warmup + 2):
            fwd_fn()
        result.forward_s = _median_time(fwd_fn, dev, repeats)
        result.bytes_per_env = core.bytes_per_env()
    return result


def print_header(device: str, tracks) -> None:
    """Print the run settings and the table header."""
    print(f"torch {torch.__version__}, device {device}, threads {torch.get_num_threads()}, "
          f"tracks {list(tracks)}")  # fmt: skip
    print(HEADER)
    print("-" * len(HEADER))


def print_row(r: Result) -> None:
    """Print one table row."""
    ratio = r.step_s / r.forward_s if r.forward_s == r.forward_s else float("nan")
    print(
        f"{r.backend:8} {r.n:6d} {'compile' if r.compiled else 'eager':8} "
        f"{r.step_s * 1e3:9.2f} {r.steps_per_s:11,.0f} {r.forward_s * 1e3:8.2f} "
        f"{ratio:8.2f} {r.bytes_per_env:7.0f} {r.compile_s:9.1f} {r.done_per_step:6.1f}",
        flush=True,
    )


HEADER = (f"{'backend':8} {'N':>6} {'mode':8} {'step ms':>9} {'steps/s':>11} "
          f"{'fwd ms':>8} {'overhead':>8} {'B/env':>7} {'compile s':>9} {'done':>6}")  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    """Run the benchmark grid and print the table."""
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--backends", nargs="+", default=list(BACKENDS),
                        help="dynamics backends to time (bicycle, ddm, trans, dytr)")  # fmt: skip
    parser.add_argument("--sizes", nargs="+", type=int, default=[1024, 4096, 16384],
                        help="numbers of cars N, one row each per backend and mode "
                        "[count]")  # fmt: skip
    parser.add_argument("--compile", choices=["off", "on", "both"], default="both",
                        help="off: eager rows only; on: torch.compile rows only; both: one of "
                        "each")  # fmt: skip
    parser.add_argument("--device", default="cpu",
                        help="torch device, e.g. cpu or cuda (cuda timings "
                        "are synchronised)")  # fmt: skip
    parser.add_argument("--threads", type=int, default=None,
                        help="torch intra-op threads; omitted: torch's default "
                        "[count]")  # fmt: skip
    parser.add_argument("--repeats", type=int, default=30,
                        help="timed env steps per row, and timed bare forwards at --overhead-n; "
                        "the median is printed [count]")  # fmt: skip
    parser.add_argument("--warmup", type=int, default=5,
                        help="untimed env steps per row after the first two (which compile in "
                        "compile mode; their time is printed as compile s) [count]")  # fmt: skip
    parser.add_argument("--overhead-n", type=int, default=4096,
                        help="the N (one of --sizes) at which the bare backend forward, the "
                        "overhead ratio and the bytes per car are also measured "
                        "[count]")  # fmt: skip
    parser.add_argument("--tracks", nargs="+", default=["putnam", "procedural:0", "town:0"],
                        help="tracks of the scenario pool (putnam, "
                        "procedural:K, town:K)")  # fmt: skip
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    modes = {"off": [False], "on": [True], "both": [False, True]}[args.compile]
    print_header(args.device, args.tracks)
    for backend in args.backends:
        for n in args.sizes:
            for compiled in modes:
                r = bench_one(
                    backend, n, compiled=compiled, device=args.device, repeats=args.repeats,
                    warmup=args.warmup, tracks=tuple(args.tracks), forward=n == args.overhead_n,
                )  # fmt: skip
                print_row(r)


if __name__ == "__main__":
    main()
