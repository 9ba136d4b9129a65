"""Circuit builder: clothoid corners, integration, loop closing, self-intersection tests."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gym_s3.errors import ConfigError
from gym_s3.tracks.geometry import (
    Corner,
    Segment,
    build_segments,
    close_loop,
    end_point,
    integrate,
    min_clearance,
    polyline_crossings,
    polyline_self_intersections,
)


@pytest.mark.parametrize("share", [0.0, 0.4, 1.0])
def test_corner_turns_by_its_angle_with_the_listed_radius(share):
    """A corner's pieces turn by exactly its angle and peak at curvature 1/R.

    ``share`` moves the length from the shortest (pure arc) to the longest (pure clothoids)
    allowed. Fails if the clothoid/arc split is wrong.
    """
    angle, radius = -1.2, 40.0
    corner = Corner(angle, radius, abs(angle) * radius * (1 + share))
    segs = corner.segments()
    assert sum(s.turn for s in segs) == pytest.approx(angle, abs=1e-12)
    assert max(abs(s.k0) for s in segs) == pytest.approx(1 / radius, rel=1e-9)
    assert sum(s.length for s in segs) == pytest.approx(corner.length)


def test_corner_length_outside_the_feasible_range_is_rejected():
    """A corner shorter than angle*R (or longer than twice that) raises with the valid range.

    Fails if an infeasible corner is silently built with another radius.
    """
    with pytest.raises(ConfigError, match="needs a length in"):
        Corner(1.0, 50.0, 40.0).segments()
    with pytest.raises(ConfigError, match="needs a length in"):
        Corner(1.0, 50.0, 101.0).segments()


def test_integrated_arc_lies_on_its_circle():
    """Integrating a constant-curvature segment gives points on the analytic circle (< 1 um).

    Fails if the Simpson integration or the sample spacing is wrong.
    """
    radius = 30.0
    line = integrate([Segment(100.0, 1 / radius, 1 / radius)], ds=0.7)
    r = np.hypot(line.x, line.y - radius)
    assert np.abs(r - radius).max() < 1e-6
    assert line.ds * (len(line.x) - 1) == pytest.approx(100.0)
    assert np.allclose(line.heading, np.arange(len(line.x)) * line.ds / radius)


def test_close_loop_closes_and_keeps_the_total_length():
    """Four 90 deg corners with uneven straights close after the adjustment (gap < 1 mm).

    Fails if the linear solve for the straight lengths is wrong.
    """
    corners = [Corner(math.pi / 2, 30.0, 70.0) for _ in range(4)]
    straights = [200.0, 90.0, 170.0, 120.0]
    closed = close_loop(straights, corners)
    ex, ey, eh = end_point(build_segments(closed, corners), ds=0.25)
    assert math.hypot(ex, ey) < 1e-3
    assert eh == pytest.approx(2 * math.pi)
    assert sum(closed) == pytest.approx(sum(straights))


def test_close_loop_rejects_corners_that_do_not_make_a_full_turn():
    """Corners adding up to 300 deg cannot close; the error says so.

    Fails if close_loop returns straights for an impossible loop.
    """
    corners = [Corner(math.radians(100), 30.0, 60.0) for _ in range(3)]
    with pytest.raises(ConfigError, match="multiple of 360"):
        close_loop([100.0, 100.0, 100.0], corners)


def test_polyline_crossings_find_a_figure_eight_and_not_a_square():
    """A figure-eight has one crossing pair; a square (closed) has none.

    Fails if crossings are missed or adjacent segments are reported.
    """
    eight_x = np.array([0.0, 10.0, 10.0, 0.0])
    eight_y = np.array([0.0, 10.0, 0.0, 10.0])
    assert polyline_crossings(eight_x, eight_y, closed=True) == [(0, 2)]
    assert polyline_self_intersections(eight_x, eight_y, closed=True) == [0, 2]
    square_x, square_y = np.array([0.0, 10.0, 10.0, 0.0]), np.array([0.0, 0.0, 10.0, 10.0])
    assert polyline_crossings(square_x, square_y, closed=True) == []


def test_min_clearance_measures_parallel_legs():
    """A hairpin whose legs are 12 m apart has a clearance of 12 m (neighbours excluded).

    Fails if the arc-separation filter or the distance is wrong.
    """
    leg = np.arange(0.0, 200.0, 1.0)
    x = np.concatenate([leg, leg[::-1]])
    y = np.concatenate([np.zeros_like(leg), np.full_like(leg, 12.0)])
    assert min_clearance(x, y, closed=False, exclude_arc=30.0, step=1.0) == pytest.approx(12.0)
