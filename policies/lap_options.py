"""Command-line options shared by the lap commands, and the way to BeamNG.tech.

The lap options serve ``s3 evaluate`` and ``s3 gap``, the one-lap options the probes in
``tools/`` (``stall_probe.py``, ``replay_lap.py``); the BeamNG.tech connection serves
``s3 evaluate --beamng`` and ``s3 rollouts --simulator beamng``.

Kept apart from :mod:`policies.cli` so that each command module can use them without the two
importing each other.
"""

from __future__ import annotations

from typing import Any

from gym_s3.errors import ConfigError


def add_lap_options(p: Any, *, surfaces: str, ice_patches: str, ensemble: bool = False) -> None:
    """The options that choose the laps (shared by ``s3 evaluate`` and ``s3 gap``).

    With ``ensemble``, ``--dynamics-checkpoint`` takes several models (``s3 gap``).
    """
    p.add_argument(
        "--backend",
        default=None,
        help="S3Distilled-v0 dynamics backend (bicycle, ddm, trans, dytr) "
        "(default: the backend the policy was trained in)",
    )
    if ensemble:
        p.add_argument(
            "--dynamics-checkpoint",
            nargs="+",
            default=None,
            metavar="CHECKPOINT",
            help="dynamics checkpoint(s) of --backend: paths, backend names (their shipped "
            "model) or shipped sets (ddm:ice, the three models the shipped ddm policy trained "
            "in; ddm:ice/s0, one of them); several make the distilled side an ensemble, each "
            "lap driven in every model and the distilled metrics their mean (default: the "
            "models the policy was trained in where its record names shipped or local ones, "
            "else the shipped one of --backend; give the policy before this option)",
        )
    else:
        p.add_argument(
            "--dynamics-checkpoint",
            default=None,
            help="dynamics checkpoint of --backend: a path or one shipped model such as "
            "ddm:ice/s0 (default: the shipped one of --backend)",
        )
    p.add_argument(
        "--surfaces",
        default=surfaces,
        help="comma-separated lap surfaces: a base surface (asphalt, asphalt_wet, gravel, dirt, "
        "snow, ice) or a transition such as asphalt>ice (one 400 m full-width stretch of the "
        "second surface; quote it in a shell)",
    )
    p.add_argument(
        "--ice-patches",
        default=ice_patches,
        help="comma-separated numbers of ice patches on the lap [count]",
    )
    p.add_argument(
        "--track",
        default="putnam",
        help="track of the laps (putnam, procedural:<seed>, town:<seed>, file:<csv>)",
    )
    p.add_argument("--seed", type=int, default=0, help="episode and ice-patch placement seed")
    p.add_argument(
        "--max-steps",
        type=int,
        default=None,
        help="cap on steps per lap [steps of 50 ms] (default: a full lap)",
    )
    p.add_argument(
        "--time-limit",
        type=float,
        default=None,
        metavar="SECONDS",
        help="lap time limit [s] (default: twice the reference lap time of the friction-aware "
        "target speeds on each surface layout, e.g. about 236 s on dry Putnam, 644 s on ice)",
    )


def add_one_lap_options(p: Any, *, track: str, surface: str) -> None:
    """The policy and the one lap a probe drives: track, surface, ice patches, seed."""
    p.add_argument("policy", help="shipped policy name or checkpoint path")
    p.add_argument("--track", default=track, help="track of the lap")
    p.add_argument("--surface", default=surface,
                   help="lap surface: a base surface, or a transition ('asphalt>ice')")  # fmt: skip
    p.add_argument("--ice-patches", type=int, default=0, help="ice patches on the lap [count]")
    p.add_argument("--seed", type=int, default=0, help="seed of the lap (patch placement, reset)")


def add_beamng_options(p: Any, *, when: str) -> Any:
    """The BeamNG.tech connection options, as an argument group of ``p`` (returned).

    Args:
        p: the command's parser.
        when: the option that selects BeamNG.tech, for the group title (e.g. ``"with --beamng"``).
    """
    bng = p.add_argument_group(f"BeamNG.tech ({when}; the stand-in needs none of these)")
    bng.add_argument(
        "--host", default="127.0.0.1", help="BeamNG.tech address (default: %(default)s)"
    )
    bng.add_argument(
        "--port",
        type=int,
        default=25252,
        help="BeamNG.tech game-engine port (default: %(default)s)",
    )
    bng.add_argument(
        "--home", default=None, help="BeamNG.tech install folder, for --launch (default: none)"
    )
    bng.add_argument("--launch", action="store_true",
                     help="start BeamNG.tech from --home if nothing answers at --host/--port "
                     "(only a simulator started this way is closed at the end)")  # fmt: skip
    bng.add_argument(
        "--level", default="smallgrid", help="level with a large flat area (default: %(default)s)"
    )
    bng.add_argument(
        "--vehicle", default="etk800", help="BeamNG vehicle model id (default: %(default)s)"
    )
    bng.add_argument("--socket-timeout", type=float, default=10.0,
                     help="wait this long for any answer before a timeout error [s] "
                     "(default: %(default)s)")  # fmt: skip
    return bng


def beamng_options(args: Any, *, active: bool, how: str) -> dict[str, Any]:
    """The BeamNG.tech connection of :func:`add_beamng_options`'s options (``{}`` unless active).

    Args:
        args: the parsed options.
        active: whether the command drives in BeamNG.tech.
        how: the option that selects BeamNG.tech, for the error (e.g. ``"--beamng"``).

    Raises:
        ConfigError: ``--launch`` or ``--home`` without BeamNG.tech selected.
    """
    if not active:
        if args.launch or args.home:
            raise ConfigError(f"--launch and --home are BeamNG.tech options; add {how}")
        return {}
    return dict(host=args.host, port=args.port, home=args.home, launch=args.launch,
                level=args.level, vehicle_model=args.vehicle,
                socket_timeout=args.socket_timeout)  # fmt: skip


def csv_list(text: str, kind: type) -> list:
    """Parse a comma-separated option into ``kind`` values."""
    try:
        return [kind(x.strip()) for x in text.split(",") if x.strip()]
    except ValueError as exc:
        raise ConfigError(f"could not parse '{text}' as a comma-separated list: {exc}") from exc
