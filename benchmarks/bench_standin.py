"""Env steps per second through the stand-in at N = 1: the high-fidelity baseline.

One env step is what ``S3BeamNG-v0`` does every 20 Hz control period through the real beamngpy
client over loopback: ``vehicle.control(...)``, ``bng.control.step(k)`` (k frames = 0.05 s of
simulated time) and ``vehicle.sensors.poll()`` (State, Electrics, Timer). For comparison, the
same simulated time is also stepped directly with the vehicle model (no protocol), which shows
what the protocol costs. A second table times the whole ``S3BeamNG-v0.step`` (protocol plus the
env's projection, observation, reward and metrics), eager and compiled. Prints medians over
repeats; asserts nothing.

Run: ``python benchmarks/bench_standin.py [--steps 100] [--repeats 5]``
"""

from __future__ import annotations

import argparse
import logging
import math
import statistics
import time
from dataclasses import dataclass

import torch

from gym_s3.beamng.frames import yaw_to_quat
from gym_s3.beamng.standin.config import WorldConfig
from gym_s3.beamng.standin.server import StandInServer
from gym_s3.tracks.surfaces import SurfaceLayout
from gym_s3.vehicle import VehicleModel

CONTROL_DT = 0.05  # the project's control period [s]


@dataclass(frozen=True)
class Case:
    """One benchmark configuration."""

    label: str
    steps_per_second: int
    physics_rate_hz: float
    dtype: str

    @property
    def frames_per_step(self) -> int:
        """Frames per 20 Hz env step (``k`` in ``step(k)``)."""
        return round(self.steps_per_second * CONTROL_DT)


CASES = (
    Case("default: 60 fps, 1020 Hz, float64", 60, 1000.0, "float64"),
    Case("20 fps, 1 kHz, float64", 20, 1000.0, "float64"),
    Case("20 fps, 1 kHz, float32", 20, 1000.0, "float32"),
)


def through_standin(case: Case, steps: int) -> float:
    """Env steps per second of control + step(k) + poll through beamngpy."""
    import beamngpy

    logging.getLogger("beamngpy").setLevel(logging.WARNING)
    config = WorldConfig(
        steps_per_second=case.steps_per_second,
        physics_rate_hz=case.physics_rate_hz,
        dtype=case.dtype,
    )
    with StandInServer(world_config=config) as server:
        bng = beamngpy.BeamNGpy("127.0.0.1", server.port, quit_on_close=False, socket_timeout=30)
        bng.open(launch=False)
        scenario = beamngpy.Scenario("smallgrid", "bench")
        vehicle = beamngpy.Vehicle("ego", model="etk800")
        vehicle.sensors.attach("electrics", beamngpy.sensors.Electrics())
        vehicle.sensors.attach("timer", beamngpy.sensors.Timer())
        scenario.add_vehicle(vehicle, pos=(0, 0, 0), rot_quat=yaw_to_quat(0.0))
        scenario.make(bng)
        bng.settings.set_deterministic(case.steps_per_second)
        bng.scenario.load(scenario)
        bng.scenario.start()
        bng.control.pause()
        k = case.frames_per_step
        for _ in range(5):  # warm-up
            vehicle.control(steering=0.0, throttle=0.5, brake=0.0)
            bng.control.step(k)
            vehicle.sensors.poll()
        start = time.perf_counter()
        for i in range(steps):
            vehicle.control(steering=0.3 * math.sin(i / 10), throttle=0.5, brake=0.0)
            bng.control.step(k)
            vehicle.sensors.poll()
        elapsed = time.perf_counter() - start
        bng.disconnect()
    return steps / elapsed


def physics_only(case: Case, steps: int) -> float:
    """Env steps per second of the vehicle model alone for the same simulated time."""
    torch.set_num_threads(1)
    substeps = max(1, round(case.physics_rate_hz / case.steps_per_second))
    dtype = getattr(torch, case.dtype)
    model = VehicleModel(
        physics_dt=1.0 / (case.steps_per_second * substeps), substeps=substeps, dtype=dtype
    )
    state = model.initial_state(torch.zeros(1, dtype=dtype), 0.0, 0.0)
    friction = SurfaceLayout().batch(dtype=dtype)
    controls = torch.tensor([[0.0, 0.5, 0.0]], dtype=dtype)
    for _ in range(5 * case.frames_per_step):
        state = model.step(state, controls, friction)
    start = time.perf_counter()
    for _ in range(steps * case.frames_per_step):
        state = model.step(state, controls, friction)
    return steps / (time.perf_counter() - start)


def through_env(fast: bool, steps: int) -> float:
    """Env steps per second of the whole ``S3BeamNG-v0.step`` on the in-process stand-in.

    On top of the protocol round trip this is the env's own work: action checks, Frenet
    projection on Putnam Park, observation, reward terms and metrics.
    """
    import gymnasium as gym
    import numpy as np

    import gym_s3  # noqa: F401  (registers the ids)

    env = gym.make("S3BeamNG-v0", standin=True, standin_fast=fast)
    try:
        env.reset(seed=0)
        for _ in range(5):  # warm-up (and the one-off compilation when fast)
            env.step(np.array([0.0, 0.3], dtype=np.float32))
        start = time.perf_counter()
        for i in range(steps):
            env.step(np.array([0.1 * math.sin(i / 10), 0.3], dtype=np.float32))
        return steps / (time.perf_counter() - start)
    finally:
        env.close()


def main() -> None:
    """Run every case and print medians."""
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--steps", type=int, default=100,
                        help="timed env steps per repeat, after 5 untimed ones "
                        "[steps of 50 ms]")  # fmt: skip
    parser.add_argument("--repeats", type=int, default=5,
                        help="timed repeats per case, each with a fresh server, model or env; "
                        "the median is printed [count]")  # fmt: skip
    args = parser.parse_args()
    print(f"N = 1, one env step = {CONTROL_DT} s simulated; medians of {args.repeats} repeats")
    header = f"{'case':38s} {'env steps/s':>12s} {'ms/step':>8s} {'x realtime':>10s}"
    print(header + f" {'physics only':>13s} {'protocol share':>15s}")
    for case in CASES:
        served = statistics.median(through_standin(case, args.steps) for _ in range(args.repeats))
        bare = statistics.median(physics_only(case, args.steps) for _ in range(args.repeats))
        share = 1.0 - served / bare
        print(
            f"{case.label:38s} {served:12.1f} {1000 / served:8.2f} {served * CONTROL_DT:10.2f}"
            f" {bare:13.1f} {share:14.0%}"
        )
    print("\nS3BeamNG-v0.step on the in-process stand-in (protocol + the env's own work)")
    for fast in (False, True):
        label = "compiled float32 (standin_fast)" if fast else "eager float64 (default)"
        rate = statistics.median(through_env(fast, args.steps) for _ in range(args.repeats))
        print(f"{label:38s} {rate:12.1f} {1000 / rate:8.2f} {rate * CONTROL_DT:10.2f}")


if __name__ == "__main__":
    main()
