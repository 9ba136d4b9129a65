"""Policy rollouts through the simulator link: ``s3 rollouts --simulator standin|beamng``.

The same rollouts as the batched path of :mod:`policies.rollouts`, driven one car at a time in
``S3BeamNG-v0`` through the real ``beamngpy`` client: the open stand-in server over TCP
(``standin``) or BeamNG.tech (``beamng``). Every episode is the episode loop with one car: the
env's tracking task + its simulator link + the policy with exploration noise + the crash-safe
:class:`~gym_s3.data.recorder.EpisodeRecorder` (the recorder of ``s3 collect``), so the files
have the same columns, labels, ``end_reason`` and manifest as ``s3 data generate``'s.

Episodes: for every variant of the data preset (track x surface x patch layout, drawn by
:func:`gym_s3.data.generate.build_pool` exactly as the batched path draws them) and every noise
seed, one episode. The car starts at an arc length drawn per variant (anywhere on a circuit, at
least 150 m before the end of a route); its lateral offset and speed are the task's start noise
(``start_lateral_m``, ``start_speed_fraction`` of the preset), drawn per episode. The env's
``terminated``/``truncated`` end it (off the road, spin-out, stalled, fault, end of a route, or
``episode_s``); its ``end_reason`` is the task's (:data:`gym_s3.task.END_REASONS`).

Rows: row ``k`` is the state measured after ``k`` steps with the action chosen there (applied
from ``t_k`` to ``t_{k+1}``); the state in which the episode ended is its last row, with the
action the driver chose there (not sent), as in :func:`gym_s3.loop.drive`. Noise: the rule of
:class:`~policies.noise.NoisyPolicyDriver`, one generator per episode seeded by
:func:`episode_seed` (``seed``, noise seed, variant), which also seeds the env's reset.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from gym_s3.data.generate import (
    GenerateConfig,
    build_pool,
    build_tracks,
    config_json,
    start_arc_length,
)
from gym_s3.data.link_rows import link_row, unwrap_yaw
from gym_s3.data.manifest import claim_folder, file_entry, release_folder, write_manifest
from gym_s3.data.recorder import EpisodeRecorder
from gym_s3.data.schema import EpisodeMeta, layout_to_dict
from gym_s3.errors import ConfigError
from gym_s3.spec import CONTROL_DT_S
from gym_s3.task import END_REASONS, TaskConfig
from gym_s3.task_types import end_reason_codes
from gym_s3.vehicle import SEDAN
from policies.checkpoint import Policy
from policies.noise import NoisyPolicyDriver

__all__ = ["drive_in_simulator", "episode_seed", "rollout_task"]

#: Progress callback: ``(episodes done, episodes total, entry of the last episode)``.
EpisodeProgress = Callable[[int, int, dict[str, Any]], None]


def episode_seed(seed: int, noise_seed: int, variant: int) -> int:
    """The seed of one episode's action noise and start noise (a 63-bit int)."""
    state = np.random.SeedSequence([int(seed), int(noise_seed), int(variant)]).generate_state(2)
    return int((int(state[0]) << 31) ^ int(state[1]))


def rollout_task(config: GenerateConfig, obs_mode: str) -> TaskConfig:
    """The episode rules: the preset's (:meth:`GenerateConfig.task`) with its start noise.

    The car starts on the path's heading, ``U(-start_lateral_m, start_lateral_m)`` to its left,
    at ``U(start_speed_fraction)`` of the target speed.
    """
    return replace(config.task(), obs_mode=obs_mode, start_lateral_m=config.start_lateral_m,
                   start_speed_fraction=config.start_speed_fraction,
                   start_heading_rad=0.0)  # fmt: skip


def drive_in_simulator(
    name: str,
    policy: Policy,
    out: str | Path,
    config: GenerateConfig,
    *,
    sigma: float,
    noise_seeds: Sequence[int],
    seed: int,
    standin: bool,
    fast: bool = False,
    sim_options: dict[str, Any] | None = None,
    preset_name: str = "custom",
    progress: EpisodeProgress | None = None,
) -> dict[str, Any]:
    """Drive ``policy`` with action noise in ``S3BeamNG-v0``, one episode after another.

    Args:
        name: driver tag (``policy:<name>`` in the logs).
        policy: the policy (its observation mode configures the env).
        out: output folder (new or empty).
        config: tracks, surfaces, patch layouts, ``episode_s`` and start noise (``cars`` and
            ``waves`` do not apply: one car drives every episode).
        sigma: action noise (std, actions in ``[-1, 1]``).
        noise_seeds: one episode per variant and noise seed.
        seed: seed of tracks, layouts and starts.
        standin: start the open stand-in here (``True``) or drive BeamNG.tech (``sim_options``).
        fast: compiled float32 stand-in physics (see :func:`policies.evaluate.simulator`).
        sim_options: BeamNG.tech connection (``host``, ``port``, ``home``, ``launch``,
            ``level``, ``vehicle_model``, ``socket_timeout``).
        preset_name: recorded in the manifest.
        progress: called after every episode.

    Returns:
        The manifest (also ``out/manifest.json``): ``simulator`` and ``source`` name where the
        logs come from; ``drive_s`` is the wall-clock time of the episode loops [s] (without
        connecting and loading scenarios) and ``steps_per_s`` the control steps per second of it.
    """
    import gymnasium as gym

    import gym_s3  # noqa: F401  (registers the ids)
    from gym_s3.envs.beamng import BeamNGEnvConfig
    from policies.evaluate import simulator

    if not noise_seeds:
        raise ConfigError("give at least one noise seed (--seeds)")
    out = claim_folder(out, "s3 rollouts")
    paths, _ = build_tracks(config, seed)
    pool = build_pool(paths, config, seed)
    env_config = BeamNGEnvConfig(task=rollout_task(config, policy.obs_mode), pool=config.pool)
    u = torch.rand(pool.num_variants, generator=torch.Generator().manual_seed(int(seed)),
                   dtype=torch.float64)  # fmt: skip
    about = {"driver": f"policy:{name}", "action_noise": float(sigma),
             "policy_checkpoint": str(policy.path), "policy_backend": policy.backend}  # fmt: skip
    entries: list[dict[str, Any]] = []
    total = pool.num_variants * len(noise_seeds)
    began = time.perf_counter()
    try:
        with simulator(standin, fast, **(sim_options or {})) as (_, connect):
            for v in range(pool.num_variants):
                path = paths[int(pool.variant_path[v])]
                closed = torch.tensor([path.closed])
                s0 = float(start_arc_length(u[v : v + 1], torch.tensor([path.length]), closed)[0])
                env = gym.make("S3BeamNG-v0", config=env_config, reference=path,
                               layout=pool.layouts[v], start_s=s0, **connect)  # fmt: skip
                try:
                    for noise_seed in noise_seeds:
                        ep_seed = episode_seed(seed, noise_seed, v)
                        extra = {**about, "noise_seed": int(noise_seed), "episode_seed": ep_seed,
                                 "start_s": round(s0, 3), "variant": v}  # fmt: skip
                        driver = NoisyPolicyDriver(policy, sigma, ep_seed)
                        session = f"pol-{name}-{seed}-n{noise_seed}-v{v:04d}"
                        entries.append(record_episode(env, driver, out, extra, seed, session))
                        if progress is not None:
                            progress(len(entries), total, entries[-1])
                finally:
                    env.close()
    except BaseException:
        if not entries:  # nothing written (e.g. no simulator answered): leave no partial folder
            release_folder(out)
        raise
    wall = time.perf_counter() - began
    sources = {e.pop("source"): e.pop("simulator") for e in entries}
    driving = sum(e.pop("drive_s") for e in entries)
    steps = sum(e["rows"] - 1 for e in entries)  # the last row of an episode is not stepped
    settings = {
        k: v for k, v in config_json(config).items() if k not in ("expert", "cars", "waves")
    }
    return write_manifest(
        out, entries, seed=seed, preset=preset_name, generation_s=round(wall, 3),
        config=settings,
        driver=f"policy:{name}", driver_extra={**about, "noise_seeds": list(map(int, noise_seeds))},
        simulator=", ".join(sorted(set(sources.values()))), source=", ".join(sorted(sources)),
        drive_s=round(driving, 3), steps_per_s=round(steps / driving, 2) if driving > 0 else None,
    )  # fmt: skip


def end_reason(info: dict[str, Any], truncated: bool) -> str:
    """The task's name (:data:`~gym_s3.task.END_REASONS`) for why a one-car episode ended."""
    flags = {k: torch.tensor([bool(info.get(k, False))]) for k in
             ("non_finite", "off_track", "spin_out", "stalled", "completed")}  # fmt: skip
    code = int(end_reason_codes(flags, torch.tensor([bool(truncated)]))[0])
    return END_REASONS[code - 1] if code else "running"


def record_episode(
    env: Any, driver: Any, out: Path, extra: dict[str, Any], seed: int, session: str
) -> dict[str, Any]:
    """Drive and record one episode of a ``S3BeamNG-v0`` env; returns its manifest entry.

    Args:
        env: the env (made by ``gym.make``), reset here with ``extra["episode_seed"]``.
        driver: :class:`~policies.noise.NoisyPolicyDriver` of the episode.
        out: folder of the episode file.
        extra: metadata details of the episode (``end_reason``, ``simulator`` and ``env`` are
            added).
        seed: dataset seed (recorded).
        session: session id of the episode (its own session, so splits keep it whole).

    Returns:
        :func:`~gym_s3.data.manifest.file_entry` of the file with its ``end_reason``, plus
        ``source``, ``simulator`` and ``drive_s`` (wall-clock time of the loop [s]).
    """
    obs, _ = env.reset(seed=extra["episode_seed"])
    base = env.unwrapped
    link, path = base.link, base.reference
    meta = EpisodeMeta(
        session_id=session, episode_id="e0", source=link.source, device=extra["driver"],
        track=path.name, layout=layout_to_dict(base.layout), track_labels=path.labels,
        seed=seed, vehicle=SEDAN.to_dict() if link.is_standin else {},
        extra={**extra, "simulator": link.simulator, "env": base.label},
    )  # fmt: skip
    recorder = EpisodeRecorder(out, meta, flush_rows=200, flush_s=5.0)
    m = base.measurement
    yaw, k, done, info, truncated = m.yaw, 0, False, {}, False
    began = time.perf_counter()
    try:
        while True:
            action = driver.noisy(torch.as_tensor(obs, dtype=torch.float32)[None])[0].numpy()
            sample = base.task.measure(m.ego())
            recorder.append(link_row(m, sample, t=k * CONTROL_DT_S, yaw=yaw,
                                     steer=float(action[0]), accel=float(action[1])))  # fmt: skip
            if done:
                break
            obs, _, terminated, truncated, info = env.step(action)
            k += 1
            new = base.measurement
            yaw, m = unwrap_yaw(yaw, m.yaw, new.yaw), new
            done = terminated or truncated
    except BaseException:
        recorder.abort()
        raise
    drive_s = time.perf_counter() - began
    reason = end_reason(info, truncated)
    file = recorder.finish(end_reason=reason)
    assert file is not None  # row 0 is always recorded
    return {**file_entry(file), "end_reason": reason, "source": link.source,
            "simulator": link.simulator, "drive_s": drive_s}  # fmt: skip
