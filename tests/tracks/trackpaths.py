"""Analytic reference paths for the track tests (a circle and a straight)."""

from __future__ import annotations

import math

import numpy as np

from gym_s3.tracks.geometry import Segment, integrate
from gym_s3.tracks.path import ReferencePath


def circle_path(radius: float = 50.0, ds: float = 1.0) -> ReferencePath:
    """Closed counter-clockwise circle centred at (0, radius), starting at the origin heading +x."""
    line = integrate([Segment(2 * math.pi * radius, 1 / radius, 1 / radius)], ds=ds, closed=True)
    m = len(line.x)
    half = np.full(m, 4.0)
    xyz = np.stack([line.x, line.y, np.zeros(m)], axis=1)
    return ReferencePath.from_arrays(
        "circle", xyz, line.heading, line.curvature, half, half, ds=line.ds, closed=True
    )


def straight_path(length: float = 200.0, ds: float = 1.0) -> ReferencePath:
    """Open straight along +x from the origin."""
    m = int(round(length / ds)) + 1
    zeros, half = np.zeros(m), np.full(m, 4.0)
    xyz = np.stack([np.arange(m) * ds, zeros, zeros], axis=1)
    return ReferencePath.from_arrays("straight", xyz, zeros, zeros, half, half, ds=ds, closed=False)
