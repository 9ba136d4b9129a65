"""Evaluate policies in ``S3Distilled-v0``: the Putnam Park laps of ``S3BeamNG-v0`` and label sets.

* :func:`evaluate_distilled_laps` drives exactly the laps of
  :func:`policies.evaluate.evaluate_beamng` (same track, surface layouts with the same ice-patch
  placement, standing start, lap task) in the distilled env of any backend, so the two tables
  compare the distilled and the high-fidelity simulator directly. On the CPU without frames it
  drives them as one batch, every lap and driver one car (the env's core operations on
  :class:`~gym_s3.sources.BackendCars`, :func:`policies.evaluate_model.run_lap_batch`: the same
  laps to float32 rounding); with frames (GIFs) or on another device, one lap after another in
  the env itself.
* :func:`evaluate_distilled` runs one episode per car in a batch and averages the metrics;
  :func:`evaluate_labels` does that for the scenario pool filtered by each label (hard braking,
  intersections, ...).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from gym_s3.errors import ConfigError
from policies.checkpoint import Policy
from policies.evaluate import (
    FAILURES,
    METRICS,
    RunResult,
    drive_laps,
    lap_drivers,
    print_run,
)
from policies.evaluate_labels import label_summary


def evaluate_distilled_laps(
    policy: Policy | None,
    *,
    backend: str | None = None,
    checkpoint: str | None = None,
    surfaces: Sequence[str] = ("asphalt", "asphalt_wet", "gravel", "snow", "ice"),
    ice_patches: Sequence[int] = (0, 4),
    track: str = "putnam",
    seed: int = 0,
    render_every: int = 0,
    max_steps: int | None = None,
    progress: bool = True,
    device: str = "cpu",
    time_limit_s: float | None = None,
    expert: bool = True,
) -> list[RunResult]:
    """Laps of ``track`` in ``S3Distilled-v0`` for every surface × ice-patch count.

    With ``expert``, the scripted expert drives every lap in the same distilled env too (its row
    comes first; policy rows carry ``vs_expert``). Without ``render_every`` on the CPU every lap
    and driver is one car of one batch; otherwise one lap after another in the env.

    Args:
        policy: the policy (its ``obs_mode`` configures the env); ``None``: the scripted expert
            alone (``expert`` and ``backend`` required).
        backend: dynamics backend to drive in (default: the one the policy was trained in).
        checkpoint: dynamics checkpoint (default: the shipped one of ``backend``).
        surfaces: base surfaces to test.
        ice_patches: numbers of ice patches (0 = none) to test on each surface.
        track: reference track.
        seed: seed of the episode and of the patch placement (as in ``evaluate_beamng``).
        render_every: keep a frame every this many steps for GIFs (0: none).
        max_steps: cap on the steps of each run.
        progress: print one line per finished run.
        device: torch device of the env.
        time_limit_s: lap time limit [s] (default: twice the reference lap time of the layout).
        expert: also drive every lap with the scripted expert.
    """
    from gym_s3.tracks.lap_layouts import lap_layout
    from gym_s3.tracks.registry import cached_track

    if policy is None and not (expert and backend):
        raise ConfigError(
            "policy=None drives the scripted expert alone: pass expert=True and backend=<name> "
            "(the expert has no dynamics backend of its own)"
        )
    backend = backend or policy.backend
    if not render_every and str(device) == "cpu":
        return _batched_laps(policy, backend=backend, checkpoint=checkpoint, surfaces=surfaces,
                             ice_patches=ice_patches, track=track, seed=seed,
                             max_steps=max_steps, progress=progress, time_limit_s=time_limit_s,
                             expert=expert)  # fmt: skip
    reference = cached_track(track)

    layouts: dict[tuple[str, int], Any] = {}  # kept for the plots

    def make_env(surface: str, patches: int, obs_mode: str) -> Any:
        layout = layouts[surface, patches] = lap_layout(reference, surface, patches, seed)
        return distilled_lap_env(track, layout, backend=backend, obs_mode=obs_mode, seed=seed,
                                 checkpoint=checkpoint, device=device, time_limit_s=time_limit_s,
                                 render=bool(render_every))  # fmt: skip

    results = drive_laps(make_env, lap_drivers(policy, expert, seed), f"S3Distilled-v0/{backend}",
                         surfaces=surfaces, ice_patches=ice_patches, track=track, seed=seed,
                         render_every=render_every, max_steps=max_steps,
                         progress=progress)  # fmt: skip
    for res in results:  # for the plots (the distilled env keeps its paths in its pool)
        res.reference = reference
        res.layout = layouts[res.condition["surface"], res.condition["ice_patches"]]
    return results


def lap_backend(backend: str, checkpoint: str | None = None) -> tuple[str, Any]:
    """``(name, DynamicsBackend)`` of the laps: ``checkpoint``, else the shipped one of ``backend``.

    Loaded as ``S3Distilled-v0`` loads it (:func:`gym_s3.envs.backends.resolve_backend`, CPU,
    float32).
    """
    from gym_s3.envs.backends import resolve_backend
    from gym_s3.envs.config import DistilledConfig

    return backend, resolve_backend(DistilledConfig(backend=backend, checkpoint=checkpoint))


def _batched_laps(policy: Policy | None, *, backend: str, checkpoint: str | None,
                  surfaces: Sequence[str], ice_patches: Sequence[int], track: str, **options: Any
                  ) -> list[RunResult]:  # fmt: skip
    """The laps of :func:`evaluate_distilled_laps` as one batch (every lap and driver one car)."""
    from policies.evaluate_model import evaluate_model, lap_grid

    named = [] if policy is None else [(getattr(policy, "name", "policy"), policy)]
    return evaluate_model(named, lap_grid([track], surfaces, ice_patches),
                          dynamics=lap_backend(backend, checkpoint), **options)  # fmt: skip


def distilled_lap_env(
    track: str,
    layout: Any,
    *,
    backend: str,
    obs_mode: str,
    seed: int = 0,
    checkpoint: str | None = None,
    device: str = "cpu",
    time_limit_s: float | None = None,
    render: bool = False,
) -> Any:
    """One lap of ``track`` in ``S3Distilled-v0``: standing start at the line's start, ``layout``.

    The single-car env of :func:`evaluate_distilled_laps` (lap task of ``S3BeamNG-v0``: time limit
    twice the reference lap unless ``time_limit_s`` [s], stall rule); ``layout`` is a
    :class:`~gym_s3.tracks.surfaces.SurfaceLayout` (e.g. from
    :func:`~gym_s3.tracks.lap_layouts.lap_layout`).
    """
    import gymnasium as gym

    import gym_s3  # noqa: F401  (registers the ids)
    from gym_s3.task import lap_task

    return gym.make("S3Distilled-v0", backend=backend, checkpoint=checkpoint, device=device,
                    tracks=(track,), layouts=(layout,), starts=(0.0,),
                    task=lap_task(time_limit_s, obs_mode=obs_mode), seed=seed,
                    render_mode="rgb_array" if render else None,
                    disable_env_checker=True)  # fmt: skip


def evaluate_labels(
    policy: Policy,
    labels: Sequence[str],
    *,
    backend: str | None = None,
    checkpoint: str | None = None,
    num_envs: int = 256,
    seed: int = 0,
    progress: bool = True,
    device: str = "cpu",
    **env_kwargs: Any,
) -> list[RunResult]:
    """``num_envs`` episodes of the scenario pool filtered by each label, in ``S3Distilled-v0``.

    Each result holds the mean metrics of its label's episodes (``completion`` is the mean
    completed share of the route); ``terminated_by`` gives the completed and failed shares.

    Args:
        policy: the policy (its ``obs_mode`` configures the env).
        labels: scenario labels (:data:`gym_s3.scenarios.LABELS`); unknown ones raise
            :class:`~gym_s3.errors.ConfigError` with the valid list.
        backend: dynamics backend (default: the one the policy was trained in).
        checkpoint: dynamics checkpoint (default: the shipped one of ``backend``).
        num_envs: episodes per label (one per car, run as one batch).
        seed: env seed (scenario draws and start noise).
        progress: print one line per label.
        device: torch device of the env.
        **env_kwargs: further ``S3Distilled-v0`` arguments (``tracks``, ``layout``, ...).
    """
    from gym_s3.scenarios import label_mask

    label_mask(labels)  # fail before any env is built
    backend = backend or policy.backend
    name = f"S3Distilled-v0/{backend}"
    results = []
    for label in labels:
        t0 = time.perf_counter()
        out = evaluate_distilled(policy.act, num_envs=num_envs, seed=seed, backend=backend,
                                 checkpoint=checkpoint, device=device, obs_mode=policy.obs_mode,
                                 scenarios=(label,), **env_kwargs)  # fmt: skip
        res = label_summary(name, label, out, completed=out["completed_rate"],
                            failed=out["failure_rate"], episodes=num_envs,
                            wall_s=time.perf_counter() - t0)  # fmt: skip
        results.append(res)
        if progress:
            print_run(res)
    return results


def evaluate_distilled(
    act: Any,
    *,
    num_envs: int = 64,
    seed: int = 0,
    **env_kwargs: Any,
) -> dict[str, float]:
    """One episode per car in the batched ``S3Distilled-v0``; mean episode metrics.

    Args:
        act: ``callable(obs (N, F) tensor) -> action (N, 2) tensor`` (e.g. ``ActorNet.act`` or
            ``Policy.act``), used deterministically.
        num_envs: cars (= episodes).
        seed: env seed (fixes scenarios and start noise).
        **env_kwargs: ``S3Distilled-v0`` arguments (backend, tracks, obs_mode, scenarios, ...).

    Returns:
        mean of every :data:`METRICS` entry over the episodes, plus ``failure_rate`` (share of
        episodes ended by leaving the road, spinning out or a non-finite state) and
        ``completed_rate``.
    """
    import gymnasium as gym
    import torch

    import gym_s3  # noqa: F401  (registers the ids)

    env = gym.make("S3Distilled-v0", num_envs=num_envs, seed=seed, autoreset_mode="same_step",
                   **env_kwargs)  # fmt: skip
    try:
        obs, _ = env.reset(seed=seed)
        max_steps = env.unwrapped.config.task.max_episode_steps
        recorded = torch.zeros(num_envs, dtype=torch.bool)
        sums = {k: torch.zeros(num_envs) for k in METRICS}
        failed = torch.zeros(num_envs, dtype=torch.bool)
        completed = torch.zeros(num_envs, dtype=torch.bool)
        with torch.no_grad():
            for _ in range(max_steps + 1):
                obs, _, terminated, truncated, info = env.step(act(obs))
                new = (terminated | truncated).cpu() & ~recorded
                for k in METRICS:
                    sums[k] = torch.where(new, info[f"episode/{k}"].float().cpu(), sums[k])
                bad = torch.stack([info[k] for k in FAILURES]).any(0).cpu()
                failed |= new & bad
                completed |= new & info["completed"].cpu()
                recorded |= new
                if bool(recorded.all()):
                    break
    finally:
        env.close()
    out = {k: float(v.mean()) for k, v in sums.items()}
    out["failure_rate"] = float(failed.float().mean())
    out["completed_rate"] = float(completed.float().mean())
    return out
