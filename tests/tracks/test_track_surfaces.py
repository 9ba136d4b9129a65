"""Surfaces, per-episode layouts and the batched friction lookup under wheels."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from gym_s3.errors import ConfigError
from gym_s3.tracks.friction import FrictionField, UniformFriction
from gym_s3.tracks.layouts import LayoutConfig, PatchConfig, band_to_rects, sample_layout
from gym_s3.tracks.surfaces import (
    SURFACE_NAMES,
    SURFACES,
    PatchBand,
    RectPatch,
    SurfaceBatch,
    SurfaceLayout,
    friction_along,
    get_surface,
)


def _pts(*xy: tuple[float, float]) -> torch.Tensor:
    """One car with Q points ``(1, Q, 2)``."""
    return torch.tensor([xy], dtype=torch.float64)


def test_surface_table_is_ordered_by_grip_and_documented():
    """Six named surfaces, asphalt > wet > dirt > gravel > snow > ice, each with a source.

    Fails if a value is changed against the textbook ordering or loses its source.
    """
    assert set(SURFACE_NAMES) == {"asphalt", "asphalt_wet", "gravel", "dirt", "snow", "ice"}
    mu = {name: s.mu for name, s in SURFACES.items()}
    assert mu["asphalt"] > mu["asphalt_wet"] > mu["dirt"] > mu["gravel"] > mu["snow"] > mu["ice"]
    assert mu["ice"] == pytest.approx(0.10) and all(s.source for s in SURFACES.values())
    assert get_surface("wet").name == "asphalt_wet"
    with pytest.raises(ConfigError, match="valid surfaces: asphalt"):
        get_surface("lava")


def test_lookup_inside_outside_and_rotated_patch():
    """A point inside a rotated patch gets its mu and id, points outside get the base surface.

    The probe at (0, 4.5) is inside the 45 deg rotated 10 x 2 m rectangle's bounding box but not
    inside the rectangle. Fails if the rectangle test ignores the rotation.
    """
    patch = RectPatch(cx=0.0, cy=0.0, yaw=math.pi / 4, length=10.0, width=2.0, mu=0.1)
    layout = SurfaceLayout(base="asphalt_wet", base_mu=0.7, patches=(patch,))
    mu, sid = layout.batch(dtype=torch.float64).lookup(_pts((3.0, 3.0), (0.0, 4.5), (50.0, 0.0)))
    assert mu.tolist() == [[0.1, 0.7, 0.7]]
    ice, wet = SURFACE_NAMES.index("ice"), SURFACE_NAMES.index("asphalt_wet")
    assert sid.tolist() == [[ice, wet, wet]]


def test_overlapping_patches_the_later_one_wins():
    """Where two patches overlap, the one listed last gives the friction (documented rule).

    Fails if the overlap rule changes silently (e.g. to the first or the lowest friction).
    """
    ice = RectPatch(0.0, 0.0, 0.0, 10.0, 10.0, 0.1, "ice")
    snow = RectPatch(4.0, 0.0, 0.0, 10.0, 10.0, 0.25, "snow")
    both = SurfaceBatch.stack([SurfaceLayout(patches=(ice, snow))], dtype=torch.float64)
    mu = both.friction_at(_pts((-3.0, 0.0), (2.0, 0.0), (7.0, 0.0)))
    assert mu.tolist() == [[0.1, 0.25, 0.25]]
    flipped = SurfaceBatch.stack([SurfaceLayout(patches=(snow, ice))], dtype=torch.float64)
    assert flipped.friction_at(_pts((2.0, 0.0))).item() == pytest.approx(0.1)


def test_per_car_layouts_index_and_where():
    """Row i of the points is looked up in layout i; index() and where() pick rows correctly.

    Fails if cars share a layout by mistake (broadcasting) or the partial-reset helpers mix rows.
    """
    ice = RectPatch(0.0, 0.0, 0.0, 4.0, 4.0, 0.1)
    layouts = [SurfaceLayout(), SurfaceLayout(patches=(ice,)), SurfaceLayout.uniform("snow")]
    bank = SurfaceBatch.stack(layouts, dtype=torch.float64)
    points = torch.zeros(3, 2, 2, dtype=torch.float64)
    points[:, 1] = 10.0
    assert bank.friction_at(points).tolist() == [[1.0, 1.0], [0.1, 1.0], [0.25, 0.25]]
    cars = bank.index(torch.tensor([2, 1, 1, 0]))
    four = torch.zeros(4, 1, 2, dtype=torch.float64)
    assert cars.friction_at(four)[:, 0].tolist() == [0.25, 0.1, 0.1, 1.0]
    swapped = cars.where(
        torch.tensor([True, False, False, True]), bank.index(torch.tensor([0, 0, 0, 1]))
    )
    assert swapped.friction_at(four)[:, 0].tolist() == [1.0, 0.1, 0.1, 0.1]
    single = SurfaceBatch.stack([SurfaceLayout(patches=(ice,))], dtype=torch.float64)
    assert single.friction_at(points).tolist() == [[0.1, 1.0]] * 3  # one layout for every car
    with pytest.raises(ConfigError, match="cannot serve"):
        bank.friction_at(four)
    assert isinstance(bank, FrictionField) and isinstance(UniformFriction(0.5), FrictionField)
    assert UniformFriction(torch.tensor([0.2, 0.9], dtype=torch.float64)).friction_at(
        points[:2]
    ).tolist() == [
        [0.2, 0.2],
        [0.9, 0.9],
    ]


def test_band_rectangles_cover_the_band_on_a_curve(putnam):
    """A patch band on Putnam's hairpin covers its Frenet area: inside gets ice, outside not.

    Probes on a grid inside the band (kept 0.3 m from its edges) read ice; probes 0.5 m beyond
    its lateral edges read asphalt. Fails if the rectangles do not follow the curve.
    """
    band = PatchBand(s_start=2255.0, length=25.0, d_min=-4.5, d_max=1.0, surface="ice", mu=0.1)
    layout = SurfaceLayout(patches=tuple(band_to_rects(putnam, band, 2.0)), bands=(band,))
    s = torch.linspace(
        band.s_start + 0.3, band.s_start + band.length - 0.3, 60, dtype=torch.float64
    )
    grid = [(s, torch.full_like(s, d)) for d in np.linspace(-4.2, 0.7, 8)]
    outside = [(s, torch.full_like(s, -5.0)), (s, torch.full_like(s, 1.5))]

    def friction(pairs):
        """Friction at the world points of (s, d) pairs."""
        ss = torch.cat([p[0] for p in pairs])
        dd = torch.cat([p[1] for p in pairs])
        smp = putnam.sample(ss)
        xy = torch.stack(
            [smp.x - dd * torch.sin(smp.heading), smp.y + dd * torch.cos(smp.heading)], 1
        )
        return layout.friction_at(xy[None])[0]

    assert torch.all(friction(grid) == 0.1)
    assert torch.all(friction(outside) == 1.0)


def test_sample_layout_is_seeded_and_respects_the_config(putnam):
    """Layouts repeat for the same seed, draw counts/lengths/mu in range, and stay on the road.

    Fails if placement ignores the rng, the ranges or the road width.
    """
    cfg = LayoutConfig(
        base=("asphalt", "snow"),
        weights=(1.0, 0.0),
        patches=PatchConfig(count=(3, 6), length_m=(10.0, 20.0), mu=(0.05, 0.15)),
    )
    a = sample_layout(putnam, cfg, np.random.default_rng(11))
    b = sample_layout(putnam, cfg, np.random.default_rng(11))
    assert a == b and a.base == "asphalt"
    assert 3 <= len(a.bands) <= 6
    for band in a.bands:
        assert 10.0 <= band.length <= 20.0 and 0.05 <= band.mu <= 0.15
        assert -4.5 - 1e-9 <= band.d_min < band.d_max <= 4.5 + 1e-9
    c = sample_layout(putnam, cfg, np.random.default_rng(12))
    assert c != a
    with pytest.raises(ConfigError):
        PatchConfig(count=(2, 1))
    with pytest.raises(ConfigError):
        PatchConfig(mu=(0.5, 0.1))


def test_friction_along_sees_patches_on_the_centre_strip(putnam):
    """friction_along is the lowest friction of the centre strip.

    A centre patch shows, an edge patch 2 m from the centreline does not. Fails if probes are
    misplaced or the minimum is not taken.
    """
    centre = PatchBand(100.0, 20.0, -1.5, 1.5, "ice", 0.1)
    edge = PatchBand(300.0, 20.0, 2.0, 4.5, "ice", 0.1)
    rects = band_to_rects(putnam, centre, 4.0) + band_to_rects(putnam, edge, 4.0)
    batch = SurfaceBatch.stack([SurfaceLayout(patches=tuple(rects))], dtype=torch.float64)
    mu = friction_along(putnam, batch)[0]
    s = putnam.s
    assert torch.all(mu[(s > 101) & (s < 119)] == 0.1)
    assert torch.all(mu[(s > 301) & (s < 319)] == 1.0)
    assert torch.all(mu[(s < 95) | (s > 125)] == 1.0)
