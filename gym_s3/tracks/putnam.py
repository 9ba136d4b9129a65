"""An approximation of the Putnam Park Road Course built from published facts only.

No licensed geometry is shipped. The circuit is rebuilt from:

* the length (about 2.85 km), the width (about 9 m) and the driving direction (clockwise);
* the 11 curvature segments derived from an AV-21 lap of the Indy Autonomous Challenge logs
  (start and end arc length, direction, turn angle, minimum radius; see the project's reference
  notes ``vehicle-dynamics.md`` §4.2), each built as clothoid entry, arc and clothoid exit;
* about 7 m of elevation change with the lowest point on the downhill front straight (about 180 m
  after the start line) and the highest near s = 1500 m.

The listed turn angles add up to -339 deg rather than the -360 deg of a closed clockwise lap (they
come from smoothed curvature thresholds that miss the gentle bends between segments), so every
angle is scaled by the same factor 360/339; the straights between segments are then adjusted by
the smallest length-weighted change that closes the loop (see
:func:`gym_s3.tracks.geometry.close_loop`).
The result has the real corner sequence, radii, directions and length, but it is **an
approximation**: it is labelled as such wherever it is shown. Users with the real boundary data can
load it with :mod:`gym_s3.tracks.loaders`.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from gym_s3.tracks.circuits import closed_circuit
from gym_s3.tracks.geometry import Corner, close_loop
from gym_s3.tracks.path import ReferencePath

#: Corner segments: (s_in [m], s_out [m], direction "L"/"R", turn angle [deg], min radius [m])
PUTNAM_CORNERS: tuple[tuple[float, float, str, float, float], ...] = (
    (518, 845, "R", 162, 69),
    (889, 989, "R", 37, 121),
    (1014, 1208, "L", 86, 95),
    (1369, 1492, "R", 66, 75),
    (1541, 1628, "R", 32, 124),
    (1673, 1786, "R", 115, 33),
    (1954, 2187, "L", 181, 59),
    (2203, 2249, "R", 39, 36),
    (2252, 2285, "L", 86, 11),
    (2286, 2321, "R", 42, 25),
    (2359, 2708, "R", 199, 73),
)
PUTNAM_LENGTH_M = 2850.0
PUTNAM_WIDTH_M = 9.0
PUTNAM_ELEVATION_RANGE_M = 7.0
PUTNAM_LOW_POINT_S = 180.0
PUTNAM_HIGH_POINT_S = 1500.0
PUTNAM_DESCRIPTION = (
    "Putnam Park Road Course (approximation built from published facts: length, width, direction, "
    "11 corner segments, elevation; not surveyed geometry)"
)


def putnam_corners() -> tuple[list[float], list[Corner]]:
    """Straight lengths before each corner [m] and the corners, before closing the loop."""
    listed = sum(math.radians(a) * (1 if d == "L" else -1) for _, _, d, a, _ in PUTNAM_CORNERS)
    scale = -2.0 * math.pi / listed
    straights, corners = [], []
    prev_end = 0.0
    for s_in, s_out, direction, angle_deg, radius in PUTNAM_CORNERS:
        sign = 1.0 if direction == "L" else -1.0
        straights.append(s_in - prev_end)
        corners.append(Corner(sign * math.radians(angle_deg) * scale, radius, s_out - s_in))
        prev_end = s_out
    # The lap closes through the main straight: what is left after the last corner joins the first
    # straight (s = 0 lies on the main straight).
    straights[0] += PUTNAM_LENGTH_M - prev_end
    return straights, corners


def putnam_elevation(s: np.ndarray, length: float) -> np.ndarray:
    """Smooth periodic elevation profile [m] with its minimum and maximum where listed."""
    lo, hi = PUTNAM_LOW_POINT_S, PUTNAM_HIGH_POINT_S
    s = np.mod(s - lo, length)
    rise = hi - lo
    fall = length - rise
    phase = np.where(s <= rise, math.pi * s / rise, math.pi + math.pi * (s - rise) / fall)
    return 0.5 * PUTNAM_ELEVATION_RANGE_M * (1.0 - np.cos(phase))


@lru_cache(maxsize=4)
def putnam_park(ds: float = 1.0) -> ReferencePath:
    """The Putnam Park approximation as a closed, clockwise :class:`ReferencePath`.

    The start line lies on the main straight, 518 m before corner segment 1 as in the source
    lap; the path carries the 11 corner segments as ``"corner"`` features at their built
    positions.

    Args:
        ds: sample spacing [m].
    """
    straights, corners = putnam_corners()
    # The main straight is split by the start line: `tail` metres after the last corner, the rest
    # before the first one. Both parts share one heading, so the loop is closed with them merged
    # and the start line is put back at the same share of the adjusted straight.
    lead_share = PUTNAM_CORNERS[0][0] / straights[0]
    straights = close_loop(straights, corners, heading0=0.0)
    return closed_circuit(
        "putnam",
        straights,
        corners,
        lead=lead_share * straights[0],
        ds=ds,
        width=PUTNAM_WIDTH_M,
        heading0=0.0,
        elevation=putnam_elevation,
        description=PUTNAM_DESCRIPTION,
        labels=("circuit", "approximation", "clockwise"),
    )
