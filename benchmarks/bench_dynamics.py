"""Forward throughput of the dynamics backends: steps per second, parameters, memory.

Plain script (nothing is asserted); prints medians of repeated timings::

    python benchmarks/bench_dynamics.py                       # all backends, N = 4096, CPU
    python benchmarks/bench_dynamics.py --n 1024 4096 16384 --threads 1 2
    python benchmarks/bench_dynamics.py --json bench.json     # also write the numbers

For each backend (the shipped checkpoint when there is one, else untrained weights) it times
``backend.step`` on N cars in inference mode (history shift, prediction, pose integration and
the non-finite guard: what an environment pays per step), and reports car-steps per second, the
trainable parameters, the parameter bytes and the per-car state bytes (pose, velocities, history
and the carried ``extra`` tensors). For the transformer backends it also times the same step with
the window recomputed from the history every step instead of carried keys/values ("recompute"),
the design the cache replaced; both give the same predictions (tests/dynamics).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gym_s3.dynamics import BackendState, DynamicsBackend, load, make  # noqa: E402
from gym_s3.dynamics.priming import state_from_window  # noqa: E402
from gym_s3.errors import CheckpointError  # noqa: E402

BACKENDS = ("bicycle", "ddm", "trans", "dytr")


def backend_for(name: str) -> tuple[DynamicsBackend, str]:
    """The shipped checkpoint of ``name`` (or an untrained one) and where it came from."""
    try:
        return load(name), "shipped"
    except CheckpointError:
        torch.manual_seed(0)
        return make(name).eval(), "untrained"


def start_state(backend: DynamicsBackend, n: int) -> BackendState:
    """N cars started from random but plausible history windows."""
    g = torch.Generator().manual_seed(0)
    rows = torch.empty(n, backend.history_length + 1, 9)
    rows[..., 0] = 5.0 + 25.0 * torch.rand(n, rows.shape[1], generator=g)
    rows[..., 1:3] = 0.1 * torch.randn(n, rows.shape[1], 2, generator=g)
    rows[..., 3:5] = 2.0 * torch.rand(n, rows.shape[1], 2, generator=g) - 1.0
    rows[..., 5:9] = 0.1 + torch.rand(n, rows.shape[1], 4, generator=g)
    return state_from_window(backend, rows, torch.zeros(n, 3))


def time_steps(backend: DynamicsBackend, state: BackendState, repeat: int) -> tuple[float, float]:
    """Median wall and process-CPU seconds of one ``step`` of all cars.

    Random actions are drawn beforehand. On a shared machine the CPU time is the steadier number.
    """
    n = state.n
    g = torch.Generator().manual_seed(1)
    actions = 2.0 * torch.rand(repeat + 3, n, 2, generator=g) - 1.0
    mu = 0.1 + torch.rand(repeat + 3, n, 4, generator=g)
    times, cpu = [], []
    with torch.inference_mode():
        for i in range(repeat + 3):
            start, start_cpu = time.perf_counter(), time.process_time()
            state = backend.step(state, actions[i], mu[i])
            if i >= 3:  # warm-up
                times.append(time.perf_counter() - start)
                cpu.append(time.process_time() - start_cpu)
    return statistics.median(times), statistics.median(cpu)


class Recompute(torch.nn.Module):
    """A transformer backend that re-encodes the whole window every step (no carried cache)."""

    def __init__(self, inner: DynamicsBackend) -> None:
        super().__init__()
        self.inner = inner
        self.dt = inner.dt
        self.history_length = inner.history_length

    def step(self, state: BackendState, action: torch.Tensor, mu: torch.Tensor) -> BackendState:
        """The base-class step with ``predict`` replaced by ``predict_window``."""
        from gym_s3.dynamics.base import guard, history_row, integrate_pose

        row = history_row(state.vel, action, mu)
        history = torch.cat([state.history[:, 1:], row[:, None, :]], dim=1)
        vel = self.inner.predict_window(history)
        pose = integrate_pose(state.pose, state.vel, vel, self.dt)
        return guard(state, BackendState(pose=pose, vel=vel, history=history, extra={}))


def state_bytes(state: BackendState) -> int:
    """Bytes of every per-car tensor of ``state`` divided by N."""
    return sum(t.numel() * t.element_size() for t in state.tensors().values()) // state.n


def main() -> None:
    """Parse arguments and print the table."""
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--backends", nargs="+", default=list(BACKENDS),
                        help="dynamics backends to time (bicycle, ddm, trans, dytr); the shipped "
                        "checkpoint when there is one, else untrained weights")  # fmt: skip
    parser.add_argument("--n", type=int, nargs="+", default=[4096],
                        help="numbers of cars N, one row each [count]")  # fmt: skip
    parser.add_argument("--threads", type=int, nargs="+", default=[torch.get_num_threads()],
                        help="torch intra-op threads, one row each; the default is torch's own "
                        "on this machine [count]")  # fmt: skip
    parser.add_argument("--repeat", type=int, default=30,
                        help="timed steps per row after 3 untimed ones; the median is printed "
                        "[count]")  # fmt: skip
    parser.add_argument("--json", default=None,
                        help="also write the rows to this JSON file; omitted: "
                        "print only")  # fmt: skip
    args = parser.parse_args()
    rows = []
    print(f"torch {torch.__version__}, CPU, float32, inference mode; median of {args.repeat}")
    header = f"{'backend':8} {'variant':9} {'source':9} {'thr':>3} {'N':>7} {'ms/step':>9} "
    header += f"{'steps/s':>11} {'cpu ms':>8} {'params':>7} {'param kB':>8} {'B/car':>6}"
    print(header)
    for name in args.backends:
        backend, source = backend_for(name)
        params = sum(p.numel() for p in backend.parameters())
        pbytes = sum(p.numel() * p.element_size() for p in backend.parameters())
        variants = [("cached", backend)]
        if hasattr(backend, "predict_window"):
            variants.append(("recompute", Recompute(backend)))
        for threads in args.threads:
            torch.set_num_threads(threads)
            for n in args.n:
                state = start_state(backend, n)
                for variant, model in variants:
                    st = state if variant == "cached" else BackendState(
                        state.pose, state.vel, state.history, {}, state.fault)  # fmt: skip
                    sec, cpu = time_steps(model, st, args.repeat)
                    row = {"backend": name, "variant": variant, "source": source,
                           "threads": threads, "n": n, "ms_per_step": sec * 1e3,
                           "car_steps_per_s": n / sec, "cpu_ms_per_step": cpu * 1e3,
                           "params": params, "param_bytes": pbytes,
                           "state_bytes_per_car": state_bytes(st)}  # fmt: skip
                    rows.append(row)
                    print(f"{name:8} {variant:9} {source:9} {threads:>3} {n:>7} "
                          f"{sec * 1e3:>9.2f} {n / sec:>11,.0f} {cpu * 1e3:>8.2f} {params:>7} "
                          f"{pbytes / 1024:>8.1f} {row['state_bytes_per_car']:>6}")  # fmt: skip
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
