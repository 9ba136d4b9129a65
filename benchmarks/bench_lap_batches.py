"""Lap tables with several observation modes: one batch per mode vs one shared batch.

The quick pipeline's laps (Putnam Park, asphalt, 40 s, without ice patches and with four in three
placements) are driven by the scripted expert and the five shipped policies in the stand-in's
vehicle model in-process, two ways:

* ``per mode``: the default-observation drivers (expert, ``bicycle``, ``ddm``, ``trans``,
  ``dytr``) in one batch and the ``oracle`` policy in another, as the lap runner did before;
* ``shared``: :func:`policies.evaluate_model.evaluate_model` as it runs now, every driver in the
  ``oracle`` batch, the default drivers reading its first columns.

Both use the physics ``s3 pipeline`` uses (float32 through ``torch.compile``;
``--reference-physics``: the float64 eager one). Each path is warmed up first (its compilations
are not timed), then the two alternate ``--repeats`` times; the script prints the medians and
their ratio. ``--cold`` instead times one run of each path in a fresh process with an empty
inductor cache (what a fresh machine pays, compilation included). Asserts nothing.

Run: ``python benchmarks/bench_lap_batches.py [--repeats 3] [--cold] [--reference-physics]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time


def _laps_and_policies() -> tuple[list, list, int]:
    """The quick pipeline's laps, its five shipped policies and its step cap."""
    from policies.checkpoint import load_policy, shipped_policy
    from policies.pipeline.config import PRESETS
    from policies.pipeline.steps import batched_evaluation_laps

    cfg = PRESETS["quick"]
    policies = [(name, load_policy(shipped_policy(name))) for name in cfg.eval_policies]
    return batched_evaluation_laps(cfg), policies, int(cfg.eval_max_steps or 0)


def _drive(path: str, fast: bool) -> float:
    """Seconds to drive every lap by every driver along ``path`` (``per_mode`` or ``shared``)."""
    from policies.evaluate_model import _drivers_by_mode, evaluate_model, run_lap_batch

    laps, policies, steps = _laps_and_policies()
    t0 = time.perf_counter()
    if path == "shared":
        evaluate_model(policies, laps, max_steps=steps, fast=fast, progress=False)
    else:
        for mode, drivers in _drivers_by_mode(policies, expert=True).items():
            run_lap_batch(laps, drivers, obs_mode=mode, seed=0, max_steps=steps,
                          time_limit_s=None, fast=fast)  # fmt: skip
    return time.perf_counter() - t0


def main() -> None:
    """Time both paths and print one table."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)  # fmt: skip
    p.add_argument("--repeats", type=int, default=3,
                   help="timed runs of each path, alternated, after one untimed warm-up run "
                   "each; the median is printed (not used with --cold) [count]")  # fmt: skip
    p.add_argument(
        "--cold",
        action="store_true",
        help="one run of each path in a fresh process with an empty compile cache",
    )
    p.add_argument(
        "--reference-physics",
        action="store_true",
        help="float64 eager physics instead of float32 through torch.compile",
    )
    p.add_argument("--one", choices=("per_mode", "shared"), help=argparse.SUPPRESS)
    args = p.parse_args()
    fast = not args.reference_physics
    from gym_s3.threads import configure_threads

    configure_threads(1)
    if args.one:  # a child of --cold
        print(f"{_drive(args.one, fast):.2f}")
        return
    import torch

    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}, "
          f"{'float32 compiled' if fast else 'float64 eager'} physics")  # fmt: skip
    times: dict[str, list[float]] = {"per_mode": [], "shared": []}
    if args.cold:
        for path in times:
            with tempfile.TemporaryDirectory() as cache:
                env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": cache}
                cmd = [sys.executable, __file__, "--one", path]
                if args.reference_physics:
                    cmd.append("--reference-physics")
                out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True)
                times[path].append(float(out.stdout.strip().splitlines()[-1]))
    else:
        for path in times:  # warm-up: compilations of both batch sizes
            _drive(path, fast)
        for _ in range(args.repeats):
            for path in times:
                times[path].append(_drive(path, fast))
    per_mode, shared = (statistics.median(times[k]) for k in ("per_mode", "shared"))
    print(f"{'path':<10} {'median s':>9}  runs")
    for path, values in times.items():
        print(
            f"{path:<10} {statistics.median(values):9.2f}  " + " ".join(f"{v:.2f}" for v in values)
        )
    print(
        f"shared / per mode: {per_mode / shared:.2f}x faster "
        f"({'cold, compilation included' if args.cold else 'warm'})"
    )


if __name__ == "__main__":
    main()
