"""Transition laps: ``"asphalt>ice"`` puts one full-width ice stretch on an asphalt lap."""

from __future__ import annotations

import pytest
import torch

from gym_s3.errors import ConfigError
from gym_s3.tracks.lap_layouts import TRANSITION_LENGTH_M, lap_layout, parse_lap_surface
from gym_s3.tracks.registry import cached_track
from gym_s3.tracks.surfaces import friction_along


def test_transition_lap_has_one_ice_stretch_across_the_road():
    """Along the centreline and at both road edges the friction drops to ice on one stretch."""
    path = cached_track("putnam")
    layout = lap_layout(path, "asphalt>ice", seed=3)
    assert layout.base == "asphalt"
    mu = friction_along(path, layout.batch(dtype=torch.float64), lateral_offsets=(-3.5, 0.0, 3.5))
    ds = float(path.length) / (mu.shape[1] - 1)
    iced = mu[0] < 0.2
    assert abs(float(iced.sum()) * ds - TRANSITION_LENGTH_M) < 0.05 * TRANSITION_LENGTH_M
    # one stretch: a single run of ice (allowing a wrap across the start line)
    changes = int((iced[1:] != iced[:-1]).sum())
    assert changes in (1, 2)
    assert float(mu[0][~iced].min()) > 0.9  # asphalt everywhere else


def test_the_same_seed_gives_the_same_transition_and_others_move_it():
    """The stretch is placed by the layout seed."""
    path = cached_track("putnam")
    a, b = lap_layout(path, "asphalt>ice", seed=1), lap_layout(path, "asphalt>ice", seed=1)
    assert a == b
    assert lap_layout(path, "asphalt>ice", seed=2).bands[0].s_start != a.bands[0].s_start


def test_transition_plus_patches_and_plain_names():
    """Patches come on top of the stretch; a plain (alias) name is one surface."""
    path = cached_track("putnam")
    assert len(lap_layout(path, "snow>ice", ice_patches=2, seed=0).bands) == 3
    assert lap_layout(path, "wet").base == "asphalt_wet" and not lap_layout(path, "wet").bands


@pytest.mark.parametrize("bad", ["asphalt>ice>snow", "asphalt>", "lava>ice", "asphalt>lava"])
def test_bad_lap_surfaces_name_the_problem(bad):
    """A malformed or unknown lap surface raises a ConfigError about the surface."""
    with pytest.raises(ConfigError, match="surface"):
        parse_lap_surface(bad)
