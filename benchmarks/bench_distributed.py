"""Data-parallel throughput: PPO frames/s and distillation windows/s with 1 and K processes.

Every row is a real ``torchrun --standalone --nproc-per-node K`` launch of ``s3 train`` (or
``s3 distill train``); throughput is read from what the run itself reports (``train_summary.json``
and the checkpoint's epoch log), so process start-up, imports and the rendezvous are excluded.
Rows, repeated ``--repeats`` times (medians printed):

* ``1 proc`` : one process, ``--threads`` intra-op threads (the baseline);
* ``K proc weak``: K processes, each with the baseline's cars (effective batch x K);
* ``K proc strong``: K processes sharing the baseline's cars (same effective batch);
* ``1 proc x K thr``: one process with K threads (what the same cores give without DDP).

On a CPU the processes share the machine's cores: on the 2-core development box two processes
can at best double the throughput of one single-threaded process, and other jobs on the box eat
into that. Nothing is asserted.

    python benchmarks/bench_distributed.py                    # CPU, 1 vs 2 processes
    python benchmarks/bench_distributed.py --procs 4 --num-envs 2048 --frames 2000000
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def torchrun(nproc: int, args: list[str], *, threads: int, timeout_s: float = 1800.0) -> str:
    """Run ``torchrun --standalone --nproc-per-node nproc <args>``; returns its stdout."""
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone",
           f"--nproc-per-node={nproc}", *args]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, env=env,
                          cwd=ROOT)  # fmt: skip
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stdout[-2000:]}{proc.stderr[-4000:]}")
    return proc.stdout


def ppo_run(nproc: int, num_envs: int, frames: int, *, threads: int, device: str,
            backend: str, rollout_steps: int) -> dict[str, float]:  # fmt: skip
    """One ``s3 train`` launch; the throughput it reports."""
    with tempfile.TemporaryDirectory() as tmp:
        torchrun(nproc, ["-m", "gym_s3.cli", "train", "--preset", backend, "--out", tmp,
                         "--no-progress", f"--num-envs={num_envs}",
                         f"--rollout-steps={rollout_steps}", f"--total-frames={frames}",
                         "--minibatch-size=4096", "--eval-every=0", "--checkpoint-every=0",
                         f"--device={device}"], threads=threads)  # fmt: skip
        summary = json.loads((Path(tmp) / "train_summary.json").read_text())
    return {"train": summary["train_frames_per_s"], "collect": summary["env_frames_per_s"],
            "batch": summary["effective_batch"], "wall": summary["wall_s"]}  # fmt: skip


def distill_run(nproc: int, batch: int, dataset: Path, *, threads: int, device: str,
                backend: str, updates: int) -> dict[str, float]:  # fmt: skip
    """One ``s3 distill train`` launch of ``updates`` steps; windows per second of training."""
    with tempfile.TemporaryDirectory() as tmp:
        torchrun(nproc, ["-m", "gym_s3.distill", "train", "--backend", backend, "--dataset",
                         str(dataset), "--out", tmp, "--epochs=2", f"--batch-size={batch}",
                         f"--batches-per-epoch={updates // 2}", "--patience=10",
                         "--no-progress", f"--device={device}"], threads=threads)  # fmt: skip
        meta = json.loads((Path(tmp) / f"{backend}.json").read_text())
    rows = meta["meta"]["training"]["epochs"]
    # epoch 0 is the validation before training: time the two training epochs only
    seconds = rows[-1]["seconds"] - rows[0]["seconds"]
    windows = (updates // 2) * 2 * batch * nproc
    return {"windows_per_s": windows / seconds, "batch": batch * nproc, "wall": seconds}


def _median(runs: list[dict[str, float]]) -> dict[str, float]:
    """Per-key median of repeated runs."""
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]}


def _plan(procs: int, threads: int, size: int) -> list[tuple[str, int, int, int]]:
    """(label, processes, threads per process, per-process size) of each row."""
    return [
        ("1 proc", 1, threads, size),
        (f"{procs} proc weak", procs, threads, size),
        (f"{procs} proc strong", procs, threads, size // procs),
        (f"1 proc x {procs * threads} thr", 1, procs * threads, size),
    ]


def bench_ppo(args: argparse.Namespace) -> None:
    """Print the PPO table."""
    print(f"\nPPO ({args.backend}, {args.device}, rollout {args.rollout_steps} steps, "
          f"{args.frames} frames per run, median of {args.repeats})")  # fmt: skip
    print(f"{'row':>18} {'cars/proc':>9} {'eff. batch':>10} {'frames/s':>10} "
          f"{'collect/s':>10} {'speed-up':>8}")  # fmt: skip
    base = None
    for label, nproc, threads, envs in _plan(args.procs, args.threads, args.num_envs):
        runs = [ppo_run(nproc, envs, args.frames, threads=threads, device=args.device,
                        backend=args.backend, rollout_steps=args.rollout_steps)
                for _ in range(args.repeats)]  # fmt: skip
        r = _median(runs)
        base = base or r["train"]
        print(f"{label:>18} {envs:9d} {int(r['batch']):10d} {r['train']:10.0f} "
              f"{r['collect']:10.0f} {r['train'] / base:7.2f}x", flush=True)  # fmt: skip


def bench_distill(args: argparse.Namespace, dataset: Path) -> None:
    """Print the distillation table."""
    print(f"\nDistillation ({args.distill_backend}, {args.device}, {args.updates} updates per "
          f"run, median of {args.repeats})")  # fmt: skip
    print(f"{'row':>18} {'batch/proc':>10} {'eff. batch':>10} {'windows/s':>10} {'speed-up':>8}")
    base = None
    for label, nproc, threads, batch in _plan(args.procs, args.threads, args.batch):
        runs = [distill_run(nproc, batch, dataset, threads=threads, device=args.device,
                            backend=args.distill_backend, updates=args.updates)
                for _ in range(args.repeats)]  # fmt: skip
        r = _median(runs)
        base = base or r["windows_per_s"]
        print(f"{label:>18} {batch:10d} {int(r['batch']):10d} {r['windows_per_s']:10.0f} "
              f"{r['windows_per_s'] / base:7.2f}x", flush=True)  # fmt: skip


def parser() -> argparse.ArgumentParser:
    """Command-line options (shared with ``gpu_distributed.py``)."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)  # fmt: skip
    p.add_argument("--procs", type=int, default=2, help="processes K of the parallel rows [count]")
    p.add_argument("--threads", type=int, default=1,
                   help="torch threads per process (the '1 proc x K thr' row: K times this) "
                   "[count]")  # fmt: skip
    p.add_argument("--device", default="cpu", help="cpu or cuda (one GPU per process)")
    p.add_argument("--backend", default="bicycle",
                   help="PPO preset (and dynamics backend) of the PPO rows")  # fmt: skip
    p.add_argument("--num-envs", type=int, default=512,
                   help="cars of the baseline process (weak rows: per process; strong rows: "
                   "split over the K) [count]")  # fmt: skip
    p.add_argument("--rollout-steps", type=int, default=32,
                   help="PPO rollout: env steps per car per batch [count]")  # fmt: skip
    p.add_argument("--frames", type=int, default=262144,
                   help="PPO frames per run, all processes together [frames]")  # fmt: skip
    p.add_argument("--distill-backend", default="ddm", help="backend of the distillation rows")
    p.add_argument("--batch", type=int, default=512,
                   help="windows per update of the baseline process (weak rows: per process; "
                   "strong rows: split over the K) [windows]")  # fmt: skip
    p.add_argument("--updates", type=int, default=40,
                   help="distillation updates per run, as two epochs of half as many "
                   "[count]")  # fmt: skip
    p.add_argument("--dataset", type=Path, default=None,
                   help="dataset folder of the distillation rows; omitted: a tiny one is "
                   "generated")  # fmt: skip
    p.add_argument("--repeats", type=int, default=3,
                   help="runs per row; the median is printed [count]")  # fmt: skip
    p.add_argument("--skip", choices=("ppo", "distill"), default=None,
                   help="skip this table; omitted: both run")  # fmt: skip
    return p


def main(argv: list[str] | None = None) -> None:
    """Run both tables."""
    args = parser().parse_args(argv)
    print(f"machine: {os.cpu_count()} CPU cores; load average "
          f"{', '.join(f'{x:.1f}' for x in os.getloadavg())}")  # fmt: skip
    t0 = time.perf_counter()
    if args.skip != "ppo":
        bench_ppo(args)
    if args.skip != "distill":
        with tempfile.TemporaryDirectory() as tmp:
            dataset = args.dataset
            if dataset is None:
                from gym_s3.data.generate import generate_dataset, preset

                dataset = Path(tmp) / "data"
                generate_dataset(dataset, preset("tiny", cars=12, episode_s=20.0), seed=0,
                                 preset_name="tiny")  # fmt: skip
            bench_distill(args, dataset)
    print(f"\n(total {time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
