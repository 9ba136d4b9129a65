"""The Putnam Park approximation against its published facts (reference notes §4)."""

from __future__ import annotations

import math

import numpy as np
import torch

from gym_s3.tracks.analysis import detect_corners
from gym_s3.tracks.circuits import turn_direction
from gym_s3.tracks.geometry import min_clearance, polyline_self_intersections
from gym_s3.tracks.putnam import PUTNAM_CORNERS


def test_length_is_2850_m_within_2_percent(putnam):
    """The lap is 2.85 km long (within 2 %). Fails if the straights were not closed right."""
    assert abs(putnam.length - 2850.0) / 2850.0 < 0.02


def test_loop_is_closed_with_continuous_heading(putnam):
    """The end meets the start within 1 cm, heading and curvature are continuous, net turn -2 pi.

    Fails if the closing segment leaves a gap or a kink, or the lap runs counter-clockwise.
    """
    end = putnam.sample(torch.tensor([putnam.length * (1 - 1e-12)], dtype=torch.float64))
    gap = math.hypot(float(end.x[0] - putnam.xyz[0, 0]), float(end.y[0] - putnam.xyz[0, 1]))
    assert gap < 0.01
    k = putnam.curvature
    h_end = float(putnam.heading[-1] + 0.5 * (k[-1] + k[0]) * putnam.ds)
    assert abs(h_end - float(putnam.heading[0]) + 2 * math.pi) < 1e-3
    steps = torch.diff(putnam.heading)
    assert steps.abs().max() < 0.1  # no jump between samples (tightest corner: 11 m radius)
    assert turn_direction(putnam) == "clockwise"


def test_eleven_corners_in_the_listed_order_direction_and_radius(putnam):
    """Corners found from the curvature (|k| > 1/300, >= 15 deg) match the table of §4.2.

    Same count, order and direction; minimum radius within 2 %; positions within 40 m. Fails if
    a corner was built with the wrong sign, radius or place.
    """
    found = detect_corners(putnam)
    assert len(found) == len(PUTNAM_CORNERS) == 11
    for corner, (s_in, s_out, direction, angle_deg, radius) in zip(
        found, PUTNAM_CORNERS, strict=True
    ):
        assert corner.direction == direction
        assert abs(corner.min_radius - radius) / radius < 0.02
        assert abs((corner.s_start + corner.s_end) / 2 - (s_in + s_out) / 2) < 40.0
        # listed angles add up to 339 deg and are scaled by 360/339 to close the lap
        assert abs(math.degrees(abs(corner.angle)) - angle_deg * 360 / 339) < 0.1 * angle_deg
    assert [f.direction for f in putnam.features] == [c[2] for c in PUTNAM_CORNERS]


def test_width_elevation_and_labels(putnam):
    """9 m wide, ~7 m of elevation, downhill front straight, labelled as an approximation.

    The low point lies on the front straight ~180 m after the start line. Fails if the elevation
    profile or the provenance label is lost.
    """
    assert torch.allclose(
        putnam.width_left + putnam.width_right, torch.full_like(putnam.width_left, 9.0)
    )
    z = putnam.xyz[:, 2].numpy()
    assert abs(z.max() - z.min() - 7.0) < 0.5
    assert abs(int(np.argmin(z)) * putnam.ds - 180.0) < 30.0
    last_corner_end = int(putnam.features[-1].s_end / putnam.ds)
    downhill = np.concatenate([z[last_corner_end:], z[:180]])
    assert (np.diff(downhill) <= 1e-12).all()
    assert "approximation" in putnam.labels and "approximation" in putnam.description


def test_centreline_never_crosses_or_crowds_itself(putnam):
    """No self-intersection, and separate parts of the lap stay > 2 road widths apart.

    Fails if the closing adjustment folded the track onto itself.
    """
    x, y = putnam.xyz[:, 0].numpy(), putnam.xyz[:, 1].numpy()
    assert polyline_self_intersections(x, y, closed=True) == []
    assert min_clearance(x, y, closed=True, exclude_arc=60.0) > 18.0
