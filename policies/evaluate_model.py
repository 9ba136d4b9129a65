"""Lap tables in the stand-in's vehicle model, every lap one car of one batch, in-process.

``s3 evaluate --simulator model`` drives the laps of :func:`policies.evaluate.evaluate_beamng`
(tracks x lap surfaces x ice-patch counts x drivers) without the simulator link: every lap is one
car of one batch of the open stand-in's high-fidelity vehicle model
(:class:`gym_s3.sources.VehicleModelCars`, built exactly as the stand-in server builds the model
it steps one frame with), under one :class:`gym_s3.task.TrackingTask` with the lap task
(:func:`gym_s3.task.lap_task`) over a pool whose variants are exactly the laps: each track with
``lap_layout(track, surface, patches, seed)``, starting at ``s = 0`` from rest. So each car
drives the lap that ``S3BeamNG-v0`` on the stand-in would drive, at thousands of car-steps per
second instead of about 20 control steps per second through TCP.

What the stand-in's ``S3BeamNG-v0`` does at a reset is mirrored: the car is placed at rest with
neutral controls, then stepped once (the teleport's step), and the first observation is taken
there. The metrics and ``terminated_by`` come from the task's own episode statistics
(``episode/*`` of the step that ended each car's lap); the physics is float32 through
``torch.compile`` when ``fast`` (what ``s3 evaluate`` gives the stand-in by default) or the float64
eager reference physics.

The same batch runs in ``S3Distilled-v0``'s physics when given a dynamics backend
(``dynamics``): the cars are then :class:`gym_s3.sources.BackendCars`, started as the env's reset
starts them (no teleport step), and the rows are named ``S3Distilled-v0/<backend>``
(``s3 evaluate --env distilled``, ``s3 gap``).

Every row of a batch reports the batch's wall-clock time as its ``wall_s``.

Drivers share a batch when they can read its observations: the ``default`` observation is the
first columns of the ``oracle`` and ``history`` ones, so the scripted expert (noise-free,
:func:`policies.expert_driver.expert_controller`) and every ``default``-mode policy ride in the
batch of the first wider mode among the drivers (one batch, one compilation of the physics and
one pass of the steps instead of two), reading those first columns; ``oracle`` and ``history``
policies (neither observation is a prefix of the other) need a batch each. Each driver acts on
its own rows in one call per step.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import torch
from torch import Tensor

from gym_s3.envs.actions import sanitize_action
from gym_s3.errors import ActionError, ConfigError
from gym_s3.progress import progress_bar
from gym_s3.spec import observation_size
from gym_s3.threads import configure_threads
from policies.checkpoint import Policy
from policies.evaluate import METRICS, RunResult, compare_with_expert, print_run, run_end

__all__ = [
    "MODEL_ENV",
    "Lap",
    "evaluate_model",
    "lap_grid",
    "run_lap_batch",
    "standin_model",
    "start_backend_cars",
    "start_model_cars",
]

#: The simulator the rows of this runner name (``RunResult.env``).
MODEL_ENV = "open stand-in vehicle model (batched in-process)"
#: The ``info`` flags read back at each car's last step (``run_end`` ranks them).
_FLAGS: tuple[str, ...] = ("completed", "off_track", "spin_out", "non_finite", "stalled")


@dataclass(frozen=True)
class Lap:
    """One lap of a table.

    Attributes:
        track: track name (``putnam``, ``procedural:<seed>``, ...).
        surface: lap surface (a surface name or a transition such as ``asphalt>ice``).
        ice_patches: ice patches placed by the layout seed.
        seed: patch placement seed of this lap (``None``: the seed of the batch); laps that
            differ only in it can share one batch.
    """

    track: str
    surface: str
    ice_patches: int
    seed: int | None = None

    @property
    def condition(self) -> dict[str, Any]:
        """The ``RunResult.condition`` of the lap (``seed`` only when the lap names its own)."""
        cond: dict[str, Any] = {
            "track": self.track,
            "surface": self.surface,
            "ice_patches": self.ice_patches,
        }
        if self.seed is not None:
            cond["seed"] = self.seed
        return cond


def lap_grid(tracks: Sequence[str], surfaces: Sequence[str], ice_patches: Sequence[int]
             ) -> list[Lap]:  # fmt: skip
    """Every track x surface x ice-patch count (in that order)."""
    return [Lap(t, s, int(p)) for t in tracks for s in surfaces for p in ice_patches]


def standin_model(fast: bool) -> Any:
    """The :class:`~gym_s3.vehicle.VehicleModel` the stand-in steps one control period with.

    The in-process stand-in of ``s3 evaluate`` (:func:`~gym_s3.beamng.standin.config.standin_world`)
    with ``S3BeamNG-v0``'s deterministic frame rate: the same physics rate, substeps, friction
    reads, ABS, dtype and compilation, one frame per 50 ms control step.
    """
    from gym_s3.beamng.client.link import BeamNGConfig
    from gym_s3.beamng.standin.config import standin_world
    from gym_s3.beamng.standin.fleet import Fleet

    sim = BeamNGConfig()
    if sim.frames_per_step != 1:  # pragma: no cover - guards a change of the env's frame rate
        raise ConfigError(f"the batched laps step one frame per control step, not {sim}")
    return Fleet.from_config(standin_world(fast)).model(sim.steps_per_second)


def start_model_cars(task: Any, scenario: Tensor, *, seed: int, fast: bool
                     ) -> tuple[Any, Any, Tensor]:  # fmt: skip
    """Start every car of ``task`` on ``scenario`` in the stand-in's vehicle model, as at a reset.

    What the stand-in's ``S3BeamNG-v0`` does at a reset: the car is placed at its start pose
    (the task's start noise drawn from ``seed``; the stand-in's levels are flat, z = 0; its
    teleport puts the car at rest), stepped once with neutral controls, and observed there.

    Args:
        task: the :class:`~gym_s3.task.TrackingTask` of the N cars.
        scenario: ``(N,)`` int64 scenario of each car in the task's pool.
        seed: seed of the start noise.
        fast: float32 compiled physics (else the float64 eager reference).

    Returns:
        ``(cars, ego, obs)``: the :class:`~gym_s3.sources.VehicleModelCars`, their state after the
        neutral step and the first observation ``(N, F)``.
    """
    from gym_s3.rows import ResetRows
    from gym_s3.sources import VehicleModelCars

    n = task.n
    every = ResetRows(torch.ones(n, dtype=torch.bool))
    start = task.begin(every, torch.Generator().manual_seed(seed), scenario)
    start = replace(start, z=torch.zeros_like(start.z), speed=torch.zeros_like(start.speed))
    cars = VehicleModelCars(standin_model(fast), n)
    cars.place(every, start, task.wheel_friction(start.ego()))
    zero = torch.zeros(n, 2, dtype=torch.float32)
    ego = cars.advance(zero, task.surfaces, task.wheel_friction(start.ego())).ego
    return cars, ego, task.observe(ego)


def _drivers_by_mode(
    policies: Sequence[tuple[str, Policy]], expert: bool
) -> dict[str, list[tuple[str, Policy | None]]]:
    """Drivers grouped by observation mode (``None`` policy: the expert, in ``default``)."""
    from policies.expert_driver import EXPERT

    groups: dict[str, list[tuple[str, Policy | None]]] = {}
    if expert:
        groups["default"] = [(EXPERT, None)]
    for name, policy in policies:
        groups.setdefault(policy.obs_mode, []).append((name, policy))
    names = [n for group in groups.values() for n, _ in group]
    if len(set(names)) != len(names):
        raise ConfigError(f"driver names must differ (got {names}); rename a checkpoint")
    return groups


def _batches(
    groups: dict[str, list[tuple[str, Policy | None]]],
) -> dict[str, list[tuple[str, Policy | None]]]:
    """The batches to drive, keyed by their observation mode.

    The ``default`` group (the expert with it) joins the batch of the first other mode in
    ``groups``: its observation is the first columns of that mode's. Each other mode keeps a batch
    of its own.
    """
    wider = [mode for mode in groups if mode != "default"]
    if "default" not in groups or not wider:
        return dict(groups)
    batches = {mode: list(drivers) for mode, drivers in groups.items() if mode != "default"}
    batches[wider[0]] = [*groups["default"], *batches[wider[0]]]
    return batches


def evaluate_model(
    policies: Sequence[tuple[str, Policy]],
    laps: Sequence[Lap],
    *,
    seed: int = 0,
    max_steps: int | None = None,
    time_limit_s: float | None = None,
    expert: bool = True,
    fast: bool = True,
    progress: bool = True,
    dynamics: tuple[str, Any] | None = None,
) -> list[RunResult]:
    """Every lap by every driver in the batched vehicle model; policy rows get ``vs_expert``.

    With ``dynamics`` (``(name, DynamicsBackend)``) the same batched laps run in
    ``S3Distilled-v0``'s physics on that backend instead (:func:`start_backend_cars`).

    Args:
        policies: ``(name, policy)`` pairs; the name is the table's driver column.
        laps: the laps (see :func:`lap_grid`).
        seed: seed of the patch placement of laps without their own (and of the expert, which
            draws nothing).
        max_steps: cap on the steps of each lap (stopped laps end as ``running``).
        time_limit_s: lap time limit [s] (default: twice the reference lap of each layout).
        expert: also drive every lap with the scripted expert.
        fast: float32 physics through ``torch.compile`` (as the stand-in of ``s3 evaluate``);
            ``False``: the float64 eager reference physics.
        progress: show the steps of each batch and print one line per lap.
        dynamics: drive the distilled env's backend instead of the stand-in's vehicle model.

    Returns:
        per lap, the expert's row first, then the policies' rows: the ``default``-mode policies
        first, then each other mode's in the order its first policy was given, in the given order
        within a mode.
    """
    if not laps:
        raise ConfigError("no laps to drive: give at least one track, surface and patch count")
    groups = _drivers_by_mode(policies, expert)
    results = []
    for mode, drivers in _batches(groups).items():
        results += run_lap_batch(laps, drivers, obs_mode=mode, seed=seed, max_steps=max_steps,
                                 time_limit_s=time_limit_s, fast=fast, progress=progress,
                                 dynamics=dynamics)  # fmt: skip
    order = {name: i for i, name in enumerate(n for group in groups.values() for n, _ in group)}
    lap_index = {repr(lap.condition): i for i, lap in enumerate(laps)}
    results.sort(key=lambda r: (lap_index[repr(r.condition)], order[r.driver]))
    if progress:
        for r in results:
            print_run(r)
    return compare_with_expert(results)


def run_lap_batch(
    laps: Sequence[Lap],
    drivers: Sequence[tuple[str, Policy | None]],
    *,
    obs_mode: str,
    seed: int,
    max_steps: int | None,
    time_limit_s: float | None,
    fast: bool,
    progress: bool = False,
    dynamics: tuple[str, Any] | None = None,
) -> list[RunResult]:
    """One batch: car ``d * L + l`` is driver ``d`` on lap ``l`` (``L`` laps).

    Args:
        laps: the L laps.
        drivers: ``(name, policy)``; a ``None`` policy is the scripted expert.
        obs_mode: observation mode of the batch; each policy reads the first
            ``observation_size(policy.obs_mode)`` columns, so its mode must be this one or
            ``default`` (whose observation starts every mode's).
        seed: patch placement seed of laps without their own.
        max_steps: cap on the steps.
        time_limit_s: lap time limit [s] (default: the lap task's derived limit).
        fast: float32 compiled physics (else float64 eager); the vehicle model only.
        progress: show a progress bar of the batch's steps.
        dynamics: ``(name, DynamicsBackend)``: the cars are ``S3Distilled-v0``'s on that backend
            (:func:`start_backend_cars`, rows named ``S3Distilled-v0/<name>``) instead of the
            stand-in's vehicle model.
    """
    from gym_s3.scenarios.pool import PoolConfig, ScenarioPool
    from gym_s3.task import TrackingTask, lap_task
    from gym_s3.tracks.lap_layouts import lap_layout
    from gym_s3.tracks.registry import cached_track
    from policies.expert_driver import expert_controller

    t0 = time.perf_counter()
    width = {}  # driver index -> observation columns it reads
    for d, (name, pol) in enumerate(drivers):
        if pol is not None:
            if pol.obs_mode not in (obs_mode, "default"):
                raise ConfigError(
                    f"policy '{name}' reads the '{pol.obs_mode}' observation, which is not a "
                    f"prefix of this batch's '{obs_mode}' one; drive it in a batch of its own"
                )
            width[d] = observation_size(pol.obs_mode)
    tracks = list(dict.fromkeys(lap.track for lap in laps))
    paths = [cached_track(t) for t in tracks]
    layouts = [[lap_layout(paths[k], lap.surface, lap.ice_patches,
                           seed if lap.seed is None else lap.seed)
                for lap in laps if lap.track == t] for k, t in enumerate(tracks)]  # fmt: skip
    # S3BeamNG-v0's pool per lap: the same speed profile settings, one start at s = 0
    pool = ScenarioPool.build(paths, layouts, PoolConfig(), starts=[[0.0]] * len(paths))
    # pool variants run track by track; map each lap to its variant (= its scenario)
    seen = {t: 0 for t in tracks}
    offsets = [sum(len(lay) for lay in layouts[:k]) for k in range(len(tracks))]
    lap_variant = []
    for lap in laps:
        k = tracks.index(lap.track)
        lap_variant.append(offsets[k] + seen[lap.track])
        seen[lap.track] += 1
    n_laps, n = len(laps), len(laps) * len(drivers)
    scenario = torch.tensor(lap_variant, dtype=torch.int64).repeat(len(drivers))
    if not bool((pool.scenario_variant[scenario] == scenario).all()):  # pragma: no cover
        raise ConfigError("lap pool: expected one scenario per variant")
    task = TrackingTask(pool, n, lap_task(time_limit_s, obs_mode=obs_mode))
    configure_threads(device=task.device)  # the envs' thread rule (gym_s3.threads)
    if dynamics is None:
        env_name = MODEL_ENV
        cars, ego, obs = start_model_cars(task, scenario, seed=seed, fast=fast)
        wheel_mu = torch.ones(n, 4)  # unread: the model reads the friction itself
    else:
        env_name = f"S3Distilled-v0/{dynamics[0]}"
        cars, ego, obs, wheel_mu = start_backend_cars(task, scenario, dynamics[1], seed=seed)
    expert_rows = [d for d, (_, pol) in enumerate(drivers) if pol is None]
    expert = expert_controller(seed, n) if expert_rows else None
    cap = int(task.limit.max()) if max_steps is None else min(int(task.limit.max()), max_steps)
    trace = _Trace(n, cap)
    ended = torch.zeros(n, dtype=torch.bool)
    bar = progress_bar(enabled=progress, transient=True)
    modes = "+".join(dict.fromkeys("default" if p is None else p.obs_mode for _, p in drivers))
    job = bar.add_task(f"{env_name}: {n} cars ({modes} obs)", total=cap)
    bar.start()
    for step in range(cap):
        action = torch.zeros(n, 2, dtype=torch.float32)
        if expert is not None:
            action = expert.act(ego, task.measure(ego), task).float()
        for d, (_, pol) in enumerate(drivers):
            if pol is not None:
                rows = slice(d * n_laps, (d + 1) * n_laps)
                own = obs[rows, : width[d]].float()
                action[rows] = torch.as_tensor(pol.act(own)).float().cpu()
        action, nonfinite = sanitize_action(action)
        if bool((nonfinite & ~ended).any()):
            car = int(torch.nonzero(nonfinite & ~ended)[0, 0])
            raise ActionError(
                f"driver '{drivers[car // n_laps][0]}' gave a non-finite action on lap "
                f"{laps[car % n_laps].condition} at step {step}; the envs refuse it too "
                "(nonfinite_action='raise'): check the policy's weights and observations"
            )
        moved = cars.advance(action, task.surfaces, wheel_mu)
        out = task.step(moved.ego, action, fault=moved.fault)
        wheel_mu = out.info["wheel_mu"]
        trace.record(out.info, out.obs[:, 0], action, out.truncated, ended)
        ended |= out.terminated | out.truncated
        ego, obs = moved.ego, out.obs
        bar.update(job, advance=1)
        if bool(ended.all()):
            break
    bar.stop()
    wall = time.perf_counter() - t0
    results = []
    for car in range(n):
        (name, _), lap = drivers[car // n_laps], laps[car % n_laps]
        res = trace.result(car, env=env_name, condition=lap.condition, driver=name)
        res.wall_s = wall
        res.reference = paths[tracks.index(lap.track)]
        res.layout = pool.layouts[lap_variant[car % n_laps]]
        results.append(res)
    return results


def start_backend_cars(task: Any, scenario: Tensor, backend: Any, *, seed: int
                       ) -> tuple[Any, Any, Tensor, Tensor]:  # fmt: skip
    """Start every car of ``task`` on ``scenario`` on a dynamics backend, as ``S3Distilled-v0``.

    What :meth:`gym_s3.envs.core.DistilledCore.reset` does for every car: the start pose (the
    task's start noise drawn from ``seed``), fresh backend states there with the friction under
    the wheels (learned backends prefill their history), and the first observation.

    Args:
        task: the :class:`~gym_s3.task.TrackingTask` of the N cars.
        scenario: ``(N,)`` int64 scenario of each car in the task's pool.
        backend: the :class:`~gym_s3.dynamics.DynamicsBackend` (on the task's device and dtype).
        seed: seed of the start noise.

    Returns:
        ``(cars, ego, obs, wheel_mu)``: the :class:`~gym_s3.sources.BackendCars`, their start
        state, the first observation ``(N, F)`` and the friction under the wheels ``(N, 4)``
        (the backend's input at the first step, as the env keeps it).
    """
    from gym_s3.rows import ResetRows
    from gym_s3.sources import BackendCars

    n = task.n
    every = ResetRows(torch.ones(n, dtype=torch.bool, device=task.device))
    start = task.begin(every, torch.Generator().manual_seed(seed), scenario)
    mu = task.wheel_friction(start.ego())
    cars = BackendCars(backend, n, task.device, task.dtype)
    ego = cars.place(every, start, mu)
    return cars, ego, task.observe(ego, mu), mu


class _Trace:
    """Per-step traces ``(T, N)`` (actions ``(T, N, 2)``) of a batch and each car's last values."""

    def __init__(self, n: int, cap: int) -> None:
        self.steps = 0
        names = ("x", "y", "cross_track_error", "s", "speed", "target_speed")
        self.cols = {k: torch.zeros(cap, n, dtype=torch.float64) for k in names}
        self.actions = torch.zeros(cap, n, 2, dtype=torch.float64)
        self.last = {k: torch.zeros(n, dtype=torch.float64) for k in METRICS}
        self.flags = {k: torch.zeros(n, dtype=torch.bool) for k in (*_FLAGS, "truncated")}
        self.length = torch.zeros(n, dtype=torch.int64)

    def record(self, info: dict[str, Tensor], speed: Tensor, action: Tensor, truncated: Tensor,
               ended: Tensor) -> None:  # fmt: skip
        """Store one step of every car still driving (cars that ended keep their last values).

        ``action`` is the ``(N, 2)`` action the cars were given this step.
        """
        k, live = self.steps, ~ended
        for name, col in self.cols.items():
            col[k] = (speed if name == "speed" else info[name]).double()
        self.actions[k] = action.double()
        for name in METRICS:
            self.last[name] = torch.where(live, info[f"episode/{name}"].double(), self.last[name])
        for name in _FLAGS:
            self.flags[name] = torch.where(live, info[name], self.flags[name])
        self.flags["truncated"] = torch.where(live, truncated, self.flags["truncated"])
        self.length = torch.where(live, torch.full_like(self.length, k + 1), self.length)
        self.steps += 1

    def result(self, car: int, *, env: str, condition: dict[str, Any], driver: str) -> RunResult:
        """The :class:`RunResult` of one car (its rows up to its last step)."""
        t = int(self.length[car])
        col = {name: values[:t, car].numpy() for name, values in self.cols.items()}
        flags = {name: bool(v[car]) for name, v in self.flags.items()}
        return RunResult(
            env=env,
            condition=dict(condition),
            metrics={k: float(v[car]) for k, v in self.last.items()},
            terminated_by=run_end(flags, flags["truncated"]),
            trajectory=np.stack([col["x"], col["y"]], axis=-1),
            cte=col["cross_track_error"],
            s=col["s"],
            speed=col["speed"],
            target=col["target_speed"],
            actions=self.actions[:t, car].numpy(),
            driver=driver,
        )
