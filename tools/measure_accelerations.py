"""Measure the longitudinal accelerations the car reaches on every surface (high-fidelity model).

Drives the open high-fidelity vehicle model (:class:`gym_s3.vehicle.VehicleModel`, the physics of
the BeamNG stand-in, float64, 1 kHz, ABS on) straight ahead on each named surface, batched: for
every start speed of :data:`SPEEDS` it holds each pedal level of a sweep (throttle, then brake)
for ``--window`` seconds and takes the speed change over the window. The best pedal level gives
the reachable acceleration (on ice full throttle only spins the front wheels, so the best level
is a light one) and the reachable braking deceleration. The friction-aware speed profile
(:mod:`gym_s3.tracks.speed_profile`) reads the table this script writes, so the target speeds
ask for accelerations the car can produce.

    python tools/measure_accelerations.py            # rewrites gym_s3/tracks/accelerations.json
    python tools/measure_accelerations.py --out /tmp/acc.json --window 1.5
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gym_s3.spec import CONTROL_DT_S  # noqa: E402
from gym_s3.tracks.friction import UniformFriction  # noqa: E402
from gym_s3.tracks.surface_table import SURFACES  # noqa: E402
from gym_s3.vehicle import VehicleModel  # noqa: E402

#: Start speeds of the acceleration measurements [m/s] (0: from rest).
SPEEDS: tuple[float, ...] = (0.0, 5.0, 10.0, 15.0, 20.0, 25.0)
#: Start speeds of the braking measurements [m/s] (braking from rest means nothing).
BRAKE_SPEEDS: tuple[float, ...] = SPEEDS[1:]
#: Pedal levels tried [0..1]; the best one counts.
PEDALS: tuple[float, ...] = tuple(round(0.05 * k, 2) for k in range(1, 21))
DEFAULT_OUT = Path(__file__).resolve().parents[1] / "gym_s3" / "tracks" / "accelerations.json"


def measure(
    pedal_column: int, speeds: tuple[float, ...], window_s: float
) -> dict[str, list[float]]:
    """Best mean acceleration [m/s^2] per surface and start speed, throttle (1) or brake (2).

    Returns:
        surface name -> one value per ``speeds`` entry: the largest speed gain (throttle)
        or speed loss (brake) over ``window_s`` divided by it, over the pedal sweep. A brake
        run that stops the car counts the time it took to stop.
    """
    names = list(SURFACES)
    grid = [(s, v, p) for s in names for v in speeds for p in PEDALS]
    n = len(grid)
    mu = torch.tensor([SURFACES[s].mu for s, _, _ in grid], dtype=torch.float64)
    v0 = torch.tensor([v for _, v, _ in grid], dtype=torch.float64)
    model = VehicleModel(dtype=torch.float64)
    state = model.initial_state(x=torch.zeros(n), y=0.0, yaw=0.0, speed=v0)
    controls = torch.zeros(n, 3, dtype=torch.float64)
    controls[:, pedal_column] = torch.tensor([p for _, _, p in grid], dtype=torch.float64)
    steps = round(window_s / CONTROL_DT_S)
    friction = UniformFriction(mu)
    stopped_at = torch.full((n,), window_s, dtype=torch.float64)
    for k in range(steps):
        state = model.step(state, controls, friction)
        just_stopped = (state.vx < 0.05) & (stopped_at == window_s) & (v0 > 0)
        stopped_at = torch.where(just_stopped, (k + 1) * CONTROL_DT_S, stopped_at)
    change = state.vx - v0 if pedal_column == 1 else v0 - state.vx.clamp(min=0.0)
    rate = (change / stopped_at).reshape(len(names), len(speeds), len(PEDALS))
    best = rate.max(dim=-1).values
    return {s: [round(float(x), 4) for x in best[i]] for i, s in enumerate(names)}


def main(argv: list[str] | None = None) -> int:
    """Measure and write the table (JSON)."""
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help="JSON file to write (the default is the table the speed profile "
                        "reads)")  # fmt: skip
    parser.add_argument("--window", type=float, default=2.0,
                        help="time each pedal level is held [s]")  # fmt: skip
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    t0 = time.perf_counter()
    accel = measure(1, SPEEDS, args.window)
    brake = measure(2, BRAKE_SPEEDS, args.window)
    table = {
        "about": "Reachable longitudinal acceleration and braking deceleration [m/s^2] of the "
        "high-fidelity vehicle model (gym_s3.vehicle, SEDAN, ABS on) driving straight on each "
        f"surface: the best pedal level of {len(PEDALS)} held for {args.window:g} s from each "
        "start speed. Written by tools/measure_accelerations.py.",
        "window_s": args.window,
        "speeds": list(SPEEDS),
        "brake_speeds": list(BRAKE_SPEEDS),
        "mu": {s: SURFACES[s].mu for s in SURFACES},
        "accel": accel,
        "brake": brake,
    }
    args.out.write_text(json.dumps(table, indent=1) + "\n")
    print(f"{'surface':12s} {'mu':>5s}  accel [m/s^2] at v0 = {list(SPEEDS)} m/s | brake at "
          f"{list(BRAKE_SPEEDS)} m/s")  # fmt: skip
    for s in SURFACES:
        print(f"{s:12s} {SURFACES[s].mu:5.2f}  {accel[s]} | {brake[s]}")
    print(f"wrote {args.out} in {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
