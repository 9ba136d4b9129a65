"""One short GPU run that prints the whole ``S3Distilled-v0`` throughput table (CUDA only).

Prepared for a machine with an NVIDIA GPU (e.g. one H200): ``trans`` at N = 4096 first (the
headline number: it should reach millions of env steps per second), then every backend at
N = 4096, then larger batches, eager and ``torch.compile``; rows that would not finish within
``--budget-s`` are skipped. The action check runs in its sync-free mode
(``nonfinite_action="zero"``); timings are synchronised medians.

    python benchmarks/gpu_distilled.py --budget-s 420
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_distilled import bench_one, print_header, print_row  # noqa: E402

#: (backend, N, compiled) in priority order.
PLAN: tuple[tuple[str, int, bool], ...] = (
    ("trans", 4096, False),
    ("trans", 4096, True),
    ("bicycle", 4096, False),
    ("bicycle", 4096, True),
    ("ddm", 4096, True),
    ("dytr", 4096, True),
    ("trans", 16384, True),
    ("bicycle", 16384, True),
    ("trans", 65536, True),
    ("bicycle", 65536, True),
    ("trans", 1024, True),
    ("ddm", 4096, False),
    ("dytr", 4096, False),
)


def main(argv: list[str] | None = None) -> None:
    """Run :data:`PLAN` on the GPU within the time budget."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget-s", type=float, default=420.0)
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--tracks", nargs="+", default=["putnam", "procedural:0", "town:0"])
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        raise SystemExit("gpu_distilled.py needs a CUDA device; use bench_distilled.py on a CPU")
    torch.backends.cuda.matmul.allow_tf32 = False  # keep the learned models in full fp32
    print(f"GPU: {torch.cuda.get_device_name()}, CUDA {torch.version.cuda}")
    print_header("cuda", args.tracks)
    deadline = time.monotonic() + args.budget_s
    for backend, n, compiled in PLAN:
        left = deadline - time.monotonic()
        if left < (90.0 if compiled else 20.0):
            print(f"{backend:8} {n:6d} {'compile' if compiled else 'eager':8} skipped (budget)")
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = bench_one(
                backend, n, compiled=compiled, device="cuda", repeats=args.repeats, warmup=10,
                tracks=tuple(args.tracks), forward=True, nonfinite_action="zero",
            )  # fmt: skip
        print_row(r)
        print(f"  peak GPU memory {torch.cuda.max_memory_allocated() / 2**20:,.0f} MiB", flush=True)
        torch.cuda.reset_peak_memory_stats()


if __name__ == "__main__":
    main()
