"""Loaders for user geometry: TUMFTM centreline CSVs and boundary polylines, and their errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from gym_s3.errors import TrackFormatError
from gym_s3.tracks.loaders import load_boundaries, load_tumftm_csv

A, B = 300.0, 150.0  # ellipse semi-axes [m]


def _ellipse(n: int = 300) -> tuple[np.ndarray, np.ndarray]:
    """Counter-clockwise ellipse points and unit outward normals."""
    t = np.linspace(0.0, 2 * np.pi, n, endpoint=False)
    pts = np.stack([A * np.cos(t), B * np.sin(t)], axis=1)
    normal = np.stack([B * np.cos(t), A * np.sin(t)], axis=1)
    return pts, normal / np.linalg.norm(normal, axis=1, keepdims=True)


def _tumftm_lines(pts: np.ndarray, right: float = 4.0, left: float = 5.0) -> list[str]:
    """A TUMFTM file body with its header."""
    rows = [f"{x:.4f},{y:.4f},{right},{left}" for x, y in pts]
    return ["# x_m,y_m,w_tr_right_m,w_tr_left_m", *rows]


def test_tumftm_ellipse_matches_the_analytic_shape(write_csv):
    """An ellipse file loads as a closed path with the ellipse's length, curvature and widths.

    Length within 0.1 % of Ramanujan's formula, curvature within 1e-4 1/m of the analytic one,
    widths as written. Fails if resampling, smoothing or width transfer is wrong.
    """
    pts, _ = _ellipse()
    path = load_tumftm_csv(write_csv("ellipse.csv", _tumftm_lines(pts)), ds=1.0)
    perimeter = math.pi * (3 * (A + B) - math.sqrt((3 * A + B) * (A + 3 * B)))
    assert path.closed and abs(path.length - perimeter) / perimeter < 1e-3
    x, y = path.xyz[:, 0].numpy(), path.xyz[:, 1].numpy()
    t = np.arctan2(y / B, x / A)
    kappa = A * B / ((A * np.sin(t)) ** 2 + (B * np.cos(t)) ** 2) ** 1.5
    assert np.abs(path.curvature.numpy() - kappa).max() < 1e-4
    assert torch.allclose(path.width_left, torch.full_like(path.width_left, 5.0))
    assert torch.allclose(path.width_right, torch.full_like(path.width_right, 4.0))
    assert path.name == "ellipse" and len(path.features) == 2  # the two ends of the ellipse


def test_tumftm_variants_headerless_elevation_and_closing_repeat(write_csv):
    """Header-less 4 columns after a comment, a z_m column and a repeated closing point load.

    Fails if any common variant of the format is rejected or loses elevation.
    """
    pts, _ = _ellipse(120)
    plain = [f"{x},{y},4,4" for x, y in pts] + [f"{pts[0, 0]},{pts[0, 1]},4,4"]
    assert load_tumftm_csv(write_csv("plain.csv", ["# exported by some tool", *plain])).closed
    z = 3.0 + np.sin(np.linspace(0, 2 * np.pi, len(pts), endpoint=False))
    rows = [f"{x} {y} {zz} 4 4" for (x, y), zz in zip(pts, z, strict=True)]
    path = load_tumftm_csv(write_csv("z.csv", ["x_m y_m z_m w_tr_right_m w_tr_left_m", *rows]))
    assert abs(float(path.xyz[:, 2].max()) - 4.0) < 0.01
    assert abs(float(path.xyz[:, 2].min()) - 2.0) < 0.01


def _bad_file(kind: str) -> tuple[list[str], str]:
    """Lines of a malformed TUMFTM file and the regex its error must match."""
    pts, _ = _ellipse(40)
    lines = _tumftm_lines(pts)
    if kind == "nan":
        lines[7] = "nan,1.0,4,4"
        return lines, r"bad\.csv, line 8: column 'x_m' is 'nan'.*Fix:"
    if kind == "text":
        lines[3] = "12.0,abc,4,4"
        return lines, r"bad\.csv, line 4: column 'y_m' holds 'abc'.*Fix:"
    if kind == "columns":
        lines[5] = "1.0,2.0,4"
        return lines, r"bad\.csv, line 6: found 3 columns, expected 4.*Fix:"
    if kind == "few":
        return lines[:3], r"bad\.csv: lines 2-3 hold only 2 points.*at least 4.*Fix:"
    if kind == "duplicate":
        lines.insert(10, lines[9])
        return lines, r"bad\.csv, line 11: repeats the point of line 10.*Fix: delete one"
    if kind == "crossing":
        loop = [(0, 0), (100, 0), (100, 50), (30, 50), (30, -40), (0, -40)]  # 3rd leg cuts 1st
        body = [f"{x},{y},3,3" for x, y in loop]
        return ["# x_m,y_m,w_tr_right_m,w_tr_left_m", *body], (
            r"bad\.csv, line 2: the polyline crosses itself: the segment of lines 2-3 crosses "
            r"the segment of lines 5-6.*Fix:"
        )
    if kind == "negative":
        lines[12] = lines[12].rsplit(",", 1)[0] + ",-1.5"
        return lines, r"bad\.csv, line 13: w_tr_left_m = -1.5 is negative.*Fix:"
    raise AssertionError(kind)


@pytest.mark.parametrize(
    "kind", ["nan", "text", "columns", "few", "duplicate", "crossing", "negative"]
)
def test_malformed_tumftm_files_name_file_line_and_fix(write_csv, kind):
    """Each kind of malformed file raises TrackFormatError naming the file, the line and a fix.

    Fails if bad data is accepted or the message does not point at the problem.
    """
    lines, pattern = _bad_file(kind)
    with pytest.raises(TrackFormatError, match=pattern):
        load_tumftm_csv(write_csv("bad.csv", lines))


def test_boundaries_give_the_midline_and_widths(write_csv):
    """Left/right edges 9 m apart give a centreline midway and widths of 4.5 m each side.

    The right edge has half as many points as the left. Fails if the midline or widths are wrong.
    """
    pts, normal = _ellipse(400)
    left = pts - 5.0 * normal  # counter-clockwise: left of travel is inside
    right = (pts + 4.0 * normal)[::2]
    lf = write_csv("left.csv", ["# left edge", "x_m,y_m", *[f"{x},{y}" for x, y in left]])
    rf = write_csv("right.csv", [f"{x},{y},0.0" for x, y in right])
    path = load_boundaries(lf, rf)
    assert path.closed and path.name == "left"
    assert torch.allclose(path.width_left, torch.full_like(path.width_left, 4.5), atol=0.05)
    assert torch.allclose(path.width_right, torch.full_like(path.width_right, 4.5), atol=0.05)


def test_swapped_boundaries_and_open_roads(write_csv):
    """Swapped edges raise with the fix "swap the two files"; an open U-road loads as open.

    Fails if side checking or open/closed detection is wrong.
    """
    pts, normal = _ellipse(400)
    lf = write_csv("l.csv", [f"{x},{y}" for x, y in pts - 4.0 * normal])
    rf = write_csv("r.csv", [f"{x},{y}" for x, y in pts + 4.0 * normal])
    with pytest.raises(TrackFormatError, match="swap the two files"):
        load_boundaries(rf, lf)
    half = slice(0, 200)  # half an ellipse: an open road
    lo = write_csv("lo.csv", [f"{x},{y}" for x, y in (pts - 4.0 * normal)[half]])
    ro = write_csv("ro.csv", [f"{x},{y}" for x, y in (pts + 4.0 * normal)[half]])
    path = load_boundaries(lo, ro)
    assert not path.closed
    assert abs(path.length - 0.5 * 2 * math.pi * math.sqrt((A**2 + B**2) / 2)) < 60.0
