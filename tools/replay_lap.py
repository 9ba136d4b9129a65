"""Is the distilled model wrong, or does the policy act otherwise? (policies/replay.py).

Drives the policy's lap in the stand-in's high-fidelity vehicle model (batched in-process, as
``s3 evaluate --simulator model``), then, in each distilled model the policy trained in, replays
exactly those actions open loop and lets the policy drive the same lap closed loop. Prints, every
``--every`` seconds, the high-fidelity speed and cross-track error beside the replay's (the
model's own error on the policy's actions) and the closed loop's (where the policy's choices part),
with both drives' pedal (+ throttle) and steering (+ right) [1]; cte is + left of the line. A
drive that has ended shows ``-``. ``--out`` also writes the rows as JSON (``null`` there).

    python tools/replay_lap.py ddm --track town:4001 --surface ice
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rich.table import Table

from gym_s3.errors import S3Error
from gym_s3.progress import result_console
from policies.checkpoint import resolve_policy
from policies.lap_options import add_one_lap_options
from policies.replay import replay_lap, replay_rows

#: (column, row key, format) of the printed table
COLUMNS = (
    ("t [s]", "t", "{:.1f}"),
    ("s high-fi [m]", "s_highfi", "{:.1f}"),
    ("v high-fi [m/s]", "v_highfi", "{:.2f}"),
    ("v replay [m/s]", "v_replay", "{:.2f}"),
    ("v closed [m/s]", "v_closed", "{:.2f}"),
    ("cte high-fi [m]", "cte_highfi", "{:+.2f}"),
    ("cte replay [m]", "cte_replay", "{:+.2f}"),
    ("cte closed [m]", "cte_closed", "{:+.2f}"),
    ("accel high-fi", "accel_highfi", "{:+.3f}"),
    ("accel closed", "accel_closed", "{:+.3f}"),
    ("steer high-fi", "steer_highfi", "{:+.3f}"),
    ("steer closed", "steer_closed", "{:+.3f}"),
)


def main(argv: list[str] | None = None) -> int:
    """Replay the lap; exit status 0 (2 on bad input)."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)  # fmt: skip
    add_one_lap_options(p, track="town:4001", surface="ice")
    p.add_argument("--models", nargs="+", default=None,
                   help="distilled models of the policy's backend: paths, the backend's "
                   "name or shipped sets such as ddm:ice; none: those it trained in")  # fmt: skip
    p.add_argument("--max-steps", type=int, default=None,
                   help="cap on the high-fidelity lap [50-ms steps]; none: all")  # fmt: skip
    p.add_argument("--every", type=float, default=1.0, help="table row spacing [s]")
    p.add_argument("--out", type=Path, default=None, help="also write the rows to this JSON file")
    args = p.parse_args(argv)
    if args.every <= 0:  # replay_rows checks it too, but only after the laps are driven
        p.error(f"--every must be a positive number of seconds, got {args.every:g}")
    console = result_console()
    try:
        name, policy = resolve_policy(args.policy)
        lap = replay_lap(policy, track=args.track, surface=args.surface,
                         ice_patches=args.ice_patches, seed=args.seed, models=args.models,
                         max_steps=args.max_steps)  # fmt: skip
        tables = {m.model: replay_rows(lap, m, args.every) for m in lap.models}
    except S3Error as err:
        p.error(str(err))  # names the setting, track, surface or policy; exit status 2
    where = f"{args.track} {args.surface}" + (f"+{args.ice_patches}" if args.ice_patches else "")
    console.print(f"{name} on {where}: high-fidelity side {lap.highfi.env}, "
                  f"{lap.highfi.terminated_by} after {len(lap.highfi.actions)} steps")  # fmt: skip
    for drive in lap.models:
        table = Table(title=f"S3Distilled-v0 model {drive.model}: replay ends "
                      f"{drive.replay.terminated_by}, closed loop ends "
                      f"{drive.closed_loop.terminated_by}")  # fmt: skip
        for column, _, _ in COLUMNS:
            table.add_column(column, justify="right")
        for row in tables[drive.model]:
            table.add_row(*("-" if row[key] is None else fmt.format(row[key])
                            for _, key, fmt in COLUMNS))  # fmt: skip
        console.print(table)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        report = {"policy": name, "lap": where, "highfi": lap.highfi.env,
                  "highfi_end": lap.highfi.terminated_by,
                  "models": [{"model": d.model, "replay_end": d.replay.terminated_by,
                              "closed_loop_end": d.closed_loop.terminated_by,
                              "rows": tables[d.model]} for d in lap.models]}  # fmt: skip
        args.out.write_text(json.dumps(report, indent=2))
        console.print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
