"""Open-loop low-speed manoeuvres in every distilled backend against the stand-in (sim-to-sim gap).

One car starts at rest at the start line of a lap (``--track``, uniform ``--surface``), presses
``--throttle`` for ``--accel-s`` seconds straight ahead, then holds ``[--steer, --accel]`` (brake
if ``--accel`` < 0) for ``--hold-s`` seconds. The same commands drive ``S3Distilled-v0`` on each
backend and ``S3BeamNG-v0`` on the open stand-in (started here, compiled physics). The table gives
each side's speed when the manoeuvre starts, its speed at the end, the time it took to come to rest
(below 0.05 m/s) and its lowest speed (below 0: rolling backwards under the brake).

Found with it (round 20, procedural 201 ice, from 3.6 m/s): braking at 0.25 with the steering at
-0.85 stops the stand-in in 4.95 s, while ``ddm`` and ``dytr`` creep on at 0.16 / 0.14 m/s under
the brake for good; coasting at that lock the stand-in loses 1.2 m/s in 10 s, the learned models
0.3-0.4 m/s; ``trans`` rolled backwards under the brake once stopped (since round 21 every
backend step bounds that: ``gym_s3.dynamics.base.brakes_never_reverse``).

    python tools/low_speed_probe.py --steer -0.85 --accel -0.25
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import numpy as np
from rich.markup import escape
from rich.table import Table

from gym_s3.errors import ConfigError, S3Error
from gym_s3.progress import result_console
from gym_s3.spec import CONTROL_DT_S, feature_index

#: Speed below which a car counts as at rest [m/s].
REST_SPEED_MPS = 0.05


@dataclass(frozen=True)
class Manoeuvre:
    """An open-loop command sequence from rest.

    Attributes:
        throttle: throttle of the run-up, straight ahead [1].
        accel_s: duration of the run-up [s].
        steer: steering of the held phase, + right [1].
        accel: accel command of the held phase (< 0: brake) [1].
        hold_s: duration of the held phase [s].
    """

    throttle: float = 0.05
    accel_s: float = 15.0
    steer: float = -0.85
    accel: float = -0.25
    hold_s: float = 10.0

    def __post_init__(self) -> None:
        for name in ("throttle", "steer", "accel"):
            if not -1.0 <= getattr(self, name) <= 1.0:
                raise ConfigError(f"--{name} must lie in [-1, 1], got {getattr(self, name)}")
        if not (self.accel_s >= 0.0 and self.hold_s > 0.0):
            raise ConfigError(
                f"--accel-s must be >= 0 and --hold-s > 0 [s], got {self.accel_s}, {self.hold_s}"
            )

    def actions(self) -> tuple[np.ndarray, int]:
        """``(T, 2)`` float32 commands and the index of the first held step."""
        run_up = round(self.accel_s / CONTROL_DT_S)
        hold = round(self.hold_s / CONTROL_DT_S)
        acts = np.zeros((run_up + hold, 2), np.float32)
        acts[:run_up, 1] = self.throttle
        acts[run_up:] = (self.steer, self.accel)
        return acts, run_up


def drive(env: object, actions: np.ndarray) -> np.ndarray:
    """``(T + 1,)`` forward speed [m/s] of the car under ``actions`` (until the episode ends)."""
    v_long = feature_index("v_long")
    obs, _ = env.reset(seed=0)  # type: ignore[attr-defined]
    speed = [float(obs[v_long])]
    try:
        for action in actions:
            obs, _, terminated, truncated, _ = env.step(action)  # type: ignore[attr-defined]
            speed.append(float(obs[v_long]))
            if terminated or truncated:
                break
    finally:
        env.close()  # type: ignore[attr-defined]
    return np.asarray(speed)


def summarise(speed: np.ndarray, start: int) -> dict[str, float | None]:
    """Speed at the start and end of the held phase, time to rest and lowest speed of it.

    Raises:
        ConfigError: the episode ended (off the road, past a corner) before the held phase.
    """
    held = speed[start:]
    if not len(held):
        raise ConfigError(
            f"the car's episode ended after {(len(speed) - 1) * CONTROL_DT_S:.1f} s, before the "
            f"held phase (off the road at the first corner?): shorten --accel-s or lower "
            f"--throttle"
        )
    rest = np.nonzero(np.abs(held) < REST_SPEED_MPS)[0]
    return {
        "v_start": float(held[0]),
        "v_end": float(held[-1]),
        "time_to_rest_s": float(rest[0] * CONTROL_DT_S) if len(rest) else None,
        "v_min": float(held.min()),
    }


def probe(
    manoeuvre: Manoeuvre, *, track: str, surface: str, backends: list[str]
) -> dict[str, dict[str, float | None]]:
    """:func:`summarise` of the manoeuvre per side: each distilled backend and the stand-in.

    ``backends`` entries are backend names (the shipped checkpoint) or ``NAME=CHECKPOINT``.
    """
    from gym_s3.tracks.lap_layouts import lap_layout
    from gym_s3.tracks.registry import cached_track
    from policies.evaluate import beamng_lap_env, simulator
    from policies.evaluate_distilled import distilled_lap_env

    actions, start = manoeuvre.actions()
    layout = lap_layout(cached_track(track), surface, 0, 0)
    out = {}
    for entry in backends:
        backend, _, checkpoint = entry.partition("=")
        env = distilled_lap_env(track, layout, backend=backend, obs_mode="default",
                                checkpoint=checkpoint or None)  # fmt: skip
        name = f"S3Distilled-v0/{backend}" + (f" ({checkpoint})" if checkpoint else "")
        out[name] = summarise(drive(env, actions), start)
    with simulator(standin=True, fast=True) as (_, connect):
        env = beamng_lap_env(connect, track=track, surface=surface, ice_patches=0, seed=0,
                             obs_mode="default")  # fmt: skip
        out["S3BeamNG-v0 (open stand-in)"] = summarise(drive(env, actions), start)
    return out


def main(argv: list[str] | None = None) -> int:
    """Run the probe and print the table; exit status 0 (2 on bad input)."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)  # fmt: skip
    d = Manoeuvre()
    p.add_argument("--track", default="procedural:201", help="track whose start line is used")
    p.add_argument("--surface", default="ice", help="uniform lap surface")
    p.add_argument("--throttle", type=float, default=d.throttle,
                   help="run-up throttle, straight ahead, in [-1, 1] [1]")  # fmt: skip
    p.add_argument("--accel-s", type=float, default=d.accel_s, help="run-up duration, >= 0 [s]")
    p.add_argument("--steer", type=float, default=d.steer,
                   help="steering of the held phase, + right, in [-1, 1] [1]")  # fmt: skip
    p.add_argument("--accel", type=float, default=d.accel,
                   help="accel of the held phase, < 0 brake, in [-1, 1] [1]")  # fmt: skip
    p.add_argument("--hold-s", type=float, default=d.hold_s, help="held phase duration, > 0 [s]")
    p.add_argument("--backends", default="ddm,trans,dytr",
                   help="comma-separated distilled backends, each a name (its shipped "
                   "checkpoint) or NAME=CHECKPOINT, e.g. ddm=runs/dynamics/ddm")  # fmt: skip
    args = p.parse_args(argv)
    try:
        manoeuvre = Manoeuvre(args.throttle, args.accel_s, args.steer, args.accel, args.hold_s)
        backends = [b.strip() for b in args.backends.split(",") if b.strip()]
        rows = probe(manoeuvre, track=args.track, surface=args.surface, backends=backends)
    except S3Error as err:
        p.error(str(err))
    table = Table(title=f"{args.track} {args.surface}: throttle {manoeuvre.throttle:g} for "
                  f"{manoeuvre.accel_s:g} s, then steer {manoeuvre.steer:+g}, accel "
                  f"{manoeuvre.accel:+g} for {manoeuvre.hold_s:g} s")  # fmt: skip
    for col in ("simulator", "speed at start [m/s]", "speed at end [m/s]", "time to rest [s]",
                "lowest speed [m/s]"):  # fmt: skip
        table.add_column(escape(col), justify="left" if col == "simulator" else "right")
    for name, r in rows.items():
        rest = "-" if r["time_to_rest_s"] is None else f"{r['time_to_rest_s']:.2f}"
        table.add_row(name, f"{r['v_start']:.2f}", f"{r['v_end']:.3f}", rest, f"{r['v_min']:.3f}")
    result_console().print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
