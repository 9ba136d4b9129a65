"""Read a path's shape back from its curvature: corners, elevation, summary numbers.

:func:`detect_corners` uses the rule by which the Putnam Park corner table of the project's
reference notes was derived from a lap (``vehicle-dynamics.md`` §4.2): a corner is a stretch
where ``|curvature| > 1/300 m⁻¹`` with one sign that turns by at least 15 degrees. It gives loaded
tracks their features and lets tests check built tracks against their specification.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from gym_s3.tracks.path import PathFeature, ReferencePath

#: Curvature above which a path is cornering [1/m] (a radius under 300 m); the episode metric
#: ``corner_offset_mean`` (:mod:`gym_s3.metrics`) counts its corner steps by the same bound.
CORNER_CURVATURE: float = 1.0 / 300.0


def _runs(mask: np.ndarray, closed: bool) -> list[tuple[int, int]]:
    """``(start, stop)`` index runs (stop exclusive, may exceed M on loops) where mask is True."""
    m = len(mask)
    if mask.all():
        return [(0, m)]
    if not mask.any():
        return []
    shift = int(np.argmin(mask)) if closed else 0  # start the scan at a False sample on loops
    rolled = np.roll(mask, -shift)
    edges = np.diff(np.concatenate([[0], rolled.astype(np.int8), [0]]))
    starts, stops = np.nonzero(edges == 1)[0], np.nonzero(edges == -1)[0]
    return [(int(a) + shift, int(b) + shift) for a, b in zip(starts, stops, strict=True)]


def detect_corners(
    path: ReferencePath,
    *,
    kappa_threshold: float = CORNER_CURVATURE,
    min_angle_deg: float = 15.0,
    smoothing_m: float = 5.0,
) -> tuple[PathFeature, ...]:
    """Corners of a path found from its curvature, ordered by arc length.

    Args:
        path: the path.
        kappa_threshold: curvature magnitude above which the path is cornering [1/m].
        min_angle_deg: smallest heading change that counts as a corner [deg].
        smoothing_m: width of the moving average applied to the curvature first [m].

    Returns:
        ``"corner"`` features (``s_end`` may exceed the length for a corner across the start).
    """
    kappa = path.curvature.detach().to("cpu", torch.float64).numpy()
    m = len(kappa)
    width = max(1, int(round(smoothing_m / path.ds)))
    kernel = np.ones(width) / width
    if path.closed:
        padded = np.concatenate([kappa[-width:], kappa, kappa[:width]])
        smooth = np.convolve(padded, kernel, mode="same")[width:-width]
    else:
        smooth = np.convolve(kappa, kernel, mode="same")
    features = []
    for sign in (1.0, -1.0):
        for start, stop in _runs(sign * smooth > kappa_threshold, path.closed):
            idx = np.arange(start, stop) % m
            angle = float(kappa[idx].sum() * path.ds)
            if abs(angle) < math.radians(min_angle_deg):
                continue
            features.append(
                PathFeature(
                    kind="corner",
                    s_start=start * path.ds,
                    s_end=stop * path.ds,
                    direction="L" if angle > 0 else "R",
                    angle=angle,
                    min_radius=1.0 / max(float(np.abs(kappa[idx]).max()), 1e-12),
                )
            )
    return tuple(sorted(features, key=lambda f: f.s_start))


def elevation_range(path: ReferencePath) -> tuple[float, float]:
    """Lowest and highest centreline elevation [m]."""
    z = path.xyz[:, 2]
    return float(z.min()), float(z.max())


def max_grade(path: ReferencePath) -> float:
    """Largest absolute centreline grade ``dz/ds`` [-]."""
    z = path.xyz[:, 2]
    dz = torch.roll(z, -1) - z if path.closed else z[1:] - z[:-1]
    return float(dz.abs().max()) / path.ds
