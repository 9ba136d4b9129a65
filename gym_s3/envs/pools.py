"""Build (and cache in-process) the scenario pool of a :class:`~gym_s3.envs.config.ScenarioConfig`.

Building a pool computes a friction-aware speed profile for every (track, layout) pair, which
costs about a second per track; environments with the same scenario config share one pool per
device and dtype. The label filter is applied on top of the cached unfiltered pool.
"""

from __future__ import annotations

import threading
import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from gym_s3.envs.config import ScenarioConfig
from gym_s3.errors import ConfigError
from gym_s3.scenarios.pool import ScenarioPool
from gym_s3.tracks.layouts import sample_layout
from gym_s3.tracks.path import ReferencePath
from gym_s3.tracks.registry import cached_track, clear_track_cache
from gym_s3.tracks.surfaces import SurfaceLayout


@dataclass(frozen=True, eq=False)
class ScenarioSource:
    """A pool together with the paths it was built from (for rendering and evaluation).

    Attributes:
        pool: the (label-filtered) scenario pool on the env device.
        paths: the K reference paths, index = path id in ``pool.bank``.
    """

    pool: ScenarioPool
    paths: tuple[ReferencePath, ...]


_LOCK = threading.Lock()
_POOLS: dict[tuple[ScenarioConfig, str, torch.dtype], ScenarioSource] = {}


#: The per-process track cache (kept under its old name for callers of this module).


def draw_layouts(path: ReferencePath, config: ScenarioConfig) -> list[SurfaceLayout]:
    """The layouts of ``path``: the explicit ``config.layouts``, else ``layouts_per_track`` draws.

    Draws are seeded by ``layout_seed`` and the track name.
    """
    if config.layouts:
        return list(config.layouts)
    rng = np.random.default_rng([config.layout_seed, zlib.crc32(path.name.encode())])
    return [sample_layout(path, config.layout, rng) for _ in range(config.layouts_per_track)]


def scenario_source(
    config: ScenarioConfig, device: torch.device | str = "cpu", dtype: torch.dtype = torch.float32
) -> ScenarioSource:
    """The scenario pool of ``config`` on ``device`` (built once per process, then cached).

    Raises:
        ConfigError: for unknown tracks or labels, or when no scenario matches the label filter
            (the message lists how many scenarios carry each label).
    """
    key = (config.source_key(), str(torch.device(device)), dtype)
    with _LOCK:
        cached = _POOLS.get(key)
    if cached is None:
        paths = [cached_track(name) for name in config.tracks]
        layouts = [draw_layouts(p, config) for p in paths]
        speeds: list = [None] * len(paths)
        for source in config.logs:
            from gym_s3.scenarios.expert import expert_trajectories

            for traj in expert_trajectories(source, max_episodes=config.max_log_episodes):
                paths.append(traj.path)
                layouts.append([traj.layout])
                speeds.append(traj.speed)
        names = [p.name for p in paths]
        if len(set(names)) != len(names):
            raise ConfigError(f"tracks and logged episodes must be distinct, got {names}")
        starts = [list(config.starts)] * len(paths) if config.starts else None
        for path in (p for p in paths if not p.closed):
            beyond = [x for x in config.starts if x >= path.length]
            if beyond:
                raise ConfigError(
                    f"starts {beyond} lie beyond the end of the open path '{path.name}' "
                    f"({path.length:.0f} m long); give starts inside every path"
                )
        pool = ScenarioPool.build(
            paths, layouts, config.pool, starts=starts, device=device, dtype=dtype, speeds=speeds
        )
        paths = tuple(paths)
        cached = ScenarioSource(pool=pool, paths=paths)
        with _LOCK:
            _POOLS[key] = cached
    if not config.labels:
        return cached
    return ScenarioSource(cached.pool.filter(config.labels, match=config.match), cached.paths)


def scenario_placement(source: ScenarioSource, index: int) -> dict[str, Any]:
    """Where scenario ``index`` of ``source`` drives, as ``S3BeamNG-v0`` options.

    ``reference``, ``layout``, ``start_s`` and ``target_speed`` (the pool's, so an expert
    trajectory keeps the driven speed).

    A pool scenario of ``S3Distilled-v0`` is so driven in the high-fidelity simulator:
    ``gym.make("S3BeamNG-v0", **scenario_placement(src, k))``.

    Raises:
        ConfigError: ``index`` outside ``[0, S)``.
    """
    pool = source.pool
    if not 0 <= index < pool.num_scenarios:
        raise ConfigError(
            f"scenario index {index} is outside the pool's {pool.num_scenarios} scenarios"
        )
    v = int(pool.scenario_variant[index])
    path = source.paths[int(pool.variant_path[v])]
    return {
        "reference": path,
        "layout": pool.layouts[v],
        "start_s": float(pool.scenario_start[index]),
        "target_speed": tuple(pool.speed[v, : path.num_samples].double().cpu().tolist()),
    }


def clear_cache() -> None:
    """Forget every cached track and pool (frees their memory)."""
    clear_track_cache()
    with _LOCK:
        _POOLS.clear()
