"""Throughput of the reference vehicle simulator (printed, never asserted).

Measures, for each batch size N and execution mode (eager, ``torch.compile``):

* time per control step (20 Hz step = ``substeps`` physics steps), median and best of repeats;
* physics vehicle-steps per second (N x substeps / step time);
* control steps per second (N / step time) and, at N = 1, the real-time factor;
* the first-call time (for compiled mode: compilation, or loading from inductor's disk cache).

Targets from the issue: >= 1 M physics vehicle-steps/s at N = 4096 on the 2-core CPU, and a
single car at >= 20x real time (control step <= 2.5 ms).

Usage::

    python benchmarks/bench_vehicle.py                      # N = 1, 64, 1024, 4096; both modes
    python benchmarks/bench_vehicle.py --n 1 --modes compiled --threads 1

Wall-clock numbers depend on what else runs on the machine; the script prints the load average
and the process CPU time per step next to the wall time so a busy machine is visible.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import time

import torch

from gym_s3.tracks.friction import UniformFriction
from gym_s3.vehicle import VehicleModel


def _controls(n: int, k: int, dtype: torch.dtype) -> torch.Tensor:
    """Slalom controls ``(n, 3)`` at control step ``k`` (phase-shifted per car)."""
    phase = torch.linspace(0, math.pi, n, dtype=dtype)
    steer = 0.3 * torch.sin(2 * math.pi * 0.5 * k * 0.05 + phase)
    return torch.stack([steer, torch.full_like(steer, 0.4), torch.zeros_like(steer)], dim=-1)


def bench(n: int, compiled: bool, steps: int, repeats: int, dtype: torch.dtype) -> dict[str, float]:
    """Time ``repeats`` x ``steps`` control steps of ``n`` cars; return timing statistics [s]."""
    model = VehicleModel(compile=compiled, dtype=dtype)
    friction = UniformFriction(torch.linspace(0.3, 1.0, n, dtype=dtype))
    state = model.initial_state(torch.zeros(n, dtype=dtype), 0.0, 0.0, speed=15.0)
    controls = [_controls(n, k, dtype) for k in range(steps)]
    t0 = time.perf_counter()
    state = model.step(state, controls[0], friction)
    first = time.perf_counter() - t0
    for u in controls[:3]:  # warm-up (allocator, caches)
        state = model.step(state, u, friction)
    walls, cpus = [], []
    for _ in range(repeats):
        w0, c0 = time.perf_counter(), time.process_time()
        for u in controls:
            state = model.step(state, u, friction)
        walls.append((time.perf_counter() - w0) / steps)
        cpus.append((time.process_time() - c0) / steps)
    if bool(state.fault.any()):
        raise RuntimeError("benchmark cars faulted; the timing would not be representative")
    return {
        "first": first,
        "median": statistics.median(walls),
        "best": min(walls),
        "cpu": statistics.median(cpus),
        "substeps": float(model.substeps),
        "compiled": float(model.compiled),
    }


def main() -> None:
    """Parse arguments, run the grid and print one line per (mode, N)."""
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--n", type=int, nargs="+", default=[1, 64, 1024, 4096],
                        help="batch sizes N (cars), one row each per mode [count]")  # fmt: skip
    parser.add_argument("--modes", nargs="+", default=["eager", "compiled"],
                        help="execution modes, one row each per N: eager, or compiled "
                        "(torch.compile; printed as fallback when it could "
                        "not compile)")  # fmt: skip
    parser.add_argument("--threads", type=int, default=None,
                        help="torch intra-op threads; omitted: torch's default "
                        "[count]")  # fmt: skip
    parser.add_argument("--steps", type=int, default=None,
                        help="control steps per timed repeat; omitted: 40 for N <= 64, else 10 "
                        "[steps of 50 ms]")  # fmt: skip
    parser.add_argument("--repeats", type=int, default=5,
                        help="timed repeats per row, after the first call and 3 warm-up steps; "
                        "the median and the best are printed [count]")  # fmt: skip
    parser.add_argument("--dtype", choices=["float32", "float64"], default="float32",
                        help="floating-point precision of the vehicle model")  # fmt: skip
    args = parser.parse_args()
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    dtype = getattr(torch, args.dtype)
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, {os.cpu_count()} CPUs, "
        f"{args.dtype}, load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}"
    )
    header = (
        f"{'mode':<9}{'N':>6}{'first [s]':>11}{'step med [ms]':>15}{'step best [ms]':>16}"
        f"{'cpu [ms]':>10}{'phys veh-steps/s':>18}{'ctrl steps/s':>14}{'x real time':>13}"
    )
    print(header)
    for mode in args.modes:
        for n in args.n:
            steps = args.steps or (40 if n <= 64 else 10)
            r = bench(n, mode == "compiled", steps, args.repeats, dtype)
            label = mode if (mode == "eager" or r["compiled"]) else "fallback"
            step = r["median"]
            print(
                f"{label:<9}{n:>6}{r['first']:>11.1f}{step * 1e3:>15.2f}{r['best'] * 1e3:>16.2f}"
                f"{r['cpu'] * 1e3:>10.2f}{n * r['substeps'] / step:>18,.0f}{n / step:>14,.0f}"
                f"{0.05 / step:>13.1f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
