"""PPO training throughput as a ratio of env-only throughput at the same N.

For each preset (default ``bicycle`` and ``ddm``) it measures, in one process and at the same
number of cars N:

* **env-only**: the env step the training faces run (core step + same-step autoreset, random
  actions drawn beforehand; ``bench_distilled.bench_one``, eager), median over repeats;
* **collection**: TorchRL ``Collector`` stepping the env with the policy (env + actor inference
  + TorchRL bookkeeping), from :class:`policies.ppo.TrainResult`;
* **training**: collection plus GAE and the PPO epochs, i.e. what ``s3 train`` sustains.

It prints frames/s and the ratios collection/env-only and training/env-only. Timings are of the
whole short run (including the first iteration), so longer runs sit slightly higher. Nothing is
asserted; the shared 2-core machine is noisy, so compare ratios from one run.

    python benchmarks/bench_ppo.py                               # bicycle and ddm, N = 2048
    python benchmarks/bench_ppo.py --presets trans dytr --num-envs 1024 --iterations 4
    python benchmarks/bench_ppo.py --device cuda --num-envs 16384
    python benchmarks/bench_ppo.py --presets ddm --update-dtypes float32 bfloat16 --threads 1
    python benchmarks/bench_ppo.py --presets dytr --imitation 0 10 --threads 1   # expert labels
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_distilled import bench_one  # noqa: E402

from policies.config import preset  # noqa: E402
from policies.ppo import train  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    """Parse the options and print one row per preset."""
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--presets", nargs="+", default=["bicycle", "ddm"],
                        help="PPO presets, one row each, e.g. bicycle, ddm, trans, "
                        "dytr, oracle")  # fmt: skip
    parser.add_argument("--num-envs", type=int, default=2048, help="cars N [count]")
    parser.add_argument("--iterations", type=int, default=6,
                        help="PPO iterations of the training run [count]")  # fmt: skip
    parser.add_argument("--repeats", type=int, default=20,
                        help="timed env-only steps after 5 untimed ones; the median is used "
                        "[count]")  # fmt: skip
    parser.add_argument("--device", default="cpu", help="torch device, e.g. cpu or cuda")
    parser.add_argument("--threads", type=int, default=None,
                        help="torch intra-op threads; omitted: torch's default "
                        "[count]")  # fmt: skip
    parser.add_argument("--update-dtypes", nargs="+", default=["float32"],
                        choices=["float32", "bfloat16"],
                        help="precisions of the PPO update to time, each its own row "
                        "(PPOConfig.update_dtype)")  # fmt: skip
    parser.add_argument("--imitation", nargs="+", type=float, default=[0.0],
                        help="expert-imitation weights to time, each its own row "
                        "(PPOConfig.imitation; > 0 adds the expert's labels and "
                        "their loss)")  # fmt: skip
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"device {args.device}, {torch.get_num_threads()} threads, N = {args.num_envs}")
    head = (f"{'preset':12s} {'env-only':>8s} {'collection':>12s} {'training':>12s} "
            f"{'coll/env':>9s} {'train/env':>9s}   [frames/s]")  # fmt: skip
    print(head)
    for name in args.presets:
        frames = args.num_envs * preset(name).rollout_steps * args.iterations
        base = preset(name, num_envs=args.num_envs, device=args.device, total_frames=frames,
                      eval_every=0, checkpoint_every=0, logger="csv")  # fmt: skip
        env = bench_one(base.backend, args.num_envs, compiled=False, device=args.device,
                        repeats=args.repeats, warmup=3, tracks=base.tracks, forward=False,
                        obs_mode=base.env_obs_mode, layouts_per_track=base.layouts_per_track,
                        max_episode_steps=base.max_episode_steps,
                        scenarios=base.scenarios)  # fmt: skip
        env_fps = args.num_envs / env.step_s
        for dtype, weight in ((d, w) for d in args.update_dtypes for w in args.imitation):
            cfg = replace(base, update_dtype=dtype, imitation=weight)
            with tempfile.TemporaryDirectory() as tmp:
                t0 = time.perf_counter()
                result = train(cfg, tmp, progress=False)
                wall = time.perf_counter() - t0
            label = name + ("" if dtype == "float32" else "/bf16")
            label += f"/im{weight:g}" if weight > 0 else ""
            print(f"{label:12s} {env_fps:8.0f} {result.env_frames_per_s:12.0f} "
                  f"{result.train_frames_per_s:12.0f} {result.env_frames_per_s / env_fps:9.2f} "
                  f"{result.train_frames_per_s / env_fps:9.2f}   ({result.frames} frames, "
                  f"{wall:.0f} s)")  # fmt: skip


if __name__ == "__main__":
    main()
