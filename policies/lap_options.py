"""Command-line options shared by the lap commands (``s3 evaluate``, ``s3 gap``).

Kept apart from :mod:`policies.cli` so that each command module can use them without the two
importing each other.
"""

from __future__ import annotations

from typing import Any

from gym_s3.errors import ConfigError


def add_lap_options(p: Any, *, surfaces: str, ice_patches: str) -> None:
    """The options that choose the laps (shared by ``s3 evaluate`` and ``s3 gap``)."""
    p.add_argument(
        "--backend",
        default=None,
        help="S3Distilled-v0 dynamics backend (bicycle, ddm, trans, dytr) "
        "(default: the backend the policy was trained in)",
    )
    p.add_argument(
        "--dynamics-checkpoint",
        default=None,
        help="dynamics checkpoint of --backend (default: the shipped one)",
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


def csv_list(text: str, kind: type) -> list:
    """Parse a comma-separated option into ``kind`` values."""
    try:
        return [kind(x.strip()) for x in text.split(",") if x.strip()]
    except ValueError as exc:
        raise ConfigError(f"could not parse '{text}' as a comma-separated list: {exc}") from exc
