"""``s3 gap`` on the command line.

It measures (:mod:`policies.gap`), then writes the artefacts (:mod:`policies.gap_report`).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from gym_s3.errors import ConfigError
from policies.expert_driver import EXPERT
from policies.gap import measure_gap_tracks
from policies.gap_report import write_gap


def register(subparsers: Any) -> None:
    """Add ``s3 gap`` to the command line."""
    p = subparsers.add_parser(
        "gap",
        help="sim-to-sim gap of a policy or of a backend (driven by the scripted expert): the "
        "same laps in S3Distilled-v0 and S3BeamNG-v0",
        description="Drive the same laps (track, surface layout, standing start, task) with a "
        "policy (or the scripted expert: 'expert' --backend B) in S3Distilled-v0 on its dynamics "
        "backend and in S3BeamNG-v0 (the open stand-in unless --beamng), and write gap.json "
        "(per condition: both metric sets and the ratio high-fidelity / distilled), gap.md and "
        "plots of both trajectories and error traces.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    from policies.checkpoint import SHIPPED_POLICIES

    p.add_argument("policy", help=f"shipped policy ({', '.join(SHIPPED_POLICIES)}), checkpoint "
                   f"path (.json sidecar or stem), or '{EXPERT}': the scripted expert "
                   "drives, which measures the gap of the dynamics backend itself on the "
                   "expert's own driving (needs --backend)")  # fmt: skip
    from policies.lap_options import add_beamng_options, add_lap_options

    add_lap_options(p, surfaces="asphalt,snow,ice", ice_patches="0,6", ensemble=True)
    add_beamng_options(p, when="with --beamng").add_argument(
        "--beamng",
        action="store_true",
        help="high-fidelity side in BeamNG.tech at --host/--port (default: stand-in)",
    )
    p.add_argument(
        "--simulator",
        choices=("standin", "model"),
        default="standin",
        help="high-fidelity side on the stand-in: standin (S3BeamNG-v0 through beamngpy and the "
        "stand-in server, one lap after another) or model (every lap one car of one batch of "
        "the stand-in's vehicle model in-process: the same laps and physics, many times faster)",
    )
    p.add_argument("--tracks", default=None,
                   help="comma-separated tracks, each driven with every condition (replaces "
                   "--track), e.g. town:50,town:51,procedural:201")  # fmt: skip
    p.add_argument("--out", type=Path, default=Path("runs/gap"), help="output folder")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from policies.checkpoint import resolve_policy
    from policies.lap_options import beamng_options, csv_list

    if args.tracks and args.track != "putnam":
        raise ConfigError("give the tracks with --tracks or one track with --track, not both")
    tracks = csv_list(args.tracks, str) if args.tracks else [args.track]
    policy = None if args.policy == EXPERT else resolve_policy(args.policy)[1]
    sim = beamng_options(args, active=args.beamng, how="--beamng")
    report, pairs = measure_gap_tracks(
        policy, tracks, surfaces=csv_list(args.surfaces, str),
        ice_patches=csv_list(args.ice_patches, int), seed=args.seed, backend=args.backend,
        checkpoint=args.dynamics_checkpoint, max_steps=args.max_steps,
        time_limit_s=args.time_limit, standin=not args.beamng,
        batched=args.simulator == "model", **sim,
    )  # fmt: skip
    for path in write_gap(report, pairs, args.out):
        print(path)
    return 0
