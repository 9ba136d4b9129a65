"""One prepared GPU run: ``S3Distilled-v0`` env-only and PPO training throughput, every backend.

Prepared for a machine with an NVIDIA GPU (e.g. one H200). In priority order, within
``--budget-s`` (rows that would not finish are skipped and say so):

1. **env-only, eager** (core step + same-step autoreset, random actions;
   ``bench_distilled.bench_one``) for every backend at N = 4096 and 65,536, with the bare backend
   forward and the overhead ratio env step / forward;
2. **training** (``s3 train``'s loop: TorchRL collector + GAE + PPO epochs, ``policies.ppo.train``)
   for every backend at N = 65,536 (``--train-iterations`` iterations each), with collection and
   training frames/s and training / env-only at the same N;
3. **env-only, compiled** (``torch.compile``; each row pays its own compilation, printed) at
   N = 65,536, then 4096.

The action check runs in its sync-free mode (``nonfinite_action="zero"``); timings are
synchronised medians. ``--device cpu --smoke`` runs a tiny version of the same plan on a CPU to
check the script itself (the numbers then mean nothing).

    python benchmarks/gpu_distilled.py --budget-s 540
    python benchmarks/gpu_distilled.py --device cpu --smoke
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import warnings
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_distilled import BACKENDS, bench_one, print_header, print_row  # noqa: E402

#: eager env-only rows (backend, N, compiled), first phase.
EAGER_PLAN: tuple[tuple[str, int, bool], ...] = tuple(
    (b, n, False) for n in (4096, 65536) for b in BACKENDS
)
#: training rows (backend, N), second phase.
TRAIN_PLAN: tuple[tuple[str, int], ...] = tuple((b, 65536) for b in BACKENDS)
#: compiled env-only rows, last phase (each compiles afresh).
COMPILED_PLAN: tuple[tuple[str, int, bool], ...] = tuple(
    (b, n, True) for n in (65536, 4096) for b in BACKENDS
)
SMOKE_EAGER_PLAN = tuple((b, 256, False) for b in BACKENDS)
SMOKE_COMPILED_PLAN = (("bicycle", 256, True),)
SMOKE_TRAIN_PLAN = (("bicycle", 256),)


def train_row(backend: str, n: int, device: str, iterations: int) -> dict[str, float]:
    """Frames/s of a short ``s3 train`` run (collection, and collection + PPO update)."""
    from policies.config import preset
    from policies.ppo import train

    cfg = preset(backend, num_envs=n, device=device, eval_every=0, checkpoint_every=0,
                 logger="csv")  # fmt: skip
    cfg = preset(backend, num_envs=n, device=device, eval_every=0, checkpoint_every=0,
                 logger="csv", total_frames=cfg.frames_per_batch * iterations,
                 minibatch_size=min(cfg.minibatch_size, cfg.frames_per_batch))  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = train(cfg, tmp, progress=False)
    return {"collect": result.env_frames_per_s, "train": result.train_frames_per_s,
            "frames": float(result.frames), "wall": result.wall_s}  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    """Run the plans within the time budget and print both tables."""
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--budget-s", type=float, default=540.0,
                        help="time budget of the whole run: a row starts only with 20 s (eager), "
                        "60 s (training) or 90 s (compiled) of it left, else it is skipped "
                        "[s]")  # fmt: skip
    parser.add_argument("--repeats", type=int, default=50,
                        help="timed env steps (and bare forwards) per env-only row after 5 "
                        "untimed ones; the median is printed; --smoke: 3 [count]")  # fmt: skip
    parser.add_argument("--train-iterations", type=int, default=4,
                        help="PPO iterations per training row; --smoke: 1 [count]")  # fmt: skip
    parser.add_argument("--tracks", nargs="+", default=["putnam", "procedural:0", "town:0"],
                        help="tracks of the scenario pool of the env-only rows (training rows "
                        "use their preset's)")  # fmt: skip
    parser.add_argument("--device", default="cuda",
                        help="torch device: cuda, or cpu with --smoke to check "
                        "the script")  # fmt: skip
    parser.add_argument("--smoke", action="store_true",
                        help="tiny plan that checks the script (N = 256; training and compiled "
                        "rows of bicycle only); its numbers mean nothing")  # fmt: skip
    args = parser.parse_args(argv)
    dev = torch.device(args.device)
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise SystemExit("gpu_distilled.py needs a CUDA device (or --device cpu --smoke)")
        torch.backends.cuda.matmul.allow_tf32 = False  # keep the learned models in full fp32
        print(f"GPU: {torch.cuda.get_device_name(dev)}, CUDA {torch.version.cuda}")
    eager_plan, train_plan, compiled_plan = EAGER_PLAN, TRAIN_PLAN, COMPILED_PLAN
    if args.smoke:
        eager_plan, train_plan = SMOKE_EAGER_PLAN, SMOKE_TRAIN_PLAN
        compiled_plan = SMOKE_COMPILED_PLAN
    repeats = 3 if args.smoke else args.repeats
    deadline = time.monotonic() + args.budget_s
    env_rate: dict[tuple[str, int], float] = {}

    def env_rows(plan: tuple[tuple[str, int, bool], ...]) -> None:
        print_header(args.device, args.tracks)
        for backend, n, compiled in plan:
            if deadline - time.monotonic() < (90.0 if compiled else 20.0):
                print(f"{backend:8} {n:6d} {'compile' if compiled else 'eager':8} skipped (budget)")
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                r = bench_one(
                    backend, n, compiled=compiled, device=args.device, repeats=repeats,
                    warmup=3, tracks=tuple(args.tracks), forward=True, nonfinite_action="zero",
                )  # fmt: skip
            print_row(r)
            if not compiled:
                env_rate[backend, n] = r.steps_per_s
            if dev.type == "cuda":
                print(f"  peak GPU memory {torch.cuda.max_memory_allocated() / 2**20:,.0f} MiB",
                      flush=True)  # fmt: skip
                torch.cuda.reset_peak_memory_stats()
        print()

    print("1. env-only, eager")
    env_rows(eager_plan)
    head = (f"{'backend':8} {'N':>6} {'collect/s':>11} {'train/s':>11} {'env-only/s':>11} "
            f"{'train/env':>9}")  # fmt: skip
    iterations = 1 if args.smoke else args.train_iterations
    print(f"2. training ({iterations} PPO iteration(s) per row, eager env; env-only: eager row)")
    print(head)
    print("-" * len(head))
    for backend, n in train_plan:
        if deadline - time.monotonic() < 60.0:
            print(f"{backend:8} {n:6d} skipped (budget)")
            continue
        row = train_row(backend, n, args.device, iterations)
        env = env_rate.get((backend, n), float("nan"))
        print(f"{backend:8} {n:6d} {row['collect']:11,.0f} {row['train']:11,.0f} {env:11,.0f} "
              f"{row['train'] / env:9.2f}", flush=True)  # fmt: skip
    print()
    print("3. env-only, compiled")
    env_rows(compiled_plan)


if __name__ == "__main__":
    main()
