"""Lap-table throughput: the batched vehicle model in-process vs ``S3BeamNG-v0`` through beamngpy.

The same laps (tracks x conditions, driven by the scripted expert and a policy, capped at
``--steps`` control steps each) are driven

* one after another through the real beamngpy client and the in-process stand-in server
  (:func:`policies.evaluate.evaluate_beamng`, what ``s3 evaluate`` does by default), and
* as one batch of cars of the stand-in's vehicle model in-process
  (:func:`policies.evaluate_model.evaluate_model`, ``s3 evaluate --simulator model``),

both with the float32 physics through ``torch.compile`` that ``s3 evaluate`` uses (each path is
warmed up first, so compilation is not timed). Prints car-steps per second (median over the
laps for the client path, over ``--repeats`` batches for the model path) and what that means in
laps per minute at the cap. Asserts nothing.

Run: ``python benchmarks/bench_laps.py [--steps 200] [--repeats 3] [--policy ddm]
[--tracks putnam,procedural:201] [--conditions asphalt,ice,asphalt+6] [--client-laps 4]``
"""

from __future__ import annotations

import argparse
import logging
import statistics
import time

import torch


def main() -> None:
    """Time both paths on the same laps and print one table."""
    from policies.evaluate import evaluate_beamng
    from policies.evaluate_cli import parse_conditions
    from policies.evaluate_model import Lap, evaluate_model
    from policies.rollouts import resolve_policy

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)  # fmt: skip
    p.add_argument("--steps", type=int, default=200,
                   help="control steps per lap (cap) [steps of 50 ms]")  # fmt: skip
    p.add_argument("--repeats", type=int, default=3,
                   help="timed batches of the model path (every lap and driver one car); the "
                   "median is printed [count]")  # fmt: skip
    p.add_argument("--policy", default="ddm", help="shipped policy name or checkpoint path")
    p.add_argument("--client-laps", type=int, default=4,
                   help="laps timed through beamngpy (the first ones, lap by lap; the median "
                   "over them is printed) [count]")  # fmt: skip
    p.add_argument("--tracks", default="putnam", help="comma-separated tracks")
    p.add_argument("--conditions", default="asphalt,ice,asphalt+6,asphalt>ice",
                   help="comma-separated lap conditions, each SURFACE[+ICE_PATCHES]; SURFACE a "
                   "base surface or a transition FROM>TO")  # fmt: skip
    args = p.parse_args()
    logging.getLogger("beamngpy").setLevel(logging.WARNING)
    torch.set_num_threads(1)
    name, policy = resolve_policy(args.policy)
    tracks = [t for t in args.tracks.split(",") if t]
    conditions = parse_conditions(args.conditions)
    laps = [Lap(t, s, n) for t in tracks for s, n in conditions]
    cars = 2 * len(laps)

    # client path: one lap after another; the stand-in compiles at its start (warm it first)
    evaluate_beamng(policy, surfaces=["asphalt"], ice_patches=[0], max_steps=2, progress=False)
    client = []
    for lap in laps[: args.client_laps]:
        rows = evaluate_beamng(policy, surfaces=[lap.surface], ice_patches=[lap.ice_patches],
                               track=lap.track, max_steps=args.steps, progress=False)  # fmt: skip
        client += [r.metrics["steps"] / r.wall_s for r in rows]
    client_rate = statistics.median(client)

    # model path: every lap one car of one batch (the first batch compiles for this size)
    evaluate_model([(name, policy)], laps, max_steps=2, progress=False)
    model = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        rows = evaluate_model([(name, policy)], laps, max_steps=args.steps, progress=False)
        wall = time.perf_counter() - t0
        model.append(sum(r.metrics["steps"] for r in rows) / wall)
    model_rate = statistics.median(model)

    print(f"{len(laps)} laps x (expert, {name}) = {cars} car-laps, {args.steps} steps each, "
          f"float32 compiled physics, torch threads 1")  # fmt: skip
    print(f"{'path':58s} {'car-steps/s':>12s} {'laps/min at cap':>16s}")
    for label, rate in (("S3BeamNG-v0 via beamngpy + stand-in server (median of laps)",
                         client_rate),
                        (f"vehicle model batched in-process, N={cars} (median of "
                         f"{args.repeats})", model_rate)):  # fmt: skip
        print(f"{label:58s} {rate:12.1f} {60 * rate / args.steps:16.2f}")
    print(f"speed-up: {model_rate / client_rate:.1f}x")


if __name__ == "__main__":
    main()
