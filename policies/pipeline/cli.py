"""``s3 pipeline``: collect, distil, train, validate and report in one command."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def register(subparsers: Any) -> None:
    """Add ``s3 pipeline`` to the command line."""
    from gym_s3.cli_parser import preset_values
    from policies.lap_options import add_beamng_options
    from policies.pipeline.config import PRESETS, QUICK_DURATION

    p = subparsers.add_parser(
        "pipeline",
        help="run the whole method: data, distillation, PPO, validation, report",
        description="Run Sim2Sim2Sim end to end on the embedded default (no BeamNG needed): "
        "generate expert driving data in the high-fidelity stand-in physics, distil the "
        "dynamics backends, train PPO in S3Distilled-v0, validate in S3BeamNG-v0 on the open "
        "stand-in (Putnam Park approximation, surfaces, ice patches) and write a report "
        "(Markdown + HTML). Stages whose inputs are unchanged are reused; an interrupted run "
        "resumes.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--preset", default="quick", choices=sorted(PRESETS),
                   help=f"quick: {QUICK_DURATION}; trains the bicycle, a short DDM and one "
                   "5-minute PPO policy and uses the shipped checkpoints for the rest; full: "
                   "everything from scratch (meant for a GPU); tiny: seconds, for tests",
                   )  # fmt: skip
    p.add_argument(
        "--out",
        type=Path,
        default=Path("s3_out/pipeline"),
        help="output folder (stage folders, report.md, report.html)",
    )
    p.add_argument("--seed", type=int, default=None, help="seed of every stage (preset: 0)")
    p.add_argument(
        "--ppo-seconds",
        type=float,
        default=None,
        help="wall-clock budget of each PPO run [s]; "
        + preset_values(
            {
                k: {"budget": c.ppo_preset_overrides.get("time_budget_s")}
                for k, c in PRESETS.items()
            },
            "budget",
        )  # fmt: skip
        + " (none: the PPO preset's frame count decides)",
    )
    p.add_argument(
        "--eval-max-steps",
        type=int,
        default=None,
        help="cap on each validation run [steps of 50 ms]; "
        + preset_values(PRESETS, "eval_max_steps")
        + " (none: full laps)",
    )
    p.add_argument(
        "--eval-simulator",
        default=None,
        choices=("standin", "model"),
        help="where the validation laps run: standin (S3BeamNG-v0 through beamngpy on the open "
        "stand-in server, one lap after another, with GIFs) or model (every lap of every policy "
        "one car of one batch of the stand-in's vehicle model in-process: same laps and "
        "physics, no GIFs, tens of times faster); " + preset_values(PRESETS, "eval_simulator"),
    )
    p.add_argument(
        "--distill",
        default=None,
        help="comma-separated backends to distil in this run (bicycle, ddm, trans, dytr); the "
        "others use the shipped checkpoints; 'none' for none; "
        + preset_values(PRESETS, "distill_backends"),
    )
    p.add_argument(
        "--policies",
        default=None,
        help="comma-separated policies to train in this run (bicycle, ddm, trans, dytr, oracle); "
        "the others use the shipped policies; 'none' for none; "
        + preset_values(PRESETS, "policy_backends"),
    )
    p.add_argument(
        "--device",
        default=None,
        help="torch device of distillation, PPO and the distilled-env throughput, e.g. cuda "
        "(default: cpu; the stand-in physics always runs on the CPU)",
    )
    p.add_argument(
        "--rounds", type=int, default=None,
        help="policy-in-the-loop rounds after the first pass: drive the policies with action "
        "noise in the high-fidelity model, add the logs, re-distil, retrain, evaluate and "
        "measure the gap, per round [count] (default: 0)",
    )  # fmt: skip
    p.add_argument(
        "--rollout-simulator", default=None, choices=("model", "standin", "beamng"),
        help="where the rounds drive the policies: model (default: the stand-in's vehicle model "
        "batched in-process, about 50x faster at 64 cars), standin (the stand-in server through "
        "beamngpy, one car at a time, as BeamNG.tech is driven) or beamng (BeamNG.tech at "
        "--host/--port)",
    )  # fmt: skip
    add_beamng_options(p, when="with --rollout-simulator beamng")
    p.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch intra-op CPU threads of every stage (0: torch's choice, one per core); if "
        "omitted: $S3_TORCH_THREADS, else 1 unless OMP_NUM_THREADS is set (see gym_s3.threads: "
        "more threads collapse when another process competes for the cores)",
    )
    p.set_defaults(func=_run)


def _names(text: str | None) -> tuple[str, ...] | None:
    """A comma-separated option as a tuple of names (``None`` if omitted, ``()`` for 'none')."""
    if text is None:
        return None
    if text.strip().lower() == "none":
        return ()
    return tuple(x.strip() for x in text.split(",") if x.strip())


def _run(args: argparse.Namespace) -> int:
    """``s3 pipeline``."""
    from dataclasses import replace

    from gym_s3.threads import use_threads
    from policies.lap_options import beamng_options
    from policies.pipeline.run import preset, run_pipeline

    use_threads(args.threads)
    beamng = args.rollout_simulator == "beamng"
    sim = beamng_options(args, active=beamng, how="--rollout-simulator beamng")
    config = preset(args.preset, seed=args.seed, eval_max_steps=args.eval_max_steps,
                    eval_simulator=args.eval_simulator,
                    device=args.device, distill_backends=_names(args.distill),
                    policy_backends=_names(args.policies), rounds=args.rounds,
                    rollout_simulator=args.rollout_simulator,
                    rollout_sim_options=sim or None)  # fmt: skip
    if args.ppo_seconds is not None:
        ppo = {**config.ppo_preset_overrides, "time_budget_s": args.ppo_seconds}
        config = replace(config, ppo_preset_overrides=ppo)
    report = run_pipeline(config, args.out)
    print(f"open {report.with_suffix('.html')} in a browser")
    return 0
