"""``s3 data generate``: the default dataset, made deterministically from a seed.

The scripted expert (:class:`wheel_collector.expert.BatchedExpert`) drives many cars at once with
the batched reference simulator (:class:`gym_s3.vehicle.VehicleModel`, the physics of the open
stand-in server) over Putnam Park, procedural circuits and town routes, on every surface, with ice
patches and perturbation events. Every car of a *wave* starts on its own variant (track x surface
layout) at a random position and drives until the episode length, leaving the road, spinning,
completing a route or a simulator fault. Each drive is one episode file (source
``"standin-batched"``, its own session); a ``manifest.json`` lists the files with their content
digests and the dataset's content hash.

Ground is flat (``z = 0``), as on the stand-in's levels, so logs from both sources agree.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import Tensor

from gym_s3.data.dataset import (
    INCOMPLETE_NAME,
    MANIFEST_FORMAT,
    MANIFEST_NAME,
    content_hash,
    episode_digest,
)
from gym_s3.data.files import EPISODE_SUFFIX, write_episode
from gym_s3.data.generate_config import PRESETS, GenerateConfig, preset
from gym_s3.data.labelling import episode_labels
from gym_s3.data.recorder import episode_file_name
from gym_s3.data.schema import COLUMNS, SCHEMA_VERSION, EpisodeMeta, layout_to_dict
from gym_s3.data.trackside import TrackSide
from gym_s3.errors import ConfigError
from gym_s3.observations import EgoState
from gym_s3.safe_io import write_text_atomic
from gym_s3.scenarios.pool import ScenarioPool
from gym_s3.spec import CONTROL_DT_S
from gym_s3.tracks.path import ReferencePath, wrap_angle
from gym_s3.tracks.registry import get_track
from gym_s3.tracks.surfaces import (
    LayoutConfig,
    get_surface,
    sample_layout,
)
from gym_s3.vehicle import SEDAN, VehicleModel, VehicleState, controls_from_action

if TYPE_CHECKING:  # pragma: no cover
    pass

__all__ = ["PRESETS", "GenerateConfig", "generate_dataset", "preset", "run_wave", "summary_line"]

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
    """The tracks of a dataset and their group (0 Putnam, 1 procedural, 2 town)."""
    rng = np.random.default_rng([seed, 1])
    proc = rng.choice(10_000, size=config.procedural_tracks, replace=False)
    town = rng.choice(10_000, size=config.town_routes, replace=False)
    names = ["putnam"] + [f"procedural:{s}" for s in proc] + [f"town:{s}" for s in town]
    groups = [0] + [1] * len(proc) + [2] * len(town)
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
            controls: Tensor, smp: Any) -> None:  # fmt: skip
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


def run_wave(
    pool: ScenarioPool,
    groups: list[int],
    config: GenerateConfig,
    seed: int,
    wave: int,
    progress: Progress | None = None,
) -> tuple[dict[str, np.ndarray], np.ndarray, Tensor, Tensor, dict[str, np.ndarray]]:
    """Drive one wave of ``config.cars`` cars.

    Returns:
        ``(columns (T, N) per name, end (N,) rows kept per car, variant (N,), start s (N,),
        event counts per event name (N,))``.
    """
    from wheel_collector.expert import EVENTS, BatchedExpert

    n, steps = config.cars, config.steps
    g = torch.Generator().manual_seed(int(seed) * 1_000_003 + wave)
    variant = _draw_variants(pool, groups, config, n, g, wave)
    track = TrackSide(pool, variant, params=SEDAN)
    closed, length = track.closed, track.length.double()
    u = torch.rand(n, 3, generator=g, dtype=torch.float64)
    s0 = torch.where(closed, u[:, 0] * length, u[:, 0] * (length - 150.0).clamp(min=0.0))
    lateral = (2 * u[:, 1] - 1) * config.start_lateral_m
    x, y, z, heading = track.start_pose(s0, lateral)
    lo, hi = config.start_speed_fraction
    speed = track.target_speed(s0) * (lo + (hi - lo) * u[:, 2]).to(track.dtype)
    model = VehicleModel(SEDAN)
    st = model.initial_state(x, y, heading, speed, torch.zeros_like(x))
    expert = BatchedExpert(n, config.expert, seed=int(seed) * 7919 + wave)
    friction = track.surfaces
    cols = _Columns(steps, n)
    yaw = st.yaw.double().clone()
    alive = torch.ones(n, dtype=torch.bool)
    end = torch.full((n,), steps, dtype=torch.int64)
    for k in range(steps):
        smp = track.measure(st.x, st.y, st.yaw)
        ego = EgoState(st.x, st.y, st.yaw, st.vx, st.vy, st.yaw_rate)
        action = expert.act(ego, smp, track)
        controls = controls_from_action(action)
        _record(cols, k, st, yaw, action, controls, smp)
        off = (smp.d > smp.width_left + config.off_track_margin_m) | (
            -smp.d > smp.width_right + config.off_track_margin_m
        )
        spin = wrap_angle(st.yaw.double() - smp.heading.double()).abs() > config.spin_heading_rad
        done = ~closed & (smp.s >= length.to(smp.s.dtype) - 2.0)
        stop = alive & (off | spin | st.fault | done)
        end = torch.where(stop, torch.full_like(end, k + 1), end)
        alive &= ~stop
        if not bool(alive.any()):
            break
        prev = st.yaw
        st = model.step(st, controls, friction)
        yaw = yaw + wrap_angle(st.yaw - prev).double()
        if progress is not None:
            progress(k + 1, steps)
    counts = {name: expert.event_count[:, i].numpy() for i, name in enumerate(EVENTS)}
    return cols.data, end.numpy(), variant, s0, counts


def generate_dataset(
    out: str | Path,
    config: GenerateConfig,
    seed: int = 0,
    *,
    preset_name: str = "custom",
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Generate a dataset into ``out`` (must be empty or new) and write its manifest.

    Args:
        out: output folder.
        config: sizes and drivers.
        seed: the seed; the same seed and config give the same content hash.
        preset_name: recorded in the manifest.
        progress: called with ``(done, total)`` control steps.

    Returns:
        The manifest (also written to ``out/manifest.json``).

    Raises:
        ConfigError: ``out`` holds files already or cannot be written.
    """
    out = Path(out)
    if out.is_dir() and any(out.iterdir()):
        raise ConfigError(f"{out} is not empty; choose a new folder for the dataset")
    _check_writable(out)
    marker = out / INCOMPLETE_NAME  # removed once the manifest is written: absent = complete
    marker.write_text("s3 data generate is writing this dataset; if it stays, it was interrupted\n")
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

            data, end, variant, s0, counts = run_wave(pool, groups, config, seed, wave, tick)
            entries += _write_wave(out, pool, paths, config, seed, wave, data, end, variant, s0,
                                   counts)  # fmt: skip
    if progress is not None:
        progress(config.steps * config.waves, config.steps * config.waves)
    rows = sum(e["rows"] for e in entries)
    manifest = {
        "format": MANIFEST_FORMAT,
        "schema_version": SCHEMA_VERSION,
        "content_hash": content_hash((e["path"], e["digest"]) for e in entries),
        "seed": seed,
        "preset": preset_name,
        "config": json.loads(json.dumps(asdict(config), default=str)),
        "samples": rows,
        "hours": rows * CONTROL_DT_S / 3600.0,
        "generation_s": round(time.perf_counter() - began, 3),
        "files": entries,
    }
    write_text_atomic(out / MANIFEST_NAME, json.dumps(manifest, indent=1, sort_keys=True))
    marker.unlink()
    return manifest


def _check_writable(out: Path) -> None:
    """Create ``out`` and write a probe file in it, before any driving is simulated.

    Raises:
        ConfigError: the folder cannot be created or written (names the folder and the fix).
    """
    probe = out / f".write-probe-{os.getpid()}"
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise ConfigError(
            f"cannot write the dataset to {out} ({exc}); choose a writable output folder (--out)"
        ) from exc


def _write_wave(
    out: Path, pool: ScenarioPool, paths: list[ReferencePath], config: GenerateConfig, seed: int,
    wave: int, data: dict[str, np.ndarray], end: np.ndarray, variant: Tensor, s0: Tensor,
    counts: dict[str, np.ndarray],
) -> list[dict[str, Any]]:  # fmt: skip
    """Write one episode file per car of a wave; returns the manifest entries."""
    entries = []
    vehicle = SEDAN.to_dict()
    expert_json = json.loads(json.dumps(asdict(config.expert), default=str))
    for car in range(config.cars):
        rows = int(end[car])
        if rows < 2:
            continue
        cols = {name: values[:rows, car] for name, values in data.items()}
        v = int(variant[car])
        path = paths[int(pool.variant_path[v])]
        meta = EpisodeMeta(
            session_id=f"gen{seed}-w{wave:03d}-c{car:05d}",
            episode_id="e0",
            source="standin-batched",
            device="scripted-expert",
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
                "expert": expert_json,
            },
        )
        name = episode_file_name(meta) + EPISODE_SUFFIX
        write_episode(out / name, cols, meta)
        entries.append({"path": name, "digest": episode_digest(cols, meta.replace(num_rows=rows)),
                        "rows": rows, "session_id": meta.session_id, "track": path.name,
                        "surface": pool.layouts[v].base})  # fmt: skip
    return entries


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
    "build_pool",
    "build_tracks",
    "generate_dataset",
    "preset",
    "run_wave",
    "summary_line",
]
