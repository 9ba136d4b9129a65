"""``s3 data generate``: the default dataset, made deterministically from a seed.

The episode loop of every source of cars: the tracking task (:class:`gym_s3.task.TrackingTask`)
with cars of the batched reference simulator (:class:`gym_s3.sources.VehicleModelCars`, the
physics of the open stand-in server) driven by the scripted expert
(:class:`gym_s3.drivers.expert.BatchedExpert`) over Putnam Park, procedural circuits and town
routes, on every surface, with ice patches and perturbation events. Every car of a *wave* starts
on its own variant (track x surface layout) at a random position and drives until the task ends
its episode (:meth:`GenerateConfig.task`: the time limit, leaving the road, spinning, completing a
route or a simulator fault). Each drive is one episode file (source
``"standin-batched"``, its own session); a ``manifest.json`` lists the files with their content
digests and the dataset's content hash.

Ground is flat (``z = 0``), as on the stand-in's levels, so logs from both sources agree.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

from gym_s3.data.dataset import episode_digest
from gym_s3.data.files import EPISODE_SUFFIX, write_episode
from gym_s3.data.generate_config import PRESETS, GenerateConfig, preset
from gym_s3.data.labelling import episode_labels
from gym_s3.data.manifest import claim_folder, write_manifest
from gym_s3.data.recorder import episode_file_name
from gym_s3.data.schema import COLUMNS, EpisodeMeta, layout_to_dict
from gym_s3.drivers.expert import EVENTS, BatchedExpert
from gym_s3.errors import ConfigError
from gym_s3.loop import Driver, drive
from gym_s3.rows import ResetRows
from gym_s3.scenarios.pool import ScenarioPool
from gym_s3.sources import VehicleModelCars
from gym_s3.spec import CONTROL_DT_S
from gym_s3.task import StartPose, TrackingTask
from gym_s3.task_types import TrackSample
from gym_s3.tracks.layouts import LayoutConfig, sample_layout
from gym_s3.tracks.path import ReferencePath, wrap_angle
from gym_s3.tracks.registry import get_track
from gym_s3.tracks.surfaces import get_surface
from gym_s3.vehicle import SEDAN, VehicleModel, VehicleState, controls_from_action

#: What simulates the cars of a generated dataset (the manifest's ``simulator``).
SIMULATOR = "open stand-in vehicle model (batched, in-process)"
#: Open routes start at least this far before their end [m].
OPEN_ROUTE_TAIL_M = 150.0
#: Progress callback: ``(steps done, steps total)``.
Progress = Callable[[int, int], None]


@contextmanager
def _torch_threads(n: int) -> Iterator[None]:
    """Run a block with ``n`` torch intra-op threads, restoring the previous count."""
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def build_tracks(config: GenerateConfig, seed: int) -> tuple[list[ReferencePath], list[int]]:
    """The tracks of a dataset and their group (0 Putnam, 1 procedural, 2 town).

    ``config.tracks`` names them when given; otherwise Putnam Park, ``procedural_tracks``
    circuits and ``town_routes`` routes with seeds drawn from ``seed``.
    """
    if config.tracks:
        names = list(config.tracks)
    else:
        rng = np.random.default_rng([seed, 1])
        proc = rng.choice(10_000, size=config.procedural_tracks, replace=False)
        town = rng.choice(10_000, size=config.town_routes, replace=False)
        names = ["putnam"] + [f"procedural:{s}" for s in proc] + [f"town:{s}" for s in town]
    kinds = ("putnam", "procedural", "town")
    groups = [kinds.index(n.partition(":")[0]) if n.partition(":")[0] in kinds else 1
              for n in names]  # fmt: skip
    return [get_track(name) for name in names], groups


def build_pool(paths: list[ReferencePath], config: GenerateConfig, seed: int) -> ScenarioPool:
    """Variants: every track x surface x ``layouts_per_surface`` ice-patch layouts."""
    rng = np.random.default_rng([seed, 2])
    layouts = [
        [
            sample_layout(path, LayoutConfig(base=(surf,), patches=config.patches), rng)
            for surf in config.surfaces
            for _ in range(config.layouts_per_surface)
        ]
        for path in paths
    ]
    return ScenarioPool.build(paths, layouts, config.pool, starts=[[0.0]] * len(paths))


def _draw_variants(
    pool: ScenarioPool, groups: list[int], config: GenerateConfig, n: int, g: torch.Generator,
    wave: int,
) -> Tensor:  # fmt: skip
    """Draw the ``(n,)`` variants of a wave.

    Surfaces take turns (every surface equally often), the track group is drawn by weight, then
    a layout of that group and surface uniformly.
    """
    vgroup = torch.tensor(groups)[pool.variant_path]
    names = [get_surface(s).name for s in config.surfaces]
    vsurf = torch.tensor([names.index(lay.base) for lay in pool.layouts])
    w = torch.tensor(config.track_weights, dtype=torch.float64)
    present = torch.tensor([bool((vgroup == i).any()) for i in range(3)])
    w = torch.where(present, w, torch.zeros_like(w))
    if not w.sum() > 0:
        raise ConfigError("track_weights give zero weight to every track group in the dataset")
    surface = (torch.arange(n) + wave) % len(names)
    group = torch.multinomial(w, n, replacement=True, generator=g)
    u = torch.rand(n, generator=g, dtype=torch.float64)
    out = torch.full((n,), -1, dtype=torch.int64)
    for i in range(3):
        for j in range(len(names)):
            ids = ((vgroup == i) & (vsurf == j)).nonzero().flatten()
            rows = (group == i) & (surface == j)
            if ids.numel():
                out[rows] = ids[(u[rows] * ids.numel()).long().clamp(max=ids.numel() - 1)]
    if bool((out < 0).any()):  # every track has every surface, so this means a broken pool
        raise ConfigError("some cars found no variant of their track group and surface")
    return out


class _Columns:
    """Per-step column buffers ``(T, N)`` of a wave."""

    def __init__(self, steps: int, n: int) -> None:
        self.data = {c.name: np.zeros((steps, n), dtype=c.dtype) for c in COLUMNS}

    def put(self, k: int, **values: Tensor) -> None:
        """Store row ``k`` of every car from ``(N,)`` tensors."""
        for name, value in values.items():
            self.data[name][k] = value.detach().cpu().numpy()


def _record(cols: _Columns, k: int, st: VehicleState, yaw: Tensor, action: Tensor,
            controls: Tensor, smp: TrackSample) -> None:  # fmt: skip
    """Write row ``k`` of every car."""
    wheels = ("fl", "fr", "rl", "rr")
    cols.put(
        k, x=st.x, y=st.y, z=st.z, yaw=yaw, v_long=st.vx, v_lat=st.vy, yaw_rate=st.yaw_rate,
        ax=st.ax, ay=st.ay, steer=action[:, 0], accel=action[:, 1], steer_cmd_raw=controls[:, 0],
        throttle_cmd=controls[:, 1], brake_cmd=controls[:, 2], steer_applied=st.steer_angle,
        throttle_applied=st.throttle, brake_applied=st.brake, s=smp.s, d=smp.d,
        target_speed=smp.target_speed, fault=st.fault,
        **{f"omega_{w}": st.omega[:, i] for i, w in enumerate(wheels)},
        **{f"mu_{w}": smp.mu[:, i] for i, w in enumerate(wheels)},
        **{f"surface_{w}": smp.surface[:, i] for i, w in enumerate(wheels)},
    )  # fmt: skip
    cols.data["t"][k] = k * CONTROL_DT_S


@dataclass(frozen=True)
class WaveDriver:
    """A driver of the waves other than the scripted expert (a policy with exploration noise).

    Attributes:
        name: the driver tag written into every episode (``meta.device`` and
            ``meta.extra["driver"]``), e.g. ``"policy:ddm"``.
        obs_mode: observation mode of the task the driver reads observations from.
        make: ``(cars N, task, wave) -> driver`` of one wave (seed its noise from ``wave``).
        extra: JSON details added to every episode's ``meta.extra`` (noise, checkpoint).
        session_prefix: prefix of the session ids (keeps them apart from the expert's ``gen``).
    """

    name: str
    obs_mode: str
    make: Callable[[int, TrackingTask, int], Driver]
    extra: dict[str, Any]
    session_prefix: str


@dataclass(frozen=True)
class Wave:
    """What one wave of cars drove.

    Attributes:
        columns: per column name, ``(T, N)`` values of every car (rows past a car's end unused).
        rows: ``(N,)`` rows kept per car (its episode's states ``0 .. rows - 1``).
        variant: ``(N,)`` int64 pool variant of each car.
        start_s: ``(N,)`` start arc length of each car [m].
        events: per enabled perturbation event name, ``(N,)`` counts.
        end_reason: ``(N,)`` int64 why each episode ended (:meth:`TaskStep.end_reasons` codes:
            ``1 +`` index into :data:`~gym_s3.task.END_REASONS`).
    """

    columns: dict[str, np.ndarray]
    rows: np.ndarray
    variant: Tensor
    start_s: Tensor
    events: dict[str, np.ndarray]
    end_reason: np.ndarray


def start_arc_length(u: Tensor, length: Tensor, closed: Tensor) -> Tensor:
    """Start arc lengths ``(N,)`` [m] from uniform draws ``u`` in [0, 1).

    Closed paths (``length`` [m]) start anywhere, open ones at least :data:`OPEN_ROUTE_TAIL_M`
    before their end.
    """
    return torch.where(closed, u * length, u * (length - OPEN_ROUTE_TAIL_M).clamp(min=0.0))


def _starts(task: TrackingTask, variant: Tensor, config: GenerateConfig, g: torch.Generator
            ) -> tuple[StartPose, Tensor]:  # fmt: skip
    """Begin every car's episode anywhere along its path; returns the poses and start s ``(N,)``.

    Closed paths start anywhere, open ones at least 150 m before the end; the start lies
    ``U(-start_lateral_m, start_lateral_m)`` left of the path, aligned with it, at a share
    ``U(start_speed_fraction)`` of the target speed, on flat ground (``z = 0``).
    """
    n = variant.shape[0]
    pid = task.pool.variant_path[variant]
    closed, length = task.pool.bank.closed[pid], task.pool.bank.length[pid].double()
    u = torch.rand(n, 3, generator=g, dtype=torch.float64)
    s0 = start_arc_length(u[:, 0], length, closed)
    task.begin_at(ResetRows(torch.ones(n, dtype=torch.bool)), variant, s0)  # every car
    lateral = ((2 * u[:, 1] - 1) * config.start_lateral_m).to(task.dtype)
    path = task.path_at(s0)
    lo, hi = config.start_speed_fraction
    speed = task.target_speed_at(s0) * (lo + (hi - lo) * u[:, 2]).to(task.dtype)
    pose = StartPose(x=path.x - lateral * torch.sin(path.heading),
                     y=path.y + lateral * torch.cos(path.heading), z=torch.zeros_like(path.x),
                     yaw=path.heading, speed=speed)  # fmt: skip
    return pose, s0


def run_wave(
    pool: ScenarioPool,
    groups: list[int],
    config: GenerateConfig,
    seed: int,
    wave: int,
    progress: Progress | None = None,
    driver: WaveDriver | None = None,
) -> Wave:
    """Drive one wave of ``config.cars`` cars: task + vehicle-model cars + scripted expert.

    ``driver`` replaces the expert (its task observes in ``driver.obs_mode``).

    Every car drives one episode; :class:`~gym_s3.task.TrackingTask` (with
    :meth:`GenerateConfig.task`'s margins) decides where it ends, exactly as in the envs. Row
    ``k`` is the state after ``k`` control steps with the action the expert chose there; the
    state in which an episode ended is its last row.
    """
    n, steps = config.cars, config.steps
    g = torch.Generator().manual_seed(int(seed) * 1_000_003 + wave)
    variant = _draw_variants(pool, groups, config, n, g, wave)
    rules = config.task() if driver is None else replace(config.task(), obs_mode=driver.obs_mode)
    task = TrackingTask(pool, n, rules, params=SEDAN)
    start, s0 = _starts(task, variant, config, g)
    cars = VehicleModelCars(VehicleModel(SEDAN), n)
    every = ResetRows(torch.ones(n, dtype=torch.bool))
    ego = cars.place(every, start, task.wheel_friction(start.ego()))
    expert = BatchedExpert(n, config.expert, seed=int(seed) * 7919 + wave)
    act = expert.act if driver is None else driver.make(n, task, wave)
    cols = _Columns(steps, n)
    unwrapped = {"yaw": cars.state.yaw.double().clone(), "last": cars.state.yaw}

    def record(k: int, action: Tensor, sample: TrackSample) -> None:
        """Row ``k`` of every car, with the yaw unwrapped across +-pi."""
        st = cars.state
        if k > 0:
            unwrapped["yaw"] = unwrapped["yaw"] + wrap_angle(st.yaw - unwrapped["last"]).double()
            unwrapped["last"] = st.yaw
        _record(cols, k, st, unwrapped["yaw"], action, controls_from_action(action), sample)

    ends = drive(task, cars, act, ego, steps, record=record, progress=progress)
    counts = {} if driver is not None else {
        name: expert.event_count[:, EVENTS.index(name)].numpy()
        for name in config.expert.perturbations.enabled()}  # fmt: skip
    return Wave(cols.data, ends.rows.numpy(), variant, s0, counts, ends.reason.numpy())


def generate_dataset(
    out: str | Path,
    config: GenerateConfig,
    seed: int = 0,
    *,
    preset_name: str = "custom",
    progress: Progress | None = None,
    driver: WaveDriver | None = None,
) -> dict[str, Any]:
    """Generate a dataset into ``out`` (must be empty or new) and write its manifest.

    Args:
        out: output folder.
        config: sizes and drivers.
        seed: the seed; the same seed and config give the same content hash.
        preset_name: recorded in the manifest.
        progress: called with ``(done, total)`` control steps.
        driver: who drives (``None``: the scripted expert); see :class:`WaveDriver`.

    Returns:
        The manifest (also written to ``out/manifest.json``).

    Raises:
        ConfigError: ``out`` holds files already or cannot be written.
    """
    out = claim_folder(out, "s3 data generate")
    began = time.perf_counter()
    with _torch_threads(config.threads):
        paths, groups = build_tracks(config, seed)
        pool = build_pool(paths, config, seed)
        entries: list[dict[str, Any]] = []
        total = config.steps * config.waves
        for wave in range(config.waves):
            done_before = wave * config.steps

            def tick(k: int, _: int, base: int = done_before) -> None:
                """Report progress of the current wave as progress of the whole run."""
                if progress is not None:
                    progress(base + k, total)

            driven = run_wave(pool, groups, config, seed, wave, tick, driver)
            entries += _write_wave(out, pool, paths, config, seed, wave, driven, driver)
    if progress is not None:
        progress(config.steps * config.waves, config.steps * config.waves)
    return write_manifest(
        out, entries, seed=seed, preset=preset_name, simulator=SIMULATOR, source="standin-batched",
        config=config_json(config),
        generation_s=round(time.perf_counter() - began, 3),
        **({"driver": driver.name, "driver_extra": driver.extra} if driver else {}),
    )  # fmt: skip


def _write_wave(
    out: Path, pool: ScenarioPool, paths: list[ReferencePath], config: GenerateConfig, seed: int,
    wave: int, driven: Wave, driver: WaveDriver | None = None,
) -> list[dict[str, Any]]:  # fmt: skip
    """Write one episode file per car of a wave; returns the manifest entries."""
    entries = []
    data, end, variant, s0, counts = (driven.columns, driven.rows, driven.variant,
                                      driven.start_s, driven.events)  # fmt: skip
    vehicle = SEDAN.to_dict()
    expert_json = config.expert.to_json()
    prefix = "gen" if driver is None else driver.session_prefix
    about: dict[str, Any] = (
        {"expert": expert_json} if driver is None else {"driver": driver.name, **driver.extra}
    )
    for car in range(config.cars):
        rows = int(end[car])
        if rows < 2:
            continue
        cols = {name: values[:rows, car] for name, values in data.items()}
        v = int(variant[car])
        path = paths[int(pool.variant_path[v])]
        meta = EpisodeMeta(
            session_id=f"{prefix}{seed}-w{wave:03d}-c{car:05d}",
            episode_id="e0",
            source="standin-batched",
            device="scripted-expert" if driver is None else driver.name,
            track=path.name,
            layout=layout_to_dict(pool.layouts[v]),
            track_labels=path.labels,
            seed=seed,
            vehicle=vehicle,
            labels=episode_labels(cols, path.labels),
            extra={
                "start_s": round(float(s0[car]), 3),
                "end_reason": "time" if rows == config.steps else "terminated",
                "events": {name: int(c[car]) for name, c in counts.items()},
                **about,
            },
        )
        name = episode_file_name(meta) + EPISODE_SUFFIX
        write_episode(out / name, cols, meta)
        entries.append({"path": name, "digest": episode_digest(cols, meta.replace(num_rows=rows)),
                        "rows": rows, "session_id": meta.session_id, "track": path.name,
                        "surface": pool.layouts[v].base})  # fmt: skip
    return entries


def config_json(config: GenerateConfig) -> dict[str, Any]:
    """``config`` as JSON values, as manifests record it."""
    return json.loads(json.dumps(asdict(config), default=str))


def summary_line(manifest: dict[str, Any]) -> str:
    """One line describing a generated dataset."""
    return (
        f"{len(manifest['files'])} episodes, {manifest['samples']} samples "
        f"({manifest['hours']:.2f} h) in {manifest['generation_s']:.1f} s; content hash "
        f"{manifest['content_hash'][:16]}"
    )


__all__ = [
    "PRESETS",
    "GenerateConfig",
    "Wave",
    "WaveDriver",
    "build_pool",
    "build_tracks",
    "config_json",
    "generate_dataset",
    "preset",
    "run_wave",
    "start_arc_length",
    "summary_line",
]
