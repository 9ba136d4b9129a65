"""Prepared GPU run of the data-parallel benchmark: 1, 2, 4, ... GPUs up to all visible (NCCL).

For K = 1, 2, 4, ... (every power of two up to the visible GPUs, then all of them) it launches
``torchrun --standalone --nproc-per-node K`` of ``s3 train`` (weak scaling: each GPU simulates
``--num-envs`` cars of ``--backend``) and of ``s3 distill train`` (each GPU takes ``--batch``
windows per update), and prints frames/s, windows/s and the speed-up over one GPU, as reported
by the runs themselves (start-up excluded). Rows that would not fit in ``--budget-s`` are
skipped. One process per GPU: NCCL refuses two ranks on one device, so a one-GPU machine prints
the K = 1 rows only.

    python benchmarks/gpu_distributed.py --budget-s 480
    python benchmarks/gpu_distributed.py --backend trans --num-envs 16384 --frames 20000000
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_distributed import distill_run, parser, ppo_run  # noqa: E402


def gpu_counts(visible: int) -> list[int]:
    """1, 2, 4, ... up to ``visible``, and ``visible`` itself."""
    counts, k = [], 1
    while k < visible:
        counts.append(k)
        k *= 2
    return [*counts, visible]


def main(argv: list[str] | None = None) -> None:
    """Run the PPO and distillation rows on 1..K GPUs within the time budget."""
    p = parser()
    p.description = __doc__.splitlines()[0]
    p.epilog = ("The options are bench_distributed.py's, with GPU defaults. Here every process "
                "(one per GPU) takes --num-envs cars and --batch windows per update (weak "
                "scaling), each row is one run with one thread per process on CUDA, and --procs, "
                "--threads, --device, --repeats and --skip are not used.")  # fmt: skip
    p.set_defaults(device="cuda", backend="ddm", num_envs=8192, frames=4_194_304,
                   batch=4096, updates=200, repeats=1)  # fmt: skip
    p.add_argument("--budget-s", type=float, default=480.0,
                   help="time budget of the whole run: a row is skipped when less than 60 s of "
                   "it are left [s]")  # fmt: skip
    args = p.parse_args(argv)
    if not torch.cuda.is_available():
        raise SystemExit("gpu_distributed.py needs CUDA GPUs; use bench_distributed.py on a CPU")
    visible = torch.cuda.device_count()
    print(f"{visible} x {torch.cuda.get_device_name()}, CUDA {torch.version.cuda}, "
          f"torch {torch.__version__}")  # fmt: skip
    deadline = time.monotonic() + args.budget_s
    print(f"\nPPO weak scaling ({args.backend}, {args.num_envs} cars per GPU, "
          f"{args.frames} frames per run)")  # fmt: skip
    print(f"{'GPUs':>5} {'eff. batch':>10} {'frames/s':>12} {'collect/s':>12} {'speed-up':>8}")
    base = None
    for k in gpu_counts(visible):
        if time.monotonic() > deadline - 60:
            print(f"{k:5d} skipped (budget)")
            continue
        r = ppo_run(k, args.num_envs, args.frames, threads=1, device="cuda",
                    backend=args.backend, rollout_steps=args.rollout_steps)  # fmt: skip
        base = base or r["train"]
        print(f"{k:5d} {int(r['batch']):10d} {r['train']:12.0f} {r['collect']:12.0f} "
              f"{r['train'] / base:7.2f}x", flush=True)  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        from gym_s3.data.generate import generate_dataset, preset

        dataset = args.dataset or Path(tmp) / "data"
        if args.dataset is None:
            generate_dataset(dataset, preset("tiny", cars=48, episode_s=30.0), seed=0,
                             preset_name="tiny")  # fmt: skip
        print(f"\nDistillation weak scaling ({args.distill_backend}, {args.batch} windows per "
              f"GPU per update, {args.updates} updates)")  # fmt: skip
        print(f"{'GPUs':>5} {'eff. batch':>10} {'windows/s':>12} {'speed-up':>8}")
        base = None
        for k in gpu_counts(visible):
            if time.monotonic() > deadline - 60:
                print(f"{k:5d} skipped (budget)")
                continue
            r = distill_run(k, args.batch, dataset, threads=1, device="cuda",
                            backend=args.distill_backend, updates=args.updates)  # fmt: skip
            base = base or r["windows_per_s"]
            print(f"{k:5d} {int(r['batch']):10d} {r['windows_per_s']:12.0f} "
                  f"{r['windows_per_s'] / base:7.2f}x", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
