"""Evaluate policies: laps in ``S3BeamNG-v0``, one after another through the simulator link.

The same laps run as one batch of cars of the stand-in's vehicle model in
:mod:`policies.evaluate_model` (``s3 evaluate --simulator model``), and in ``S3Distilled-v0`` in
:mod:`policies.evaluate_distilled`; label sets in ``S3BeamNG-v0`` are
:mod:`policies.evaluate_labels`. The command line is :mod:`policies.evaluate_cli`.

Every run reports the same metrics (:mod:`gym_s3.metrics`, via the task's ``episode/*`` infos):
cross-track error (mean, max), heading error, speed-tracking error, action smoothness, completion
and off-track steps, plus the recorded trajectory for plots and GIF frames when asked.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from gym_s3.envs.actions import sanitize_action
from gym_s3.errors import ConfigError
from gym_s3.progress import progress_bar
from policies.checkpoint import Policy

#: Metrics reported per run, with units (keys of the task's ``episode/*`` infos).
METRICS: dict[str, str] = {
    "cte_mean": "m",
    "cte_max": "m",
    "heading_error_mean": "rad",
    "speed_error_mean": "m/s",
    "action_smoothness": "1",
    "completion": "1",
    "off_track_steps": "steps",
    "steps": "steps",
    "corner_offset_mean": "m",
}


def describe_condition(condition: dict[str, Any]) -> str:
    """Short description of a run condition, e.g. ``asphalt +4 ice`` or ``hard_braking ×256``."""
    c = condition
    if "label" in c:
        return f"{c['label']} ×{c.get('episodes', '?')}"
    text = str(c.get("surface", "run"))
    if c.get("ice_patches"):
        text += f" +{c['ice_patches']} ice"
    if c.get("track", "putnam") != "putnam":
        text = f"{c['track']}: {text}"
    if "seed" in c:
        text += f" (seed {c['seed']})"
    return text


@dataclass
class RunResult:
    """One evaluation episode.

    Attributes:
        env: ``"S3BeamNG-v0"`` or ``"S3Distilled-v0/<backend>"``.
        condition: what was varied, e.g. ``{"surface": "ice", "ice_patches": 4}``.
        metrics: :data:`METRICS` of the episode.
        terminated_by: ``"completed"``, ``"off_track"``, ``"spin_out"``, ``"non_finite"``,
            ``"stalled"`` (stood still too long), ``"time_limit"``, or ``"running"`` (stopped by
            ``max_steps``).
        trajectory: ``(T, 2)`` car positions [m].
        cte: ``(T,)`` signed cross-track error along the run [m].
        s: ``(T,)`` arc length along the reference [m].
        speed: ``(T,)`` speed [m/s]; ``target``: ``(T,)`` target speed [m/s].
        actions: ``(T, 2)`` the actions the car was given, ``[steer, accel]`` clipped to
            ``[-1, 1]``, non-finite entries as the 0 the env applies (steer + = right; accel
            + = throttle, - = brake) [1]; ``(0, 2)`` for rows that summarise many episodes
            (label sets).
        frames: rendered frames (only when asked).
        wall_s: wall-clock time of the run [s].
        reference: the reference path driven (for plots).
        layout: the surface layout of the run (for plots).
        driver: who drove: ``"policy"`` or ``"expert"`` (the scripted expert's reference row).
        vs_expert: the policy's ratio to the expert on the same lap (:data:`EXPERT_RATIOS`;
            ``None`` where undefined, e.g. a lap time when either lap did not complete).
    """

    env: str
    condition: dict[str, Any]
    metrics: dict[str, float]
    terminated_by: str
    trajectory: np.ndarray
    cte: np.ndarray
    s: np.ndarray
    speed: np.ndarray
    target: np.ndarray
    actions: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))
    frames: list[np.ndarray] = field(default_factory=list)
    wall_s: float = 0.0
    reference: Any = None
    layout: Any = None
    driver: str = "policy"
    vs_expert: dict[str, float | None] = field(default_factory=dict)

    def describe(self) -> str:
        """Short description of the condition (see :func:`describe_condition`)."""
        return describe_condition(self.condition)

    def to_json(self) -> dict[str, Any]:
        """JSON-friendly summary (no arrays)."""
        return {"env": self.env, "driver": self.driver, "condition": self.condition,
                "metrics": self.metrics, "terminated_by": self.terminated_by,
                "vs_expert": self.vs_expert, "wall_s": self.wall_s}  # fmt: skip


#: How an episode can fail (the ``info`` flags of the task), as opposed to completing or timing out.
FAILURES: tuple[str, ...] = ("off_track", "spin_out", "non_finite", "stalled")

#: Metrics a policy's lap is compared on with the expert's (``vs_expert``): policy / expert.
#: ``lap_time`` is the ratio of the steps, defined only when both laps completed.
EXPERT_RATIOS: tuple[str, ...] = ("cte_mean", "cte_max", "lap_time")


def run_end(info: dict[str, Any], truncated: bool) -> str:
    """``RunResult.terminated_by`` from the last step's ``info`` flags and ``truncated``."""
    for key in ("completed", *FAILURES):
        if bool(info.get(key, False)):
            return key
    return "time_limit" if truncated else "running"


def print_run(result: RunResult) -> None:
    """One progress line of a finished run."""
    m = result.metrics
    print(f"  {result.env} {result.driver} {result.describe()}: {result.terminated_by:10s} "
          f"completion={m['completion']:.2f} "
          f"cte={m['cte_mean']:.2f} m ({result.wall_s:.0f} s)")  # fmt: skip


def run_episode(
    env: Any,
    policy: Policy,
    *,
    env_name: str,
    condition: dict[str, Any],
    seed: int = 0,
    render_every: int = 0,
    max_steps: int | None = None,
    progress: bool = False,
) -> RunResult:
    """Drive one episode of a single-car env with the deterministic policy (or another driver).

    Args:
        env: a single-car env (``S3BeamNG-v0`` or the ``num_envs=1`` face of ``S3Distilled-v0``).
        policy: the driver: ``act((1, F) obs) -> (1, 2) action`` and ``obs_mode``; a driver with
            a ``start(env)`` method (the scripted expert, :mod:`policies.expert_driver`) is
            handed the env after the reset.
        env_name: label for the report.
        condition: what this run varies (for the report).
        seed: reset seed.
        render_every: keep an ``rgb_array`` frame every this many steps (0: none).
        max_steps: stop early after this many steps.
        progress: show a progress bar of the lap's steps while it runs (removed at the end).
    """
    t0 = time.perf_counter()
    obs, _ = env.reset(seed=seed)
    # S3BeamNG-v0 names the simulator from the server's greeting (stand-in or BeamNG.tech)
    env_name = getattr(env.unwrapped, "label", env_name)
    start = getattr(policy, "start", None)
    if start is not None:
        start(env)
    traj, cte, s, speed, target, actions, frames = [], [], [], [], [], [], []
    info: dict[str, Any] = {}
    truncated = False
    step = 0
    total = _step_cap(env, max_steps)
    what = describe_condition(condition)
    bar = progress_bar(enabled=progress, transient=True)
    lap = bar.add_task(f"{env_name} {what}", total=total)
    bar.start()
    while True:
        action = policy.act(np.asarray(obs, dtype=np.float32)[None])[0]
        obs, _, terminated, truncated, info = env.step(action)
        given, _ = sanitize_action(torch.as_tensor(action, dtype=torch.float64).reshape(1, 2))
        actions.append(given[0].numpy())  # as the env applies it: clipped, non-finite -> 0
        step += 1
        bar.update(lap, advance=1)
        traj.append((float(info["x"]), float(info["y"])))
        cte.append(float(info["cross_track_error"]))
        s.append(float(info["s"]))
        speed.append(float(obs[0]))
        target.append(float(info["target_speed"]))
        if render_every and step % render_every == 0:
            frame = env.render()
            if frame is not None:
                frames.append(frame)
        if terminated or truncated or (max_steps is not None and step >= max_steps):
            break
    bar.stop()
    metrics = {k: float(info[f"episode/{k}"]) for k in METRICS}
    return RunResult(
        env=env_name,
        condition=condition,
        metrics=metrics,
        terminated_by=run_end(info, truncated),
        trajectory=np.asarray(traj, dtype=np.float64).reshape(-1, 2),
        cte=np.asarray(cte),
        s=np.asarray(s),
        speed=np.asarray(speed),
        target=np.asarray(target),
        actions=np.asarray(actions, dtype=np.float64).reshape(-1, 2),
        frames=frames,
        wall_s=time.perf_counter() - t0,
        reference=getattr(env.unwrapped, "reference", None),
        layout=getattr(env.unwrapped, "layout", None),
        driver=getattr(policy, "name", "policy"),
    )


def _step_cap(env: Any, max_steps: int | None) -> int | None:
    """Most steps an episode of ``env`` can take (its time limit or ``max_steps``), if known."""
    task = getattr(getattr(env.unwrapped, "config", None), "task", None)
    caps = [c for c in (getattr(task, "max_episode_steps", None), max_steps) if c is not None]
    return min(caps) if caps else None


@contextmanager
def simulator(standin: bool, fast: bool, **options: Any) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(env name, S3BeamNG-v0 connection arguments)`` of the simulator the runs use.

    With ``standin``, one stand-in (compiled float32 physics when ``fast``) is started here for
    every run, so a compilation is paid once, and stopped afterwards. Otherwise ``options``
    (``host``, ``port``, ``home``, ``launch``, ``level``, ``vehicle_model``, ``socket_timeout``)
    reach BeamNG.tech; with ``launch`` it is started once here (if nothing answers) and quit at
    the end only if it was started here.
    """
    if not standin:
        launched = None
        if options.get("launch"):
            # launch (or find) BeamNG.tech once for every run; the envs then only connect
            from gym_s3._optional import require

            bngpy = require("beamngpy", purpose="launching BeamNG.tech for the evaluation")
            launched = bngpy.BeamNGpy(options.get("host", "127.0.0.1"), options.get("port", 25252),
                                      home=options.get("home"), quit_on_close=False)  # fmt: skip
            launched.open(launch=True)
            options = {**options, "launch": False}
        try:
            yield "S3BeamNG-v0", options
        finally:
            if launched is not None:
                launched.quit_on_close = launched.process is not None  # only what it started
                launched.close() if launched.quit_on_close else launched.disconnect()
        return
    from gym_s3.beamng.standin.config import standin_world
    from gym_s3.beamng.standin.server import StandInServer

    world = standin_world(fast)
    server = StandInServer(port=0, world_config=world)
    try:
        yield "S3BeamNG-v0 (open stand-in)", {"host": "127.0.0.1", "port": server.start()}
    finally:
        server.stop()


def beamng_lap_env(
    connect: dict[str, Any],
    *,
    track: str,
    surface: str,
    ice_patches: int,
    seed: int,
    obs_mode: str,
    time_limit_s: float | None = None,
    render: bool = False,
) -> Any:
    """One lap of ``track`` in ``S3BeamNG-v0`` (the lap task: standing start, stall rule).

    Args:
        connect: connection arguments from :func:`simulator`.
        track: reference track.
        surface: base surface or a transition such as ``asphalt>ice``.
        ice_patches: number of ice patches [count].
        seed: patch-placement seed.
        obs_mode: observation mode of the policy that drives it.
        time_limit_s: lap time limit [s] (default: twice the reference lap time).
        render: keep RGB frames (``render_mode="rgb_array"``).
    """
    import gymnasium as gym

    import gym_s3  # noqa: F401  (registers the ids)
    from gym_s3.envs.beamng import BeamNGEnvConfig
    from gym_s3.task import lap_task

    config = BeamNGEnvConfig(task=lap_task(time_limit_s, obs_mode=obs_mode))
    return gym.make("S3BeamNG-v0", config=config, **connect, track=track, surface=surface,
                    ice_patches=ice_patches, layout_seed=seed,
                    render_mode="rgb_array" if render else None)  # fmt: skip


def evaluate_beamng(
    policy: Policy | None,
    *,
    surfaces: Sequence[str] = ("asphalt", "asphalt_wet", "gravel", "snow", "ice"),
    ice_patches: Sequence[int] = (0, 4),
    track: str = "putnam",
    standin: bool = True,
    seed: int = 0,
    render_every: int = 0,
    max_steps: int | None = None,
    progress: bool = True,
    fast: bool = True,
    time_limit_s: float | None = None,
    expert: bool = True,
    **sim_options: Any,
) -> list[RunResult]:
    """Laps of ``track`` in ``S3BeamNG-v0`` for every surface × ice-patch count.

    With ``expert``, the scripted expert drives every lap too (its row comes first) and each
    policy row carries its ratio to it (``vs_expert``).

    Args:
        policy: the policy (its ``obs_mode`` configures the env); ``None``: the scripted expert
            alone (``expert`` must be true).
        surfaces: base surfaces to test.
        ice_patches: numbers of ice patches (0 = none) to test on each surface.
        track: reference track.
        standin: use the open stand-in (``True``) or BeamNG.tech (``sim_options``).
        seed: seed of the episode and of the patch placement.
        render_every: keep a frame every this many steps for GIFs (0: none).
        max_steps: cap on the steps of each run.
        progress: print one line per finished run.
        fast: run the stand-in's physics compiled in float32 (about 10x faster after a one-off
            compilation; ``False``: the float64 eager reference physics).
        time_limit_s: lap time limit [s] (default: twice the reference lap time of the surface
            layout, :func:`gym_s3.task.lap_task`).
        expert: also drive every lap with the scripted expert.
        **sim_options: BeamNG.tech connection (``host``, ``port``, ``home``, ``launch``,
            ``level``, ``vehicle_model``, ``socket_timeout``; see
            :class:`gym_s3.beamng.client.link.BeamNGConfig`), when ``standin`` is False.
    """
    with simulator(standin, fast, **sim_options) as (name, connect):

        def make_env(surface: str, patches: int, obs_mode: str) -> Any:
            return beamng_lap_env(connect, track=track, surface=surface, ice_patches=patches,
                                  seed=seed, obs_mode=obs_mode, time_limit_s=time_limit_s,
                                  render=bool(render_every))  # fmt: skip

        return drive_laps(make_env, lap_drivers(policy, expert, seed), name, surfaces=surfaces,
                          ice_patches=ice_patches, track=track, seed=seed,
                          render_every=render_every, max_steps=max_steps,
                          progress=progress)  # fmt: skip


def lap_drivers(policy: Policy | None, expert: bool, seed: int) -> list[Any]:
    """The drivers of a lap table: the scripted expert first (when asked), then the policy.

    ``policy`` ``None``: the expert alone (``expert`` must then be true).
    """
    drivers: list[Any] = [] if policy is None else [policy]
    if not expert:
        if policy is None:
            raise ConfigError("no driver: give a policy or ask for the scripted expert")
        return drivers
    from policies.expert_driver import ExpertDriver

    return [ExpertDriver(seed), *drivers]


def drive_laps(
    make_env: Callable[[str, int, str], Any],
    drivers: Sequence[Any],
    env_name: str,
    *,
    surfaces: Sequence[str],
    ice_patches: Sequence[int],
    track: str,
    seed: int,
    render_every: int,
    max_steps: int | None,
    progress: bool,
) -> list[RunResult]:
    """One lap per surface × ice-patch count and driver in ``make_env(surface, patches, obs_mode)``.

    Every driver (a policy, or the scripted expert of :mod:`policies.expert_driver`) drives the
    same lap in a fresh env; policy rows get their ratios to the expert's row of the same lap
    (:func:`compare_with_expert`).
    """
    results = []
    for surface in surfaces:
        for patches in ice_patches:
            for driver in drivers:
                env = make_env(surface, patches, driver.obs_mode)
                try:
                    res = run_episode(env, driver, env_name=env_name, seed=seed,
                                      render_every=render_every, max_steps=max_steps,
                                      progress=progress,
                                      condition={"track": track, "surface": surface,
                                                 "ice_patches": patches})  # fmt: skip
                finally:
                    env.close()
                results.append(res)
                if progress:
                    print_run(res)
    return compare_with_expert(results)


def lap_key(result: RunResult) -> tuple[str, str]:
    """What makes two runs the same lap: the env and the condition (track, surface, layout)."""
    return result.env, repr(sorted(result.condition.items()))


def compare_with_expert(results: Sequence[RunResult]) -> list[RunResult]:
    """Set ``vs_expert`` of every policy row that has an expert row of the same env and lap.

    Ratios are policy / expert (:data:`EXPERT_RATIOS`): below 1 the policy tracks tighter or
    laps faster. A ratio whose expert value is 0, and a lap-time ratio unless both laps
    completed, is ``None``.
    """
    from policies.expert_driver import EXPERT

    experts = {lap_key(r): r for r in results if r.driver == EXPERT}
    for r in results:
        ref = experts.get(lap_key(r))
        if r.driver == EXPERT or ref is None:
            continue
        both_done = r.terminated_by == ref.terminated_by == "completed"
        ref_steps = ref.metrics["steps"] if both_done else 0.0
        pairs = {"cte_mean": (r.metrics["cte_mean"], ref.metrics["cte_mean"]),
                 "cte_max": (r.metrics["cte_max"], ref.metrics["cte_max"]),
                 "lap_time": (r.metrics["steps"], ref_steps)}  # fmt: skip
        r.vs_expert = {k: (a / b if b > 0 else None) for k, (a, b) in pairs.items()}
    return list(results)
