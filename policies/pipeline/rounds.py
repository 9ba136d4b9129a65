"""Policy-in-the-loop rounds of ``s3 pipeline --rounds K``.

The expert's logs only cover the states the expert visits; a policy trained in the distilled env
visits others, and there the distilled model is wrong (the sim-to-sim gap). After the first pass
(data, distill, train, evaluate), round ``r = 1 .. K``:

1. ``round<r>/rollouts``: drive the round's policies (those the previous pass trained) with Gaussian
   action noise, ``rollout_seeds`` noise seeds, on the data preset's tracks, surfaces and patch
   layouts, in the batched high-fidelity vehicle model (:mod:`policies.rollouts`; or, with
   ``rollout_simulator``, through ``S3BeamNG-v0`` in the stand-in server or BeamNG.tech);
2. ``round<r>/distill``: re-distil the trained backends on the expert data plus every round's
   rollouts so far (from scratch, ``round_distill_overrides`` epochs; warm starts are not built)
   and evaluate them open loop next to the previous round's checkpoints (``"<name> (before)"``)
   on held-out expert and held-out policy-driven sessions;
3. ``round<r>/train``: retrain the policies in ``S3Distilled-v0`` on the new checkpoints;
4. ``round<r>/evaluate``: lap results in ``S3BeamNG-v0`` (the open stand-in);
5. ``round<r>/gap``: the sim-to-sim gap (:func:`policies.gap.measure_gap`) per policy.

Round 0 is the first pass; its gap is measured as ``round0/gap`` so every round has one. Each
stage is keyed by the hash of its inputs (:mod:`policies.pipeline.stages`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from policies.pipeline import steps
from policies.pipeline.config import PipelineConfig
from policies.pipeline.stages import StageOutcome, run_stage

__all__ = ["rounds_markdown", "run_rounds", "stage_gap", "stage_rollouts"]


def stage_rollouts(
    folder: Path, config: PipelineConfig, train: StageOutcome, round_index: int
) -> dict[str, Any]:
    """Drive the round's policies with action noise; one dataset folder per policy.

    The round's policies are those the pipeline trains (``policy_backends``; the shipped ones
    do not change between rounds), or every evaluated policy when it trains none.
    """
    from policies.rollouts import drive_policy

    overrides = {**config.data_overrides, **config.rollout_overrides}
    datasets: dict[str, str] = {}
    for name in config.policy_backends or config.eval_policies:
        out = folder / name
        manifest = drive_policy(
            train.result["policies"][name], out, sigma=config.rollout_noise,
            noise_seeds=config.rollout_seeds, seed=config.seed + round_index, tag=name,
            preset=config.data_preset, simulator=config.rollout_simulator,
            fast=config.fast_standin and config.rollout_simulator == "standin",
            sim_options=config.rollout_sim_options or None, **overrides,
        )  # fmt: skip
        datasets[name] = str(out)
        print(f"rollouts of '{name}': {len(manifest['files'])} episodes, "
              f"{manifest['samples']} samples in {manifest['generation_s']:.1f} s")  # fmt: skip
    return {"datasets": datasets}


def _simulator_inputs(config: PipelineConfig) -> dict[str, Any]:
    """The rollout simulator among a rollouts stage's inputs (none for the default ``model``)."""
    if config.rollout_simulator == "model":
        return {}
    return {"simulator": config.rollout_simulator, "sim": config.rollout_sim_options,
            "fast_standin": config.fast_standin}  # fmt: skip


def stage_gap(
    folder: Path, config: PipelineConfig, train: StageOutcome, distill: StageOutcome
) -> dict[str, Any]:
    """The gap of every evaluated policy: its distilled backend (this pass) vs the stand-in."""
    from policies.checkpoint import load_policy
    from policies.gap import measure_gap
    from policies.gap_report import write_gap

    reports: dict[str, str] = {}
    for name in config.eval_policies:
        policy = load_policy(train.result["policies"][name])
        report, pairs = measure_gap(
            policy, track="putnam", surfaces=config.eval_surfaces,
            ice_patches=config.eval_ice_patches, seed=config.seed, backend=policy.backend,
            checkpoint=distill.result["checkpoints"][policy.backend],
            max_steps=config.eval_max_steps, fast=config.fast_standin, progress=False,
        )  # fmt: skip
        write_gap(report, pairs, folder / name)
        reports[name] = str(folder / name / "gap.json")
    return {"gap": reports}


def _gap(root: Path, r: int, config: PipelineConfig, train: StageOutcome,
         distill: StageOutcome, log: Callable[[str], None]) -> StageOutcome:  # fmt: skip
    """The gap stage of round ``r``."""
    inputs = {"train": train.key, "distill": distill.key, "surfaces": list(config.eval_surfaces),
              "patches": list(config.eval_ice_patches), "max_steps": config.eval_max_steps,
              "fast_standin": config.fast_standin,
              "policies": list(config.eval_policies)}  # fmt: skip
    return run_stage(root, f"round{r}/gap", inputs,
                     lambda d: stage_gap(d, config, train, distill), log=log)  # fmt: skip


def run_rounds(
    root: Path,
    config: PipelineConfig,
    outcomes: dict[str, StageOutcome],
    *,
    log: Callable[[str], None] = print,
) -> list[dict[str, Any]]:
    """Run (or resume) ``config.rounds`` rounds after the first pass; one summary per round.

    Returns:
        per round (0 = the first pass): ``{"round", "samples", "open_loop", "results", "gap",
        "stages": {name: StageOutcome}}``.
    """
    data, distill, train = outcomes["data"], outcomes["distill"], outcomes["train"]
    gap = _gap(root, 0, config, train, distill, log)
    summaries = [_summary(0, distill, outcomes["evaluate"], gap, {"gap": gap})]
    rollouts: list[str] = []
    for r in range(1, config.rounds + 1):
        prev_train, prev_distill = train, distill
        roll = run_stage(
            root, f"round{r}/rollouts",
            {"train": prev_train.key, "noise": config.rollout_noise,
             "seeds": list(config.rollout_seeds), "overrides": config.rollout_overrides,
             **_simulator_inputs(config),
             "data": data.key,
             "policies": list(config.policy_backends or config.eval_policies)},
            lambda d, r=r, t=prev_train: stage_rollouts(d, config, t, r), log=log,
        )  # fmt: skip
        rollouts += list(roll.result["datasets"].values())
        extra = tuple(rollouts)
        distill = run_stage(
            root, f"round{r}/distill",
            {"data": data.key, "rollouts": roll.key, "extra": list(extra),
             "before": prev_distill.key, "overrides": config.round_distill_overrides,
             "backends": list(config.distill_backends), "base": config.distill_overrides,
             "horizons": list(config.open_loop_horizons), "device": config.device},
            lambda d, e=extra, p=prev_distill: steps.stage_distill(
                d, config, data, extra_data=e, previous=p.result["checkpoints"],
                overrides=config.round_distill_overrides),
            log=log,
        )  # fmt: skip
        train = run_stage(
            root, f"round{r}/train",
            {"distill": distill.key, "backends": list(config.policy_backends),
             "overrides": config.ppo_preset_overrides, "device": config.device},
            lambda d, s=distill: steps.stage_train(d, config, s), log=log,
        )  # fmt: skip
        evaluate = run_stage(
            root, f"round{r}/evaluate",
            {"train": train.key, "policies": list(config.eval_policies),
             "surfaces": list(config.eval_surfaces), "patches": list(config.eval_ice_patches),
             "max_steps": config.eval_max_steps, "gif_every": config.gif_every,
             "fast_standin": config.fast_standin, "simulator": config.eval_simulator,
             "seeds": list(config.eval_seeds)},
            lambda d, t=train: steps.stage_evaluate(d, config, t), log=log,
        )  # fmt: skip
        gap = _gap(root, r, config, train, distill, log)
        stages = {"rollouts": roll, "distill": distill, "train": train, "evaluate": evaluate,
                  "gap": gap}  # fmt: skip
        summaries.append(_summary(r, distill, evaluate, gap, stages))
    return summaries


def _summary(r: int, distill: StageOutcome, evaluate: StageOutcome, gap: StageOutcome,
             stages: dict[str, StageOutcome]) -> dict[str, Any]:  # fmt: skip
    """What the report shows of one round."""
    return {"round": r, "samples": distill.result.get("samples"),
            "open_loop": distill.result["open_loop"], "results": evaluate.result["results"],
            "gap": gap.result["gap"], "stages": stages}  # fmt: skip


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def rounds_markdown(rounds: list[dict[str, Any]]) -> str:
    """The report section: per round, the gap and lap results, and the open-loop errors."""
    from policies.evaluate import describe_condition

    lines = [
        "Round 0 is the first pass; each later round drove the previous round's policies with "
        "action noise in the high-fidelity model, added those logs, re-distilled the trained "
        "backends and retrained the policies. Lap results are the high-fidelity (stand-in) laps "
        "of the gap measurement; ratio = high-fidelity / distilled.",
        "",
        "| round | samples | policy | condition | end (distilled / high-fi) | cte mean high-fi "
        "[m] | cte mean ratio | cte max high-fi [m] | cte max ratio | lap time high-fi [s] | "
        "lap time ratio | progress 120 s high-fi |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for rnd in rounds:
        for name, path in rnd["gap"].items():
            report = json.loads(Path(path).read_text())
            for run in report["runs"]:
                d, h, q = run["distilled"], run["highfi"], run["ratio"]
                lines.append(
                    f"| {rnd['round']} | {rnd['samples']} | {name} | "
                    f"{describe_condition(run['condition'])} | {d['end']} / {h['end']} | "
                    f"{_fmt(h['cte_mean'])} | {_fmt(q['cte_mean'])} | {_fmt(h['cte_max'])} | "
                    f"{_fmt(q['cte_max'])} | {_fmt(h['lap_time'])} | {_fmt(q['lap_time'])} | "
                    f"{_fmt(h['progress_120s'])} |"
                )  # fmt: skip
    lines += ["", *_open_loop_lines(rounds)]
    return "\n".join(lines) + "\n"


def _open_loop_lines(rounds: list[dict[str, Any]]) -> list[str]:
    """Position error at the horizons on held-out expert and policy-driven sessions per round."""
    lines = ["Open-loop position error [m] per round (held-out sessions; `(before)`: the "
             "previous round's checkpoint on the same windows):", "",
             "| round | backend | windows | horizon [steps] | expert logs | policy rollouts |",
             "|---|---|---|---|---|---|"]  # fmt: skip
    for rnd in rounds:
        report = json.loads(Path(rnd["open_loop"]).read_text())
        rolled = report.get("rollouts", {}).get("results", {})
        for backend, res in report["results"].items():
            if rnd["round"] > 0 and backend not in rolled:
                continue
            for h in report["horizons"]:
                pol = rolled.get(backend, {}).get("all", {}).get("position", {}).get(str(h))
                lines.append(
                    f"| {rnd['round']} | {backend} | {res['all']['count']} | {h} | "
                    f"{res['all']['position'][str(h)]:.3f} | {_fmt3(pol)} |"
                )  # fmt: skip
    return lines + [""]


def _fmt3(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"
