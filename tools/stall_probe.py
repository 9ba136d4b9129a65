"""Which part of its observation makes a policy brake where its car stalled? (policies/probes.py).

Drives one lap in ``S3Distilled-v0`` (the policy's backend unless ``--backend``; standing start,
the lap task of ``S3BeamNG-v0``) or, with ``--simulator standin``, in ``S3BeamNG-v0`` on the open
stand-in (where a policy's stalls happen that the distilled env does not reproduce), keeps the
observation once the car has stood still for ``--standing-s`` seconds after it first got going,
and prints the policy's action on that observation with one group of features edited at a time.
An edit that turns brake into throttle names what the policy brakes for; the last row is what the
scripted expert (the taught recipes' teacher) would do in the same state.

    python tools/stall_probe.py ddm --track town:52 --surface ice
    python tools/stall_probe.py ddm --track town:71 --surface 'asphalt>ice' --simulator standin
"""

from __future__ import annotations

import argparse

import numpy as np
from rich.table import Table

from gym_s3.errors import S3Error
from gym_s3.progress import result_console
from gym_s3.spec import CONTROL_DT_S
from policies.checkpoint import Policy, resolve_policy
from policies.evaluate import beamng_lap_env, simulator
from policies.evaluate_distilled import distilled_lap_env
from policies.lap_options import add_one_lap_options
from policies.probes import Stall, expert_action_at, find_stall, probe_stall


def main(argv: list[str] | None = None) -> int:
    """Run the probe; exit status 0 (1 when the car never stalled, 2 on bad input)."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)  # fmt: skip
    add_one_lap_options(p, track="town:52", surface="ice")
    p.add_argument("--backend", default=None,
                   help="dynamics backend of S3Distilled-v0; none: the policy's own")  # fmt: skip
    p.add_argument("--simulator", choices=("distilled", "standin"), default="distilled",
                   help="where the lap is driven: S3Distilled-v0, or S3BeamNG-v0 on the open "
                   "stand-in (started in-process; --backend is then ignored)")  # fmt: skip
    p.add_argument("--standing-s", type=float, default=2.0,
                   help="how long the car must have stood (below 0.5 m/s) [s]")  # fmt: skip
    args = p.parse_args(argv)
    console = result_console()
    try:
        from gym_s3.tracks.lap_layouts import lap_layout
        from gym_s3.tracks.registry import cached_track

        name, policy = resolve_policy(args.policy)
        if args.simulator == "standin":
            sim = "S3BeamNG-v0 (open stand-in)"
            stall, expert = _standin_stall(policy, args)
        else:
            backend = args.backend or policy.backend
            sim = f"S3Distilled-v0/{backend}"
            layout = lap_layout(cached_track(args.track), args.surface, args.ice_patches,
                                args.seed)  # fmt: skip
            env = distilled_lap_env(args.track, layout, backend=backend,
                                    obs_mode=policy.obs_mode, seed=args.seed)  # fmt: skip
            stall = find_stall(policy, env, standing_s=args.standing_s, seed=args.seed)
            expert = None if stall is None else expert_action_at(env, seed=args.seed)
    except S3Error as err:
        p.error(str(err))  # names the setting, track, surface or policy; exit status 2
    where = f"{args.track} {args.surface}" + (f"+{args.ice_patches}" if args.ice_patches else "")
    if stall is None:
        console.print(f"{name} on {where} in {sim}: the car never stood "
                      f"{args.standing_s:g} s after it got going")  # fmt: skip
        return 1
    console.print(
        f"{name} on {where} in {sim}: standing at step {stall.step} "
        f"({stall.step * CONTROL_DT_S:.1f} s), speed {stall.feature('v_long'):.2f} m/s, "
        f"cross-track {stall.feature('cross_track_error'):+.2f} m (+ left), heading error "
        f"{stall.feature('heading_error'):+.2f} rad, speed error "
        f"{stall.feature('speed_error'):+.2f} m/s"
    )
    table = Table(title="the policy's action on the edited observation")
    for col in ("edit", "steer (+ right)", "accel (+ throttle)"):
        table.add_column(col, justify="left" if col == "edit" else "right")
    for probe, action in probe_stall(policy, stall).items():
        table.add_row(probe, f"{action[0]:+.2f}", f"{action[1]:+.2f}")
    table.add_row("the scripted expert (fresh integral)", f"{expert[0]:+.2f}", f"{expert[1]:+.2f}",
                  style="italic")  # fmt: skip
    console.print(table)
    return 0


def _standin_stall(policy: Policy, args: argparse.Namespace
                   ) -> tuple[Stall | None, np.ndarray | None]:  # fmt: skip
    """The stall of one lap in ``S3BeamNG-v0`` on a stand-in (compiled physics), and the expert.

    The stand-in is started here; the second item is the scripted expert's action at the stall.
    """
    with simulator(standin=True, fast=True) as (_, connect):
        env = beamng_lap_env(connect, track=args.track, surface=args.surface,
                             ice_patches=args.ice_patches, seed=args.seed,
                             obs_mode=policy.obs_mode)  # fmt: skip
        try:
            stall = find_stall(policy, env, standing_s=args.standing_s, seed=args.seed)
            return stall, None if stall is None else expert_action_at(env, seed=args.seed)
        finally:
            env.close()


if __name__ == "__main__":
    raise SystemExit(main())
