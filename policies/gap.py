"""``s3 gap``: the sim-to-sim gap of a policy, measured on the same laps in both simulators.

The policy drives each lap (same track, surface layout, standing start and task) once in
``S3Distilled-v0`` on its own dynamics backend and once in ``S3BeamNG-v0`` (the open stand-in by
default, BeamNG.tech with ``--beamng``), through the one lap implementation of
:mod:`policies.evaluate`. Per condition, ``gap.json`` holds both metric sets and their ratio
high-fidelity / distilled: 1 means the distilled env predicted the policy's lap; above 1 it was
too optimistic. ``ends`` counts the laps whose ending (completed, stalled, off the road, ...) the
distilled env predicted, and names the laps it let through that the high-fidelity side failed
(optimistic) and those it failed that the high-fidelity side completed (pessimistic): a failure
the distilled env does not reproduce is one no training inside it can teach a policy to avoid.
``s3 gap expert --backend B`` drives the scripted expert instead of a policy: the gap of the
dynamics backend itself, closed loop on the expert's own driving (the data the backend was
distilled from), whatever any policy learned. A table (terminal and ``gap.md``) and, per
condition, a plot of both trajectories on the track and both error traces along the lap go with
it (:mod:`policies.gap_report`). Every artefact names the high-fidelity simulator
(open stand-in or BeamNG.tech). ``--tracks`` drives every condition on several tracks.

The distilled side is the env the policy was trained in: its dynamics model, or every model of
the ensemble it was trained across (each lap driven once per model, the distilled metrics their
mean), unless ``--dynamics-checkpoint`` names others. :func:`gap_bar` judges the laps against
issue #20's bar.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from gym_s3.errors import ConfigError
from gym_s3.spec import CONTROL_DT_S
from policies.expert_driver import EXPERT
from policies.gap_bar import gap_bar, gap_ends

if TYPE_CHECKING:  # the evaluation (torch) is imported only when a gap is measured
    from policies.evaluate import RunResult

#: Metrics of the gap (``RunResult.metrics`` plus the derived lap time and early progress).
GAP_METRICS: dict[str, str] = {
    "cte_mean": "m",
    "cte_max": "m",
    "lap_time": "s",
    "progress_120s": "1",
    "completion": "1",
    "speed_error_mean": "m/s",
    "action_smoothness": "1",
}
#: The metrics the gap tables show (``s3 gap``'s and the scorecard's), distilled, high-fi, ratio.
GAP_COLUMNS: tuple[str, ...] = ("cte_mean", "cte_max", "lap_time", "progress_120s")
#: Time at which the early progress is read [s] (laps on ice take minutes).
PROGRESS_AT_S = 120.0


def gap_metrics(run: RunResult) -> dict[str, float | None]:
    """:data:`GAP_METRICS` of one lap.

    ``lap_time`` is the time driven [s] (the full lap only when it completed: ``None``
    otherwise); ``progress_120s`` is the share of the lap covered after 120 s (the final
    share if the run ended earlier).
    """
    ref = run.reference
    length = ref.length if ref is not None else float("nan")
    k = min(len(run.s), round(PROGRESS_AT_S / CONTROL_DT_S)) - 1
    s = np.unwrap(run.s, period=length) if ref is not None and ref.closed else run.s
    progress = float(s[k] - s[0]) / length if k >= 0 else 0.0
    steps = run.metrics["steps"]
    return {
        "cte_mean": run.metrics["cte_mean"],
        "cte_max": run.metrics["cte_max"],
        "lap_time": steps * CONTROL_DT_S if run.terminated_by == "completed" else None,
        "progress_120s": progress,
        "completion": run.metrics["completion"],
        "speed_error_mean": run.metrics["speed_error_mean"],
        "action_smoothness": run.metrics["action_smoothness"],
    }


def ensemble_end(ends: Sequence[str]) -> str:
    """How a lap ended across the dynamics models of an ensemble env.

    ``completed`` when every model completed it, else the most common other end (ties: the end of
    the first model that did not complete it).
    """
    failed = [end for end in ends if end != "completed"]
    return max(failed, key=failed.count) if failed else "completed"


def _mean(values: Sequence[float | None]) -> float | None:
    """Mean of the values, ``None`` if any is missing (e.g. a lap time of an incomplete lap)."""
    return None if any(v is None for v in values) else float(np.mean(values))


def gap_entry(distilled: Sequence[RunResult], highfi: RunResult) -> dict[str, Any]:
    """One ``runs`` entry: condition, both metric sets and ratio = high-fidelity / distilled.

    ``distilled`` holds the lap in each dynamics model of the distilled env (one for a single
    model). With several, the distilled metrics are the models' means (the lap time only when
    every model completed the lap), the end is :func:`ensemble_end`, and ``models`` lists each
    model's end and metrics. A ratio is ``None`` when either value is missing or the distilled
    value is 0.
    """
    per_model = [gap_metrics(run) for run in distilled]
    d = {k: _mean([m[k] for m in per_model]) for k in GAP_METRICS}
    h = gap_metrics(highfi)
    ratio = {k: (h[k] / d[k] if h[k] is not None and d[k] else None) for k in GAP_METRICS}
    side: dict[str, Any] = {
        "env": distilled[0].env,
        "end": ensemble_end([run.terminated_by for run in distilled]),
        **d,
    }
    if len(distilled) > 1:
        side["models"] = [{"end": run.terminated_by, **m}
                          for run, m in zip(distilled, per_model, strict=True)]  # fmt: skip
    return {
        "condition": distilled[0].condition,
        "distilled": side,
        "highfi": {"env": highfi.env, "end": highfi.terminated_by, **h},
        "ratio": ratio,
    }


def measure_gap(
    policy: Any | None,
    *,
    track: str = "putnam",
    surfaces: Sequence[str] = ("asphalt", "snow", "ice"),
    ice_patches: Sequence[int] = (0, 6),
    seed: int = 0,
    backend: str | None = None,
    checkpoint: str | Sequence[str] | None = None,
    max_steps: int | None = None,
    time_limit_s: float | None = None,
    standin: bool = True,
    fast: bool = True,
    progress: bool = True,
    batched: bool = False,
    **sim_options: Any,
) -> tuple[dict[str, Any], list[tuple[tuple[RunResult, ...], RunResult]]]:
    """Drive the laps in both simulators; returns ``(gap.json content, run pairs)``.

    Each pair is one lap: its runs in the distilled env (one per dynamics model,
    :func:`distilled_models`) and its high-fidelity run.

    Args:
        policy: the policy (:class:`policies.checkpoint.Policy`); ``None``: the scripted expert
            drives (``backend`` then required).
        track: track of the laps.
        surfaces: base surfaces of the laps.
        ice_patches: numbers of ice patches on each surface.
        seed: episode and patch-placement seed.
        backend: distilled backend (default: the policy's own).
        checkpoint: dynamics checkpoint(s) of ``backend``; several (or a shipped set name such
            as ``"ddm:ice"``) make the distilled env an ensemble, every lap driven once in each
            model; default: the models the policy was trained in (:func:`distilled_models`).
        max_steps: cap on the steps of each lap (short laps for quick checks).
        time_limit_s: lap time limit [s] (default: twice the reference lap).
        standin: high-fidelity side in the open stand-in (``False``: BeamNG.tech via
            ``sim_options``).
        fast: compiled float32 stand-in physics (``False``: the eager float64 reference).
        progress: print one line per lap.
        batched: high-fidelity side in the stand-in's vehicle model, every lap one car of one
            batch in-process (:mod:`policies.evaluate_model`: the same laps and physics as the
            stand-in through ``S3BeamNG-v0``, many times faster); needs ``standin``.
        **sim_options: BeamNG.tech connection (``host``, ``port``, ...) when not ``standin``.
    """
    from gym_s3 import dynamics
    from policies.evaluate import evaluate_beamng
    from policies.evaluate_distilled import evaluate_distilled_laps
    from policies.evaluate_model import evaluate_model, lap_grid

    if batched and not standin:
        raise ConfigError("the batched vehicle model is the stand-in's physics; drop --beamng")
    expert = policy is None
    if expert and backend is None:
        raise ConfigError(
            "the scripted expert has no dynamics backend of its own: name the distilled env's "
            "backend (s3 gap expert --backend ddm)"
        )

    laps = dict(track=track, surfaces=surfaces, ice_patches=ice_patches, seed=seed,
                max_steps=max_steps, time_limit_s=time_limit_s, progress=progress,
                expert=expert)  # fmt: skip
    backend = backend or policy.backend
    models = distilled_models(policy, backend, checkpoint)
    # a backend's name passes as None: the env's own default (the shipped model, or untrained)
    per_model = [
        evaluate_distilled_laps(
            policy, backend=backend, **laps, checkpoint=None if model == backend else model
        )
        for model in models
    ]
    distilled = list(zip(*per_model, strict=True))
    if batched:
        grid = lap_grid([track], surfaces, ice_patches)
        drivers = [] if expert else [(policy.backend, policy)]
        highfi = evaluate_model(drivers, grid, seed=seed, max_steps=max_steps,
                                time_limit_s=time_limit_s, expert=expert, fast=fast,
                                progress=progress)  # fmt: skip
    else:
        highfi = evaluate_beamng(policy, standin=standin, fast=fast, **laps, **sim_options)
    pairs = list(zip(distilled, highfi, strict=True))
    env = distilled[0][0].env if distilled else None
    report = {
        "policy": EXPERT if expert else str(getattr(policy, "path", "")),
        "driver": EXPERT if expert else "policy",
        "backend": backend,
        "distilled": env
        if len(models) == 1 or env is None
        else f"{env} (ensemble of {len(models)} models)",
        "dynamics": [dynamics.source(model) for model in models],
        "highfi": highfi[0].env if highfi else None,
        "simulator": simulator_name(standin)
        + (" vehicle model, batched in-process" if batched else ""),
        "ratio": "high-fidelity / distilled",
        "runs": [gap_entry(d, h) for d, h in pairs],
    }
    report["ends"] = gap_ends(report["runs"])
    report["bar"] = gap_bar(report)
    return report, pairs


def distilled_models(policy: Any | None, backend: str, checkpoint: str | Sequence[str] | None
                     ) -> tuple[str, ...]:  # fmt: skip
    """The dynamics models of the distilled side, in order (several: an ensemble).

    ``checkpoint`` as given (shipped set names expanded); without it, the models the policy was
    trained in when its record names ones that can be found
    (:func:`policies.checkpoint.training_dynamics`) and they are of ``backend``, else the
    shipped default of ``backend``.
    """
    from gym_s3.dynamics.io import expand_checkpoints
    from policies.checkpoint import training_dynamics

    if checkpoint is not None:
        models = expand_checkpoints(checkpoint)
        if not models:
            raise ConfigError("checkpoint is an empty list; name at least one dynamics model")
        return models
    if policy is not None and backend == policy.backend:
        trained = training_dynamics(policy.meta)
        if trained:
            return trained
    return (backend,)


def measure_gap_tracks(
    policy: Any, tracks: Sequence[str], **options: Any
) -> tuple[dict[str, Any], list[tuple[tuple[RunResult, ...], RunResult]]]:
    """:func:`measure_gap` on every track of ``tracks``, as one report (runs in track order)."""
    if not tracks:
        raise ConfigError("give at least one track")
    report: dict[str, Any] = {}
    pairs: list[tuple[tuple[RunResult, ...], RunResult]] = []
    for track in tracks:
        part, part_pairs = measure_gap(policy, track=track, **options)
        report = {**part, "runs": report.get("runs", []) + part["runs"]}
        pairs += part_pairs
    report["ends"] = gap_ends(report["runs"])
    report["bar"] = gap_bar(report)
    return report, pairs


def simulator_name(standin: bool) -> str:
    """What the high-fidelity side is, in words."""
    return "open stand-in (not BeamNG.tech)" if standin else "BeamNG.tech"
