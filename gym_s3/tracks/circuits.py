"""Turn a closed list of straights and corners into a :class:`ReferencePath` with its features.

Shared by the Putnam Park approximation and the procedural circuits: the loop is integrated with
:func:`~gym_s3.tracks.geometry.integrate`, the start line is placed on the first straight, an
elevation profile and constant widths are attached, and every corner becomes a
:class:`~gym_s3.tracks.path.PathFeature` at its built arc-length position.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from gym_s3.errors import ConfigError
from gym_s3.tracks.geometry import Corner, Segment, build_segments, integrate
from gym_s3.tracks.path import PathFeature, ReferencePath

#: elevation profile: (s [m] of every sample, lap length [m]) -> z [m]
ElevationFn = Callable[[np.ndarray, float], np.ndarray]


def corner_features(
    straights: Sequence[float], corners: Sequence[Corner]
) -> tuple[PathFeature, ...]:
    """The corners of ``straight[0], corner[0], straight[1], ...`` as ``"corner"`` features.

    Args:
        straights: straight length before each corner [m].
        corners: the corners.
    """
    features, s = [], 0.0
    for straight, corner in zip(straights, corners, strict=True):
        s += float(straight) if straight > 1e-9 else 0.0
        features.append(
            PathFeature(
                kind="corner",
                s_start=s,
                s_end=s + corner.length,
                direction="L" if corner.angle > 0 else "R",
                angle=corner.angle,
                min_radius=corner.min_radius,
            )
        )
        s += corner.length
    return tuple(features)


def closed_circuit(
    name: str,
    straights: Sequence[float],
    corners: Sequence[Corner],
    *,
    lead: float,
    ds: float,
    width: float,
    heading0: float = 0.0,
    elevation: ElevationFn | None = None,
    description: str = "",
    labels: tuple[str, ...] = (),
) -> ReferencePath:
    """Integrate an already closed loop into a :class:`ReferencePath` starting on straight 0.

    Args:
        name: path name.
        straights: straight lengths that close the loop with ``corners`` (see
            :func:`~gym_s3.tracks.geometry.close_loop`) [m].
        corners: the corners.
        lead: distance from the start line to the first corner [m]; the rest of the first
            straight is driven at the end of the lap.
        ds: sample spacing [m].
        width: total road width, split evenly left and right [m].
        heading0: heading at the start line [rad].
        elevation: optional elevation profile; flat when ``None``.
        description: provenance text.
        labels: tags.
    """
    if not 0.0 <= lead <= straights[0]:
        raise ConfigError(f"start line lead {lead} m must lie within the first straight")
    tail = float(straights[0]) - lead
    head = [lead, *straights[1:]]
    segments = build_segments(head, corners)
    if tail > 1e-9:
        segments.append(Segment(tail))
    line = integrate(segments, ds=ds, heading0=heading0, closed=True)
    m = len(line.x)
    s = np.arange(m) * line.ds
    z = np.zeros(m) if elevation is None else elevation(s, m * line.ds)
    half = np.full(m, width / 2.0)
    features = corner_features(head, corners)  # integrate() keeps the total length exactly
    return ReferencePath.from_arrays(
        name,
        np.stack([line.x, line.y, z], axis=1),
        line.heading,
        line.curvature,
        half,
        half.copy(),
        ds=line.ds,
        closed=True,
        description=description,
        labels=labels,
        features=features,
    )


def turn_direction(path: ReferencePath) -> str:
    """``"clockwise"`` or ``"counter-clockwise"`` for a closed path (by its net heading change)."""
    turn = float(path.heading[-1] - path.heading[0] + path.segment_curvature[-1] * path.ds)
    return "clockwise" if turn < -math.pi else "counter-clockwise"
