"""Scenario pools: variants, target speeds, starts, labels and filters."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from path_helpers import make_circle, make_straight

from gym_s3.errors import ConfigError
from gym_s3.scenarios import PoolConfig, ScenarioPool
from gym_s3.tracks.speed_profile import GRAVITY
from gym_s3.tracks.surfaces import SurfaceLayout


@pytest.fixture(scope="module")
def pool() -> ScenarioPool:
    """A circle (asphalt and ice variants) and a straight."""
    circle, straight = make_circle(20.0), make_straight(400.0)
    layouts = [[SurfaceLayout.uniform("asphalt"), SurfaceLayout.uniform("ice")],
               [SurfaceLayout.uniform("asphalt")]]  # fmt: skip
    return ScenarioPool.build([circle, straight], layouts, PoolConfig(start_spacing_m=50.0))


def test_variants_and_scenarios_are_cut_per_path(pool):
    """Two circle variants and one straight variant; starts every 50 m, open routes end early."""
    assert pool.num_variants == 3
    starts = pool.scenario_start[pool.scenario_variant == 2]
    assert starts.tolist() == [0.0, 50.0, 100.0, 150.0, 200.0, 250.0]
    assert (pool.scenario_variant == 0).sum() == (pool.scenario_variant == 1).sum()


def test_target_speed_respects_friction_on_ice(pool):
    """On the ice circle the target speed obeys v^2 kappa <= f_lat mu g; asphalt is faster."""
    s = torch.linspace(0, 100, 11)
    v_dry = pool.target_speed(torch.zeros(11, dtype=torch.long), s)
    v_ice = pool.target_speed(torch.ones(11, dtype=torch.long), s)
    assert (v_ice**2 / 20.0 <= PoolConfig().speed.lateral_fraction * 0.1 * GRAVITY + 1e-4).all()
    assert (v_dry > v_ice * 2).all()


def test_labels_and_filter(pool):
    """Circle scenarios are sharp turns, ice ones low-friction; filters select by label."""
    counts = pool.label_counts()
    assert counts["sharp_turn"] == int((pool.scenario_variant < 2).sum())
    assert counts["low_friction"] == int((pool.scenario_variant == 1).sum())
    ice = pool.filter(["low_friction"])
    assert set(ice.scenario_variant.tolist()) == {1}
    with pytest.raises(ConfigError, match="scenarios per label"):
        pool.filter(["intersection"])


def test_sample_is_seeded(pool):
    """The same generator seed draws the same scenarios."""
    a = pool.sample(16, torch.Generator().manual_seed(3))
    b = pool.sample(16, torch.Generator().manual_seed(3))
    assert torch.equal(a, b) and a.max() < pool.num_scenarios
    np.testing.assert_array_less(-1, a.numpy())
