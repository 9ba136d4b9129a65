"""Restarts: does a policy drive on from standstill, wide of the line and turned away from it?

A lap fails as ``stalled`` when the car comes to rest and the policy never drives off again: after
a slide on an ice patch or wide in a hairpin, the car stands at a heading error of 0.3-0.8 rad or
2 m off the line, a state a policy trained only on starts close to the line may never have seen
(the shipped ``ddm`` before this check brakes there, at full lock, for ever). This check puts every
car in exactly that state and counts the cars that get going.

The cars are those of :func:`policies.evaluate_model.start_model_cars`: the stand-in's
high-fidelity vehicle model, in-process, one batch. Car ``i`` starts on scenario
``i % (tracks x surfaces x starts)``: one of ``starts`` evenly spaced places of each track, a
uniform surface, at rest, with a lateral offset drawn from ``U(-lateral_m, lateral_m)`` and a
heading error from ``U(-heading_rad, heading_rad)`` (the same draws for every policy). A car
*drove on* when, within ``seconds``, it advanced ``min_progress_m`` along the reference and its
episode did not end by failure (off the road, spun out, stalled: standing ``stall_time_s``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from gym_s3.errors import ConfigError
from policies.checkpoint import Policy

__all__ = ["RestartConfig", "RestartResult", "restart_check"]

#: on open routes, no start lies closer than this to the end [m]
_OPEN_END_M = 60.0


@dataclass(frozen=True)
class RestartConfig:
    """The restart states and what counts as driving on.

    Attributes:
        tracks: circuits of the starts (by default three procedural circuits that neither the
            dynamics data nor the PPO pool contains).
        surfaces: uniform surface of each start's lap.
        starts: evenly spaced start places per track and surface [count].
        cars: cars in the batch, at least ``tracks x surfaces x starts`` (car ``i`` takes start
            place ``i`` modulo that, so the default 1,152 over 108 places gives 10 or 11 each).
        lateral_m: start lateral offset drawn from ``U(-x, x)`` [m].
        heading_rad: start heading error drawn from ``U(-x, x)`` [rad].
        seconds: time the car has to get going [s].
        min_progress_m: distance along the reference that counts as driving on [m].
        stall_time_s: standing this long ends the episode as ``stalled`` [s].
        seed: seed of the start noise.
        fast: float32 compiled physics (else the float64 eager reference).
    """

    tracks: tuple[str, ...] = ("procedural:301", "procedural:302", "procedural:303")
    surfaces: tuple[str, ...] = ("asphalt", "snow", "ice")
    starts: int = 12
    cars: int = 1152
    lateral_m: float = 2.0
    heading_rad: float = 0.8
    seconds: float = 15.0
    min_progress_m: float = 15.0
    stall_time_s: float = 10.0
    seed: int = 0
    fast: bool = True

    def __post_init__(self) -> None:
        places = len(self.tracks) * len(self.surfaces) * self.starts
        if not (self.tracks and self.surfaces) or self.starts < 1 or self.cars < places:
            raise ConfigError(
                f"a restart check needs tracks, surfaces, starts >= 1 and at least one car per "
                f"start place (tracks x surfaces x starts = {places}), got cars={self.cars}"
            )
        if not (self.seconds > 0 and self.stall_time_s > 0 and self.min_progress_m > 0):
            raise ConfigError(
                f"seconds, stall_time_s and min_progress_m must be > 0, got {self.seconds}, "
                f"{self.stall_time_s}, {self.min_progress_m}"
            )
        if not (self.lateral_m >= 0 and self.heading_rad >= 0):
            raise ConfigError("lateral_m [m] and heading_rad [rad] must be >= 0")


@dataclass(frozen=True)
class RestartResult:
    """One policy's restarts.

    Attributes:
        name: the policy's name.
        drove_on: share of the cars that drove on, per surface [0..1].
        stalled: share that ended ``stalled``, per surface [0..1].
        cars: cars per surface [count].
    """

    name: str
    drove_on: dict[str, float]
    stalled: dict[str, float]
    cars: dict[str, int]

    @property
    def overall(self) -> float:
        """Share of all cars that drove on [0..1]."""
        total = sum(self.cars.values())
        return sum(self.drove_on[s] * self.cars[s] for s in self.cars) / max(total, 1)


def _pool(config: RestartConfig):
    """The pool: one variant per track x surface (uniform), ``starts`` evenly spaced starts."""
    from gym_s3.scenarios.pool import PoolConfig, ScenarioPool
    from gym_s3.tracks.lap_layouts import lap_layout
    from gym_s3.tracks.registry import cached_track

    paths = [cached_track(t) for t in config.tracks]
    layouts = [[lap_layout(p, s, 0, config.seed) for s in config.surfaces] for p in paths]
    # open routes keep their last start _OPEN_END_M before the end (room to get going)
    spans = [p.length if p.closed else max(p.length - _OPEN_END_M, 0.0) for p in paths]
    starts = [[span * k / config.starts for k in range(config.starts)] for span in spans]
    return ScenarioPool.build(paths, layouts, PoolConfig(), starts=starts)


def _surface_of(pool, scenario: Tensor, config: RestartConfig) -> Tensor:
    """``(N,)`` index into ``config.surfaces`` of each car's lap.

    :func:`_pool` builds the variants track by track, each track's surfaces in order, so a
    variant's surface is its index modulo the number of surfaces.
    """
    return pool.scenario_variant[scenario] % len(config.surfaces)


def restart_check(
    policies: Sequence[tuple[str, Policy]], config: RestartConfig = RestartConfig()
) -> list[RestartResult]:
    """Start every policy's cars at rest wide of the line; count those that drive on.

    Args:
        policies: ``(name, policy)`` pairs; each drives its own batch of the same starts.
        config: the starts and the bar.

    Returns:
        One :class:`RestartResult` per policy, in order.
    """
    from gym_s3.task import TrackingTask
    from gym_s3.task_config import CONTROL_DT_S, TaskConfig
    from policies.evaluate_model import start_model_cars

    pool = _pool(config)
    steps = max(1, round(config.seconds / CONTROL_DT_S))
    n = config.cars
    scenario = torch.arange(n, dtype=torch.int64) % int(pool.scenario_variant.numel())
    surface = _surface_of(pool, scenario, config)
    results = []
    for name, policy in policies:
        task_cfg = TaskConfig(obs_mode=policy.obs_mode, max_episode_steps=steps,
                              start_speed_fraction=(0.0, 0.0), start_lateral_m=config.lateral_m,
                              start_heading_rad=config.heading_rad,
                              stall_time_s=config.stall_time_s)  # fmt: skip
        task = TrackingTask(pool, n, task_cfg)
        cars, _, obs = start_model_cars(task, scenario, seed=config.seed, fast=config.fast)
        zero = torch.zeros(n, 2, dtype=torch.float32)
        ended = torch.zeros(n, dtype=torch.bool)
        failed, stalled = torch.zeros_like(ended), torch.zeros_like(ended)
        progress = torch.zeros(n, dtype=torch.float64)
        for _ in range(steps):
            action = torch.as_tensor(policy.act(obs.float())).float().cpu().clamp(-1.0, 1.0)
            moved = cars.advance(action, task.surfaces, zero)
            out = task.step(moved.ego, action, fault=moved.fault)
            live = ~ended
            progress = torch.where(live, out.info["episode/progress"].double(), progress)
            failed |= live & out.terminated & ~out.info["completed"]
            stalled |= live & out.info["stalled"]
            ended |= out.terminated | out.truncated
            obs = out.obs
            if bool(ended.all()):
                break
        drove_on = ~failed & (progress >= config.min_progress_m)
        results.append(_summarise(name, config.surfaces, surface, drove_on, stalled))
    return results


def _summarise(name: str, surfaces: Sequence[str], surface: Tensor, drove_on: Tensor,
               stalled: Tensor) -> RestartResult:  # fmt: skip
    """Per-surface shares of one policy's cars."""
    on, st, count = {}, {}, {}
    for k, s in enumerate(surfaces):
        rows = surface == k
        count[s] = int(rows.sum())
        on[s] = float(drove_on[rows].double().mean()) if count[s] else float("nan")
        st[s] = float(stalled[rows].double().mean()) if count[s] else float("nan")
    return RestartResult(name=name, drove_on=on, stalled=st, cars=count)
