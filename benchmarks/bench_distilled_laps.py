"""Distilled lap tables: one batch of cars against one lap after another in ``S3Distilled-v0``.

The same laps (tracks x conditions, driven by the scripted expert and a policy, capped at
``--steps`` control steps each) in ``S3Distilled-v0`` on the policy's backend are driven

* one after another in the one-car env (what ``s3 evaluate --env distilled --gif-every K`` does,
  and every distilled lap table did before the batched runner), and
* as one batch, every lap and driver one car (:func:`policies.evaluate_model.evaluate_model` with
  ``dynamics``: ``s3 evaluate --env distilled`` and ``s3 gap``).

Prints car-steps per second of each path (medians over ``--repeats`` runs, one thread) and their
ratio, and the largest trajectory difference between the two (float32 rounding). Asserts nothing.

Run: ``python benchmarks/bench_distilled_laps.py [--steps 200] [--repeats 3] [--policy ddm]
[--tracks putnam,procedural:201] [--conditions asphalt,ice,asphalt+6,asphalt>ice]``
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch


def main() -> None:
    """Time both paths on the same laps and print one table."""
    from policies.evaluate_cli import parse_conditions
    from policies.evaluate_distilled import evaluate_distilled_laps, lap_backend
    from policies.evaluate_model import Lap, evaluate_model
    from policies.rollouts import resolve_policy

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)  # fmt: skip
    p.add_argument("--steps", type=int, default=200,
                   help="control steps per lap (cap) [steps of 50 ms]")  # fmt: skip
    p.add_argument("--repeats", type=int, default=3,
                   help="timed runs of each path after one untimed warm-up run; the median is "
                   "printed [count]")  # fmt: skip
    p.add_argument("--policy", default="ddm",
                   help="shipped policy name or checkpoint path (the env runs "
                   "its backend)")  # fmt: skip
    p.add_argument("--tracks", default="putnam,procedural:201", help="comma-separated tracks")
    p.add_argument("--conditions", default="asphalt,ice,asphalt+6,asphalt>ice",
                   help="comma-separated lap conditions, each SURFACE[+ICE_PATCHES]; SURFACE a "
                   "base surface or a transition FROM>TO")  # fmt: skip
    args = p.parse_args()
    torch.set_num_threads(1)
    _, policy = resolve_policy(args.policy)
    tracks = [t for t in args.tracks.split(",") if t]
    conditions = parse_conditions(args.conditions)

    laps = [Lap(t, s, n) for t in tracks for s, n in conditions]
    dynamics = lap_backend(policy.backend)

    def batched() -> list:
        return evaluate_model([("policy", policy)], laps, max_steps=args.steps, progress=False,
                              dynamics=dynamics)  # fmt: skip

    def one_by_one() -> list:
        # render_every beyond the cap: the one-car env's own loop, no frame kept
        rows = []
        for lap in laps:
            rows += evaluate_distilled_laps(
                policy, track=lap.track, surfaces=(lap.surface,), ice_patches=(lap.ice_patches,),
                max_steps=args.steps, render_every=args.steps + 1, progress=False,
            )  # fmt: skip
        return rows

    paths = {"batched": batched, "one lap after another": one_by_one}
    for run in paths.values():  # warm-up (checkpoint loading, pools)
        run()
    timings: dict[str, list[float]] = {name: [] for name in paths}
    rows: dict[str, list] = {}
    for _ in range(args.repeats):
        for name, run in paths.items():
            t0 = time.perf_counter()
            rows[name] = run()
            timings[name].append(time.perf_counter() - t0)
    car_steps = sum(int(r.metrics["steps"]) for r in rows["batched"])
    rate = {name: car_steps / statistics.median(ts) for name, ts in timings.items()}
    pairs = zip(rows["batched"], rows["one lap after another"], strict=True)
    diff = max(float(np.abs(a.trajectory - b.trajectory).max()) for a, b in pairs)
    print(f"S3Distilled-v0/{policy.backend}, {len(rows['batched'])} laps x drivers "
          f"({len(tracks)} tracks x {len(conditions)} conditions x expert + policy), "
          f"{args.steps} steps cap, 1 thread, median of {args.repeats}")  # fmt: skip
    for name, r in rate.items():
        print(f"  {name:24s} {r:10.0f} car-steps/s")
    print(f"  batched / one by one     {rate['batched'] / rate['one lap after another']:10.1f}x")
    print(f"  largest trajectory difference {diff:.2e} m")


if __name__ == "__main__":
    main()
