"""One short prepared GPU run for the dynamics backends (CUDA; ``--device cpu`` to dry-run).

For a machine with an NVIDIA GPU (e.g. one H200), in priority order within ``--budget-s``:

1. correctness: every backend's predictions on the GPU equal the CPU ones (float32, TF32 off) over
   a 20-step rollout of 256 cars, and a transformer's cached step equals the recomputed window;
2. throughput: ``backend.step`` in car-steps per second (synchronised medians) for N = 4096,
   65536, 262144 and 1048576 cars (cached, and the recomputed window for ``trans`` at 4096);
3. a 10^6-step soak per backend (4096 cars x 245 steps) counting non-finite states (must be 0).

Shipped checkpoints are used when present. Results print as a table and, when ``$OUT`` (or
``--json``) is set, are written as JSON::

    python benchmarks/gpu_dynamics.py --budget-s 300
    python benchmarks/gpu_dynamics.py --device cpu --sizes 1024 --budget-s 60   # dry run
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_dynamics import BACKENDS, Recompute, backend_for, start_state  # noqa: E402

from gym_s3.dynamics import BackendState  # noqa: E402


def sync(device: torch.device) -> None:
    """Wait for the device (no-op on a CPU)."""
    if device.type == "cuda":
        torch.cuda.synchronize()


def to_device(state: BackendState, device: torch.device) -> BackendState:
    """A copy of ``state`` on ``device``."""
    return BackendState(
        state.pose.to(device), state.vel.to(device), state.history.to(device),
        {k: v.to(device) for k, v in state.extra.items()}, state.fault.to(device),
    )  # fmt: skip


def check_equal(name: str, device: torch.device) -> float:
    """Largest |GPU - CPU| velocity difference over a 20-step rollout of 256 cars."""
    cpu, _ = backend_for(name)
    dev, _ = backend_for(name)
    dev = dev.to(device)
    state = start_state(cpu, 256)
    moved = to_device(state, device)
    g = torch.Generator().manual_seed(3)
    worst = 0.0
    with torch.inference_mode():
        for _ in range(20):
            a, mu = 2 * torch.rand(256, 2, generator=g) - 1, 0.1 + torch.rand(256, 4, generator=g)
            state = cpu.step(state, a, mu)
            moved = dev.step(moved, a.to(device), mu.to(device))
            worst = max(worst, float((moved.vel.cpu() - state.vel).abs().max()))
    return worst


def throughput(model, state: BackendState, device: torch.device, repeat: int) -> float:
    """Median seconds per step (synchronised)."""
    n = state.n
    a = 2 * torch.rand(n, 2, device=device) - 1
    mu = 0.1 + torch.rand(n, 4, device=device)
    times = []
    with torch.inference_mode():
        for i in range(repeat + 3):
            sync(device)
            start = time.perf_counter()
            state = model.step(state, a, mu)
            sync(device)
            if i >= 3:
                times.append(time.perf_counter() - start)
    return statistics.median(times)


def soak(name: str, device: torch.device) -> int:
    """Non-finite states in 4096 cars x 245 random steps (10^6 car-steps)."""
    backend, _ = backend_for(name)
    state = to_device(start_state(backend, 4096), device)
    backend = backend.to(device)
    bad = torch.zeros((), dtype=torch.int64, device=device)
    with torch.inference_mode():
        for _ in range(245):
            a = 2 * torch.rand(4096, 2, device=device) - 1
            mu = 0.05 + 1.15 * torch.rand(4096, 4, device=device)
            state = backend.step(state, a, mu)
            bad += (~torch.isfinite(state.vel).all(-1)).sum()
    return int(bad)


def main(argv: list[str] | None = None) -> None:
    """Run the plan within the budget and print/write the results."""
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--device", default="cuda",
                        help="torch device compared with the CPU: cuda, or cpu for a "
                        "dry run")  # fmt: skip
    parser.add_argument("--sizes", type=int, nargs="+", default=[4096, 65536, 262144, 1048576],
                        help="numbers of cars N of the throughput rows (the recomputed-window "
                        "rows at the first one only) [count]")  # fmt: skip
    parser.add_argument("--backends", nargs="+", default=list(BACKENDS),
                        help="dynamics backends (bicycle, ddm, trans, dytr); shipped checkpoints "
                        "when present")  # fmt: skip
    parser.add_argument("--repeat", type=int, default=30,
                        help="timed steps per throughput row after 3 untimed ones; the median is "
                        "printed [count]")  # fmt: skip
    parser.add_argument("--budget-s", type=float, default=300.0,
                        help="time budget of the run: throughput rows stop with less than 20 s "
                        "of it left, soaks with less than 10 s [s]")  # fmt: skip
    parser.add_argument("--json", default=None,
                        help="write the results to this JSON file; omitted: to "
                        "$OUT/gpu_dynamics.json when $OUT is set, else nowhere")  # fmt: skip
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise SystemExit("no CUDA device; dry-run with --device cpu")
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        print(f"GPU: {torch.cuda.get_device_name()}, CUDA {torch.version.cuda}, torch "
              f"{torch.__version__}")  # fmt: skip
    deadline = time.monotonic() + args.budget_s
    out: dict = {"device": str(device), "equality": {}, "throughput": [], "soak": {}}
    for name in args.backends:
        out["equality"][name] = check_equal(name, device)
        print(f"{name:8} max |{device.type} - cpu| over 20 steps: {out['equality'][name]:.2e}")
    for n in args.sizes:
        for name in args.backends:
            if time.monotonic() > deadline - 20:
                print("budget reached; skipping the rest")
                break
            backend, source = backend_for(name)
            state = to_device(start_state(backend, n), device)
            backend = backend.to(device)
            variants = [("cached", backend, state)]
            if hasattr(backend, "predict_window") and n == args.sizes[0]:
                plain = BackendState(state.pose, state.vel, state.history, {}, state.fault)
                variants.append(("recompute", Recompute(backend), plain))
            for variant, model, st in variants:
                sec = throughput(model, st, device, args.repeat)
                row = {"backend": name, "variant": variant, "source": source, "n": n,
                       "ms_per_step": sec * 1e3, "car_steps_per_s": n / sec}  # fmt: skip
                out["throughput"].append(row)
                print(f"{name:8} {variant:9} N={n:>8} {sec * 1e3:9.3f} ms  "
                      f"{n / sec:>14,.0f} car-steps/s")  # fmt: skip
    for name in args.backends:
        if time.monotonic() > deadline - 10:
            break
        out["soak"][name] = soak(name, device)
        print(f"{name:8} soak 10^6 steps: {out['soak'][name]} non-finite states")
    target = args.json or (os.path.join(os.environ["OUT"], "gpu_dynamics.json")
                           if os.environ.get("OUT") else None)  # fmt: skip
    if target:
        Path(target).write_text(json.dumps(out, indent=1))
        print(f"wrote {target}")


if __name__ == "__main__":
    main()
