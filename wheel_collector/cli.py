"""``s3 collect`` / ``python -m wheel_collector``: record driving with a wheel, keyboard or expert.

Examples::

    s3 collect --standin --device expert --track putnam --surface snow --duration 120
    s3 collect --device wheel --calibrate --standin        # then drive the stand-in
    s3 collect --host 192.168.1.5 --port 25252 --device wheel --track putnam --ice-patches 4

The session drives BeamNG.tech or the open stand-in through beamngpy at 20 Hz in deterministic
stepping and writes one Parquet file per episode (:mod:`gym_s3.data`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from gym_s3.cli_parser import S3ArgumentParser
from gym_s3.errors import ConfigError, S3Error
from gym_s3.interrupts import interrupt_exit_code, stop_signals_interrupt

DESCRIPTION = (
    "Drive a car in BeamNG.tech or the open stand-in with a racing wheel, the keyboard or the "
    "scripted expert, and record crash-safe driving logs (one Parquet file per episode). "
    "Unplugging the wheel sends safe controls (no throttle, half brake) and pauses recording; "
    "plugging it back in resumes. Wheel buttons / keys: pause (P), reset (R), quit (Esc)."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``s3 collect``."""
    dev = parser.add_argument_group("input device")
    dev.add_argument(
        "--device",
        choices=("wheel", "keyboard", "expert"),
        default="wheel",
        help="who drives: a racing wheel, the keyboard or the scripted expert",
    )
    dev.add_argument(
        "--calibrate",
        action="store_true",
        help="run the wheel calibration wizard first and store the result",
    )
    dev.add_argument(
        "--wheel",
        default=None,
        metavar="NAME_OR_GUID",
        help="only use a wheel whose name contains this text (or with this GUID)",
    )
    dev.add_argument(
        "--reconnect",
        choices=("same", "any"),
        default="same",
        help="after an unplug, resume with the same wheel only, or with any wheel",
    )
    dev.add_argument("--seed", type=int, default=0, help="seed of the expert's noise and events")
    dev.add_argument(
        "--perturbations",
        type=float,
        default=1.0,
        metavar="FACTOR",
        help="expert perturbation rates x FACTOR (0 = none) [-]",
    )
    scene = parser.add_argument_group("scene")
    scene.add_argument(
        "--track",
        default="putnam",
        help="track name: putnam, procedural:<seed>, town:<seed>, file:<csv>",
    )
    scene.add_argument(
        "--surface",
        default="asphalt",
        help="base surface: asphalt, asphalt_wet, gravel, dirt, snow, ice",
    )
    scene.add_argument(
        "--ice-patches",
        type=int,
        default=0,
        metavar="K",
        help="number of ice patches along the track [count]",
    )
    scene.add_argument("--layout-seed", type=int, default=0, help="seed of the patch placement")
    scene.add_argument(
        "--start", type=float, default=0.0, metavar="S", help="start position along the track [m]"
    )
    sim = parser.add_argument_group("simulator")
    sim.add_argument(
        "--standin",
        action="store_true",
        help="start the open stand-in in-process (ignores --host/--port)",
    )
    sim.add_argument("--host", default="127.0.0.1", help="address of BeamNG.tech or a stand-in")
    sim.add_argument("--port", type=int, default=25252, help="game-engine port of the simulator")
    sim.add_argument("--level", default="smallgrid", help="BeamNG level with a large flat area")
    sim.add_argument(
        "--timeout", type=float, default=10.0, help="seconds to wait for any simulator answer [s]"
    )
    rec = parser.add_argument_group("recording")
    rec.add_argument(
        "--out", default="data/sessions", metavar="DIR", help="folder of the episode files"
    )
    rec.add_argument(
        "--duration",
        type=float,
        default=300.0,
        help="simulated time of the session, 0 = until quit [s]",
    )
    rec.add_argument(
        "--episode-length",
        type=float,
        default=120.0,
        help="longest episode (time limit); the next file and episode go on where the car is [s]",
    )
    rec.add_argument("--session-id", default=None, help="session id (default: time and device)")
    rec.add_argument(
        "--realtime",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="pace at 20 Hz wall time (default: on for wheel/keyboard, off for expert)",
    )
    rec.add_argument(
        "--hud",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="show the heads-up display window (default: on for wheel/keyboard)",
    )
    rec.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch CPU threads of the session and an in-process stand-in [count]; 1 is fastest "
        "for one car",
    )


def register(subparsers: Any) -> None:
    """Add the ``collect`` command to the ``s3`` parser."""
    parser = subparsers.add_parser(
        "collect",
        help="record driving with a racing wheel, the keyboard or the scripted expert",
        description=DESCRIPTION,
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    add_arguments(parser)
    parser.set_defaults(func=run_collect)


def _source(args: argparse.Namespace) -> Any:
    """The input source the options ask for (calibrating a wheel first if asked)."""
    if args.device == "expert":
        from wheel_collector.expert import ExpertConfig, ExpertInput, PerturbationConfig

        pert = PerturbationConfig().scaled(args.perturbations)
        return ExpertInput(ExpertConfig(perturbations=pert), seed=args.seed)
    if args.device == "keyboard":
        from wheel_collector.keyboard import KeyboardInput

        return KeyboardInput()
    from wheel_collector.store import CalibrationStore
    from wheel_collector.wheel import WheelInput

    wheel = WheelInput(device=args.wheel, reconnect=args.reconnect)
    try:
        wheel.require_connected(
            hint=", choose another one with --wheel NAME, or drive with `--device keyboard` "
            "(or `--device expert`)"
        )
    except ConfigError:
        wheel.close()
        raise
    if args.calibrate:
        from wheel_collector.wizard import calibrate

        calibration = calibrate(wheel)
        path = CalibrationStore().save(calibration)
        wheel.set_calibration(calibration)
        print(f"calibration saved to {path}")
    return wheel


def run_collect(args: argparse.Namespace) -> int:
    """Run a collection session with the parsed options."""
    import torch

    from gym_s3.beamng.client.link import BeamNGConfig
    from wheel_collector.session import CollectionSession, SessionConfig

    if args.threads < 1:
        raise ConfigError(f"--threads must be >= 1, got {args.threads}")
    torch.set_num_threads(args.threads)
    human = args.device != "expert"
    sim = BeamNGConfig(host=args.host, port=args.port, standin=args.standin, level=args.level,
                       socket_timeout=args.timeout)  # fmt: skip
    config = SessionConfig(
        out_dir=args.out, track=args.track, surface=args.surface, ice_patches=args.ice_patches,
        layout_seed=args.layout_seed, start_s=args.start, duration_s=args.duration,
        episode_s=args.episode_length, realtime=human if args.realtime is None else args.realtime,
        session_id=args.session_id, sim=sim,
    )  # fmt: skip
    source = _source(args)  # first: a missing wheel fails here, before any window opens
    hud = None
    if human if args.hud is None else args.hud:
        from wheel_collector.hud import Hud

        hud = Hud(window=True)
    session = CollectionSession(config, source, hud=hud,
                                seed=args.seed if args.device == "expert" else None)  # fmt: skip
    print(f"session {session.session_id}: {args.device} on {args.track} ({args.surface}, "
          f"{args.ice_patches} ice patches), writing to {args.out}")  # fmt: skip
    try:
        with session:
            stats = session.run()
    finally:
        if hud is not None:
            hud.close()
    print(
        f"{stats.steps} steps, {stats.recorded} rows recorded in {len(stats.episodes)} "
        f"episodes ({stats.safe_steps} steps with safe controls, {stats.dropouts} unplugs)"
    )
    for path in stats.episodes:
        print(f"  {path}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m wheel_collector``: the same options as ``s3 collect``."""
    parser = S3ArgumentParser(
        prog="python -m wheel_collector",
        description=DESCRIPTION,
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        with stop_signals_interrupt():  # SIGTERM (a service stop) ends like Ctrl-C
            return run_collect(args)
    except S3Error as exc:
        print(f"collect: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        print("collect: interrupted (episodes recorded so far are saved)", file=sys.stderr)
        return interrupt_exit_code(exc)
