"""ReferencePath: Frenet projection against analytic answers, batching, windowing, sampling."""

from __future__ import annotations

import math

import pytest
import torch
from trackpaths import circle_path, straight_path

from gym_s3.errors import ConfigError
from gym_s3.tracks.path import ReferencePath, wrap_angle

F64 = torch.float64


def _near_points(path: ReferencePath, n: int, seed: int, spread: float = 3.0) -> torch.Tensor:
    """``(n, 2)`` points within ``spread`` metres of the centreline (laterally), seeded."""
    gen = torch.Generator().manual_seed(seed)
    s = torch.rand(n, generator=gen, dtype=F64) * path.length
    d = (torch.rand(n, generator=gen, dtype=F64) * 2 - 1) * spread
    smp = path.sample(s)
    return torch.stack([smp.x - d * torch.sin(smp.heading), smp.y + d * torch.cos(smp.heading)], 1)


def test_projection_matches_analytic_circle():
    """Points around a circle of radius 50 m project to s = R * angle and d = R - r within 1 mm.

    Fails if the arc projection (foot point, signed offset or wrapping of s) is wrong.
    """
    radius = 50.0
    path = circle_path(radius)
    gen = torch.Generator().manual_seed(0)
    theta = torch.rand(500, generator=gen, dtype=F64) * 2 * math.pi
    r = radius + (torch.rand(500, generator=gen, dtype=F64) * 2 - 1) * 8.0
    centre = torch.tensor([0.0, radius], dtype=F64)
    pts = centre + torch.stack([r * torch.sin(theta), -r * torch.cos(theta)], 1)
    fr = path.project(pts)
    ds_err = torch.remainder(fr.s - radius * theta + math.pi * radius, 2 * math.pi * radius)
    assert (ds_err - math.pi * radius).abs().max() < 1e-3
    assert (fr.d - (radius - r)).abs().max() < 1e-3
    assert wrap_angle(fr.heading - theta).abs().max() < 1e-6
    assert torch.allclose(fr.curvature, torch.full_like(fr.curvature, 1 / radius))


def test_projection_matches_analytic_straight_including_beyond_the_ends():
    """On a straight, s = x and d = y within 1 mm, also before the start and past the end.

    Fails if open-path extrapolation along the end arcs is wrong.
    """
    path = straight_path(200.0)
    x = torch.linspace(-20.0, 230.0, 401, dtype=F64)
    y = torch.linspace(-6.0, 6.0, 401, dtype=F64).flip(0)
    fr = path.project(torch.stack([x, y], 1))
    assert (fr.s - x).abs().max() < 1e-3
    assert (fr.d - y).abs().max() < 1e-3


def test_batched_projection_equals_one_by_one(putnam):
    """Projecting 64 points at once gives exactly what projecting each alone gives.

    Fails if rows of the batch leak into each other (wrong gather, broadcasting).
    """
    pts = _near_points(putnam, 64, seed=1)
    batched = putnam.project(pts)
    single = [putnam.project(p[None]) for p in pts]
    for field in ("s", "d", "heading", "curvature", "width_left"):
        one = torch.cat([getattr(f, field) for f in single])
        assert torch.allclose(getattr(batched, field), one, atol=1e-12, rtol=0), field
    hinted = putnam.project(pts, batched.index)
    single_hinted = torch.cat(
        [putnam.project(p[None], i[None]).s for p, i in zip(pts, batched.index, strict=True)]
    )
    assert torch.allclose(hinted.s, single_hinted, atol=1e-12, rtol=0)


def test_window_projection_equals_global_for_points_near_the_path(putnam):
    """Points moved up to 5 m since their last projection get the same (s, d) with the hint.

    Fails if the window search misses the nearest sample or wraps wrongly at the lap start.
    """
    pts = _near_points(putnam, 2000, seed=2, spread=4.5)
    first = putnam.project(pts)
    gen = torch.Generator().manual_seed(3)
    moved = pts + (torch.rand(pts.shape, generator=gen, dtype=F64) * 2 - 1) * 3.5
    windowed = putnam.project(moved, first.index)
    glob = putnam.project(moved)
    assert torch.allclose(windowed.s, glob.s, atol=1e-9)
    assert torch.allclose(windowed.d, glob.d, atol=1e-9)
    # around the start line on the closed loop, the window wraps
    start = torch.tensor([[-2.0, 1.0], [2.0, -1.0]], dtype=F64)
    hint = torch.tensor([putnam.num_samples - 1, 0])
    assert torch.allclose(putnam.project(start, hint).s, putnam.project(start).s)


def test_project_inverts_sample_with_offset(putnam):
    """A point placed at (s, d) with sample() and the normal projects back to (s, d) within 1 um.

    Fails if sample() and project() disagree on the geometry between samples.
    """
    gen = torch.Generator().manual_seed(4)
    s = torch.rand(3000, generator=gen, dtype=F64) * putnam.length
    d = (torch.rand(3000, generator=gen, dtype=F64) * 2 - 1) * 4.5
    smp = putnam.sample(s)
    pts = torch.stack([smp.x - d * torch.sin(smp.heading), smp.y + d * torch.cos(smp.heading)], 1)
    fr = putnam.project(pts)
    gap = torch.remainder(fr.s - s + putnam.length / 2, putnam.length) - putnam.length / 2
    assert gap.abs().max() < 1e-6
    assert (fr.d - d).abs().max() < 1e-6
    assert wrap_angle(fr.heading - smp.heading).abs().max() < 1e-9


def test_segment_arcs_join_consecutive_samples(putnam):
    """The arc leaving each sample ends within 1 mm of the next sample (also across the start).

    Fails if headings, curvatures and positions of a path are inconsistent with each other.
    """
    ends = putnam.sample(putnam.s + putnam.ds * (1 - 1e-12))
    nxt = torch.roll(putnam.xyz[:, :2], -1, dims=0)
    gap = torch.hypot(ends.x - nxt[:, 0], ends.y - nxt[:, 1])
    assert gap.max() < 1e-3


def test_height_at_follows_the_elevation_with_and_without_hint(putnam):
    """Wheel points get the centreline elevation at their projection; the hint changes nothing.

    Fails if height_at mixes up the (N, Q) layout or ignores the hint's per-car broadcast.
    """
    centre = _near_points(putnam, 32, seed=5, spread=0.0)
    wheels = centre[:, None, :] + torch.tensor(
        [[1.0, 0.8], [1.0, -0.8], [-1.5, 0.8], [-1.5, -0.8]], dtype=F64
    )
    z = putnam.height_at(wheels)
    assert z.shape == (32, 4)
    fr = putnam.project(wheels.reshape(-1, 2))
    assert torch.allclose(z.reshape(-1), putnam.sample(fr.s).z)
    hint = putnam.project(centre).index
    assert torch.allclose(putnam.height_at(wheels, hint), z)


def test_float32_copy_keeps_metadata_and_projects_close(putnam):
    """to(float32) keeps name, labels and features, and projects within 1 cm of float64.

    Fails if to() drops fields or float32 loses the path (coordinates ~1 km).
    """
    p32 = putnam.to(dtype=torch.float32)
    assert (p32.name, p32.labels, p32.features) == (putnam.name, putnam.labels, putnam.features)
    pts = _near_points(putnam, 256, seed=6)
    f64, f32 = putnam.project(pts), p32.project(pts.float())
    assert f32.s.dtype == torch.float32
    assert (f32.d.double() - f64.d).abs().max() < 1e-2


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"heading": torch.zeros(3)}, "heading must have shape"),
        ({"width_left": -torch.ones(5, dtype=F64)}, "non-negative"),
        ({"ds": 0.0}, "ds must be positive"),
        ({"curvature": torch.full((5,), float("nan"), dtype=F64)}, "non-finite"),
    ],
)
def test_invalid_paths_are_rejected(change, message):
    """Wrong shapes, negative widths, non-positive ds or NaN raise a ConfigError saying which.

    Fails if a malformed path is accepted silently.
    """
    base = straight_path(4.0)
    fields = {
        "name": "bad",
        "xyz": base.xyz,
        "heading": base.heading,
        "curvature": base.curvature,
        "width_left": base.width_left,
        "width_right": base.width_right,
        "ds": 1.0,
        "closed": False,
    }
    fields.update(change)
    with pytest.raises(ConfigError, match=message):
        ReferencePath(**fields)


def test_project_rejects_bad_shapes(putnam):
    """project() names the expected shapes for points and hint.

    Fails if a (N, 3) input or a mis-sized hint is silently broadcast.
    """
    with pytest.raises(ConfigError, match=r"\(N, 2\)"):
        putnam.project(torch.zeros(4, 3, dtype=F64))
    with pytest.raises(ConfigError, match="hint"):
        putnam.project(torch.zeros(4, 2, dtype=F64), torch.zeros(3, dtype=torch.int64))
