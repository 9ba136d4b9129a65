"""The soak loops of issue 11: long batched rollouts that must stay finite with flat memory.

:func:`soak_distilled` drives N cars of ``S3Distilled-v0`` (one backend, same-step autoreset)
with uniform random actions slightly beyond the unit box (they are clipped), on every base surface
with zero to four ice patches per layout, from randomised starts (lateral offset, heading error,
speed from standing to above the reference). :func:`soak_vehicle` drives the reference vehicle
simulator from random states (anywhere on and off Putnam Park, any heading, 0-45 m/s, sliding and
yawing) with random controls on random surface layouts; faulted cars restart from new random
states. Both count, without host synchronisation on accelerators, every car-step whose observation,
reward (or vehicle state) is not finite, and sample the process memory (and the device memory on
CUDA) at regular intervals. ``benchmarks/gpu_soak.py`` runs the same loops on a GPU.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np
import torch
from torch import Tensor

from gym_s3.scenarios.pool import PoolConfig
from gym_s3.task import TaskConfig
from gym_s3.tracks.layouts import LayoutConfig, PatchConfig
from gym_s3.tracks.surfaces import SURFACE_NAMES

#: every base surface, ice patches on top (zero to four per layout)
SOAK_LAYOUT = LayoutConfig(base=SURFACE_NAMES, patches=PatchConfig(count=(0, 4), surface="ice"))
#: observation mode per backend (every mode is covered)
OBS_MODE = {"bicycle": "default", "ddm": "oracle", "trans": "history", "dytr": "oracle"}
#: actions are drawn uniformly from [-ACTION_RANGE, ACTION_RANGE] (beyond 1: clipped)
ACTION_RANGE = 1.2


def rss_mib() -> float:
    """Resident set size of this process [MiB] (from ``/proc/self/status``)."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    raise RuntimeError("VmRSS not found in /proc/self/status")


def device_mib(device: torch.device) -> float:
    """Memory held by live tensors on a CUDA device [MiB] (0 on the CPU)."""
    return torch.cuda.memory_allocated(device) / 2**20 if device.type == "cuda" else 0.0


@dataclass
class SoakReport:
    """What a soak run saw.

    Attributes:
        name: what was soaked (backend or ``"vehicle"``).
        num_envs: cars N.
        steps: car-steps simulated (N x control steps).
        seconds: wall time of the stepping loop [s].
        episodes: episodes finished (autoresets) or faulted cars restarted.
        nonfinite: car-steps with a non-finite observation, reward or state (must be 0).
        samples: ``(car-steps so far, host RSS [MiB], device memory [MiB])`` at regular intervals.
    """

    name: str
    num_envs: int
    steps: int = 0
    seconds: float = 0.0
    episodes: int = 0
    nonfinite: int = 0
    samples: list[tuple[int, float, float]] = field(default_factory=list)

    @property
    def steps_per_s(self) -> float:
        """Throughput of the loop [car-steps/s]."""
        return self.steps / self.seconds if self.seconds > 0 else 0.0

    def growth_mib(self, warmup: float = 0.25) -> tuple[float, float]:
        """Largest host and device memory rise after the first ``warmup`` share of samples [MiB].

        The reference is the sample at the end of the warm-up (caches, allocator pools and
        lazily built tables are in place by then).
        """
        start = min(int(len(self.samples) * warmup), len(self.samples) - 1)
        _, rss0, dev0 = self.samples[start]
        later = self.samples[start:]
        return max(r for _, r, _ in later) - rss0, max(d for _, _, d in later) - dev0

    def line(self) -> str:
        """One summary line for logs."""
        host, dev = self.growth_mib()
        return (
            f"{self.name:8} N={self.num_envs:6d} {self.steps:>12,d} car-steps "
            f"{self.steps_per_s:>12,.0f}/s {self.episodes:>9,d} episodes non-finite "
            f"{self.nonfinite} memory +{host:.1f} MiB host +{dev:.1f} MiB device"
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


def soak_env_kwargs(backend: str, seed: int) -> dict[str, Any]:
    """``S3Distilled-v0`` arguments of a soak run of ``backend``."""
    task = TaskConfig(obs_mode=OBS_MODE[backend], max_episode_steps=200, start_lateral_m=2.0,
                      start_heading_rad=0.5, start_speed_fraction=(0.0, 1.2))  # fmt: skip
    return {
        "backend": backend,
        "task": task,
        "tracks": ("putnam", "procedural:0", "procedural:1", "town:0"),
        "layouts_per_track": 6,
        "layout": SOAK_LAYOUT,
        "pool": PoolConfig(),
        "layout_seed": seed,
        "seed": seed,
        "nonfinite_action": "zero",
    }


def _sample(report: SoakReport, device: torch.device) -> None:
    """Append a memory sample at the current step count."""
    report.samples.append((report.steps, rss_mib(), device_mib(device)))


def soak_distilled(
    backend: str,
    num_envs: int,
    control_steps: int,
    *,
    seed: int = 0,
    device: str = "cpu",
    samples: int = 20,
    compile: bool = False,
) -> SoakReport:
    """Step ``num_envs`` cars of ``S3Distilled-v0`` for ``control_steps`` steps with random actions.

    Args:
        backend: dynamics backend (its shipped checkpoint).
        num_envs: cars N.
        control_steps: env steps (each advances all N cars by 0.05 s).
        seed: seed of the env and of the actions.
        device: torch device.
        samples: memory samples taken over the run.
        compile: run the env step through ``torch.compile``.

    Returns:
        The :class:`SoakReport` (``nonfinite`` counts car-steps whose observation, final
        observation or reward had a non-finite entry).
    """
    from gym_s3.envs.distilled import S3DistilledBatchEnv

    dev = torch.device(device)
    env = S3DistilledBatchEnv(num_envs=num_envs, device=device, compile=compile,
                              **soak_env_kwargs(backend, seed))  # fmt: skip
    report = SoakReport(backend, num_envs)
    gen = torch.Generator(device=dev).manual_seed(seed)
    bad = torch.zeros((), dtype=torch.int64, device=dev)
    done = torch.zeros((), dtype=torch.int64, device=dev)
    every = max(1, control_steps // samples)
    obs, _ = env.reset(seed=seed)
    bad += (~torch.isfinite(obs).all(-1)).sum()
    start = time.perf_counter()
    for k in range(control_steps):
        action = (torch.rand(num_envs, 2, generator=gen, device=dev) * 2 - 1) * ACTION_RANGE
        obs, reward, term, trunc, info = env.step(action)
        finite = torch.isfinite(obs).all(-1) & torch.isfinite(info["final_obs"]).all(-1)
        bad += (~(finite & torch.isfinite(reward))).sum()
        done += (term | trunc).sum()
        report.steps += num_envs
        if (k + 1) % every == 0 or k + 1 == control_steps:
            _sample(report, dev)
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
    report.seconds = time.perf_counter() - start
    report.nonfinite, report.episodes = int(bad), int(done)
    return report


def _random_vehicle_state(model: Any, n: int, gen: torch.Generator, centre: Tensor) -> Any:
    """``n`` random valid states: around ``centre`` (+-300 m), any heading, sliding, yawing."""
    dev = model.device

    def uniform(lo: float, hi: float) -> Tensor:
        """``(n,)`` uniform draws in [lo, hi)."""
        return lo + (hi - lo) * torch.rand(n, generator=gen, device=dev, dtype=model.dtype)

    state = model.initial_state(centre[0] + uniform(-300, 300), centre[1] + uniform(-300, 300),
                                uniform(-np.pi, np.pi), uniform(0.0, 45.0))  # fmt: skip
    state.vy = uniform(-3.0, 3.0)
    state.yaw_rate = uniform(-1.0, 1.0)
    state.steer_angle = uniform(-0.3, 0.3)
    state.omega = state.omega * (1.0 + 0.2 * (torch.rand(n, 4, generator=gen, device=dev) - 0.5))
    return state


def soak_vehicle(
    num_cars: int, control_steps: int, *, seed: int = 0, device: str = "cpu", samples: int = 20
) -> SoakReport:
    """Step the reference vehicle from random states with random controls and surfaces.

    Every car gets one of 16 random layouts (any base surface, zero to four ice patches on
    Putnam Park); a car the model flags as faulted restarts from a new random state.

    Returns:
        The :class:`SoakReport` (``nonfinite`` counts car-steps with a non-finite state value).
    """
    report = SoakReport("vehicle", num_cars)
    soak_vehicle_states(num_cars, control_steps, seed=seed, device=device, report=report,
                        samples=samples)  # fmt: skip
    return report


def soak_vehicle_states(
    num_cars: int,
    control_steps: int,
    *,
    seed: int = 0,
    device: str = "cpu",
    report: SoakReport | None = None,
    samples: int = 20,
) -> dict[str, Tensor]:
    """The loop of :func:`soak_vehicle`; returns the final state's tensors by field name.

    Args:
        num_cars: cars N.
        control_steps: 20 Hz control steps (50 physics steps each).
        seed: seed of the layouts, start states and controls.
        device: torch device.
        report: filled in when given (steps, time, restarts, non-finite count, memory).
        samples: memory samples taken over the run.
    """
    from gym_s3.tracks.layouts import sample_layout
    from gym_s3.tracks.registry import get_track
    from gym_s3.tracks.surfaces import SurfaceBatch
    from gym_s3.vehicle import VehicleModel, VehicleState

    dev = torch.device(device)
    model = VehicleModel(device=dev)
    path = get_track("putnam")
    rng = np.random.default_rng(seed)
    bank = SurfaceBatch.stack([sample_layout(path, SOAK_LAYOUT, rng) for _ in range(16)],
                              device=dev)  # fmt: skip
    gen = torch.Generator(device=dev).manual_seed(seed)
    friction = bank.index(torch.randint(0, 16, (num_cars,), generator=gen, device=dev))
    centre = path.xyz[:, :2].mean(0).to(device=dev, dtype=model.dtype)
    state = _random_vehicle_state(model, num_cars, gen, centre)
    report = report if report is not None else SoakReport("vehicle", num_cars)
    bad = torch.zeros((), dtype=torch.int64, device=dev)
    restarts = torch.zeros((), dtype=torch.int64, device=dev)
    every = max(1, control_steps // samples)
    float_fields = [f for f in VehicleState.field_names() if f != "fault"]
    start = time.perf_counter()
    for k in range(control_steps):
        controls = torch.rand(num_cars, 3, generator=gen, device=dev)
        controls[:, 0] = 2.0 * controls[:, 0] - 1.0
        state = model.step(state, controls, friction)
        finite = torch.ones(num_cars, dtype=torch.bool, device=dev)
        for name in float_fields:
            finite &= torch.isfinite(getattr(state, name)).reshape(num_cars, -1).all(-1)
        bad += (~finite).sum()
        restarts += state.fault.sum()
        state = _random_vehicle_state(model, num_cars, gen, centre).where(state.fault, state)
        report.steps += num_cars
        if (k + 1) % every == 0 or k + 1 == control_steps:
            _sample(report, dev)
    report.seconds = time.perf_counter() - start
    report.nonfinite, report.episodes = int(bad), int(restarts)
    return state.to_dict()
