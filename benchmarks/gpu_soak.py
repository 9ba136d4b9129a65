"""The 10^8-step GPU soak of issue 11 (CUDA only; prepared, not run on the CPU machines).

Runs the soak loops of ``tests/reliability/soak_support.py`` on the GPU: every shipped backend of
``S3Distilled-v0`` (random actions, randomised starts, every base surface with ice patches,
same-step autoreset) for ``--total-steps / 4`` car-steps each, then the reference vehicle
simulator from random states. It prints one line per run (car-steps/s, episodes, non-finite
count, host and device memory growth after warm-up) and, with ``--repeat-check``, whether two
short rollouts of the same seed are bitwise identical on this GPU (see docs/reliability.md).
Exit status 1 if anything non-finite reached an observation, reward or vehicle state, or memory
grew by more than ``--growth-mib`` after warm-up.

    python benchmarks/gpu_soak.py                      # 10^8 env car-steps, N = 65536
    python benchmarks/gpu_soak.py --total-steps 1e7 --num-envs 16384 --json soak.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "reliability"))

from soak_support import SoakReport, soak_distilled, soak_vehicle  # noqa: E402

BACKENDS = ("trans", "bicycle", "ddm", "dytr")


def repeat_check(backend: str, num_envs: int, steps: int) -> str:
    """Run the same seeded rollout twice; report bitwise equality or the largest difference."""
    from soak_support import soak_env_kwargs

    from gym_s3.envs.distilled import S3DistilledBatchEnv

    runs = []
    for _ in range(2):
        env = S3DistilledBatchEnv(num_envs=num_envs, device="cuda", **soak_env_kwargs(backend, 5))
        gen = torch.Generator(device="cuda").manual_seed(5)
        obs, _ = env.reset(seed=5)
        seq = [obs]
        for _ in range(steps):
            seq.append(env.step(torch.rand(num_envs, 2, generator=gen, device="cuda") * 2 - 1)[0])
        runs.append(torch.stack(seq))
    a, b = runs
    if torch.equal(a, b):
        return "bitwise identical"
    diff = (a - b).abs().nan_to_num(posinf=float("inf"))
    first = int((diff.flatten(1).amax(1) > 0).nonzero()[0])
    return f"differs: max |diff| {float(diff.max()):.3g}, first at step {first}"


def main(argv: list[str] | None = None) -> int:
    """Run the GPU soak; returns the exit status."""
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument(
        "--total-steps", type=float, default=1e8,
        help="env car-steps of all backends together, split evenly over them (each runs whole "
        "steps of --num-envs cars, rounded up) [car-steps]",
    )  # fmt: skip
    parser.add_argument("--num-envs", type=int, default=65536, help="cars per env [count]")
    parser.add_argument("--vehicle-cars", type=int, default=65536,
                        help="cars of the vehicle soak [count]")  # fmt: skip
    parser.add_argument("--vehicle-steps", type=int, default=100,
                        help="control steps of the vehicle soak [steps of 50 ms]")  # fmt: skip
    parser.add_argument("--backends", nargs="+", default=list(BACKENDS),
                        help="backends of S3Distilled-v0 to soak, in this order")  # fmt: skip
    parser.add_argument("--compile", action="store_true", help="torch.compile the env step")
    parser.add_argument("--growth-mib", type=float, default=256.0,
                        help="allowed host or device memory growth after warm-up; more fails "
                        "the run [MiB]")  # fmt: skip
    parser.add_argument("--repeat-check", action=argparse.BooleanOptionalAction, default=True,
                        help="run two short seeded rollouts per backend (4096 cars x 50 steps) "
                        "and report whether they are bitwise identical")  # fmt: skip
    parser.add_argument("--json", type=Path, default=None,
                        help="write the reports to this JSON file; omitted: "
                        "print only")  # fmt: skip
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        raise SystemExit("gpu_soak.py needs a CUDA device; the CPU soak is tests/reliability")
    torch.backends.cuda.matmul.allow_tf32 = False  # full fp32, as in training
    torch.backends.cudnn.allow_tf32 = False
    print(f"GPU: {torch.cuda.get_device_name()}, CUDA {torch.version.cuda}, torch "
          f"{torch.__version__}", flush=True)  # fmt: skip
    per_backend = int(args.total_steps) // len(args.backends)
    steps = max(1, -(-per_backend // args.num_envs))
    reports: list[SoakReport] = []
    began = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for backend in args.backends:
            report = soak_distilled(backend, args.num_envs, steps, seed=0, device="cuda",
                                    compile=args.compile)  # fmt: skip
            print(report.line(), flush=True)
            reports.append(report)
        report = soak_vehicle(args.vehicle_cars, args.vehicle_steps, device="cuda")
        print(report.line(), flush=True)
        reports.append(report)
        if args.repeat_check:
            for backend in args.backends:
                print(f"repeat {backend:8} {repeat_check(backend, 4096, 50)}", flush=True)
    total = sum(r.steps for r in reports if r.name != "vehicle")
    print(f"{total:,d} env car-steps in {time.perf_counter() - began:.0f} s")
    failed = [r.name for r in reports if r.nonfinite or max(r.growth_mib()) > args.growth_mib]
    if args.json is not None:
        args.json.write_text(json.dumps([r.to_dict() for r in reports], indent=1))
    if failed:
        print(f"FAILED: {', '.join(failed)}")
        return 1
    print("ok: nothing non-finite, memory flat")
    return 0


if __name__ == "__main__":
    sys.exit(main())
