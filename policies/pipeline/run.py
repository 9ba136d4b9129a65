"""The stages of ``s3 pipeline`` and their presets.

1. ``data``: scripted expert driving in the high-fidelity simulator (the batched stand-in physics)
   over Putnam Park, procedural circuits and town routes, every surface, ice patches.
2. ``distill``: fit/train the chosen dynamics backends on it (the others use the shipped
   checkpoints) and measure every backend's open-loop error on held-out sessions.
3. ``train``: PPO in ``S3Distilled-v0`` on the chosen backends (the others use the shipped
   policies).
4. ``evaluate``: every policy in ``S3BeamNG-v0`` on the open stand-in (started in-process) on
   Putnam Park, per surface and with ice patches.
5. ``speedup``: env steps per second of the distilled env and of the stand-in, measured now.
6. ``round<r>/...`` (``--rounds K``): policy-in-the-loop rounds (:mod:`policies.pipeline.rounds`).
7. ``report``: Markdown and HTML with tables, plots, GIFs and the backend scorecard.

Every stage is skipped when its inputs (settings, upstream results and the SHA-256 of the
shipped checkpoints and policies it reads) are unchanged, and an interrupted run resumes at the
first unfinished stage.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from policies.pipeline import steps
from policies.pipeline.config import BACKENDS, POLICIES, PRESETS, PipelineConfig, preset
from policies.pipeline.report import write_report
from policies.pipeline.stages import StageOutcome, run_stage

__all__ = ["BACKENDS", "POLICIES", "PRESETS", "PipelineConfig", "preset", "run_pipeline"]


def run_pipeline(
    config: PipelineConfig, out: str | Path, *, log: Callable[[str], None] = print
) -> Path:
    """Run (or resume) every stage; returns the path of ``report.md``."""
    root = Path(out)
    root.mkdir(parents=True, exist_ok=True)
    began = time.perf_counter()
    from gym_s3 import __version__

    common = {"version": __version__, "seed": config.seed}
    on_device = {**common, "device": config.device}  # the data stage always runs on the CPU
    outcomes: dict[str, StageOutcome] = {}
    outcomes["data"] = run_stage(
        root, "data",
        {**common, "preset": config.data_preset, "overrides": config.data_overrides},
        lambda d: steps.stage_data(d, config), log=log,
    )  # fmt: skip
    outcomes["distill"] = run_stage(
        root, "distill",
        {**on_device, "data": outcomes["data"].key, "backends": list(config.distill_backends),
         "overrides": config.distill_overrides, "horizons": list(config.open_loop_horizons),
         "shipped": steps.shipped_dynamics_identities(config)},
        lambda d: steps.stage_distill(d, config, outcomes["data"]), log=log,
    )  # fmt: skip
    outcomes["train"] = run_stage(
        root, "train",
        {**on_device, "distill": outcomes["distill"].key, "backends": list(config.policy_backends),
         "overrides": config.ppo_preset_overrides,
         "shipped": steps.shipped_policy_identities(config)},
        lambda d: steps.stage_train(d, config, outcomes["distill"]), log=log,
    )  # fmt: skip
    outcomes["evaluate"] = run_stage(
        root, "evaluate",
        {**on_device, "train": outcomes["train"].key, "policies": list(config.eval_policies),
         "surfaces": list(config.eval_surfaces), "patches": list(config.eval_ice_patches),
         "max_steps": config.eval_max_steps, "gif_every": config.gif_every,
         "fast_standin": config.fast_standin, "simulator": config.eval_simulator,
         "seeds": list(config.eval_seeds)},
        lambda d: steps.stage_evaluate(d, config, outcomes["train"]), log=log,
    )  # fmt: skip
    outcomes["speedup"] = run_stage(
        root, "speedup",
        {**on_device, "distill": outcomes["distill"].key, "num_envs": config.speedup_num_envs,
         "seconds": config.speedup_seconds, "fast_standin": config.fast_standin},
        lambda d: steps.stage_speedup(d, config, outcomes["distill"]), log=log,
    )  # fmt: skip
    rounds = None
    if config.rounds > 0:
        from policies.pipeline.rounds import run_rounds

        rounds = run_rounds(root, config, outcomes, log=log)
    report = write_report(root, config, outcomes, wall_s=time.perf_counter() - began,
                          rounds=rounds)  # fmt: skip
    log(f"report: {report} (and {report.with_suffix('.html')})")
    return report
