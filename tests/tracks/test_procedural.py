"""Procedural circuits: closed, valid, deterministic per seed, varied across seeds."""

from __future__ import annotations

import math

import pytest
import torch

from gym_s3.errors import ConfigError
from gym_s3.tracks.geometry import min_clearance, polyline_self_intersections
from gym_s3.tracks.procedural import ProceduralConfig, procedural_circuit

SEEDS = (0, 1, 2, 3, 4, 5)


@pytest.fixture(scope="module")
def circuits():
    """Circuits for a few seeds (built once for the module)."""
    return {seed: procedural_circuit(seed) for seed in SEEDS}


def test_circuits_are_closed_loops(circuits):
    """Every circuit's end meets its start within 1 cm and it turns by exactly +-2 pi.

    Fails if the straights were not adjusted to close the loop.
    """
    for path in circuits.values():
        assert path.closed
        end = path.sample(torch.tensor([path.length * (1 - 1e-12)], dtype=torch.float64))
        gap = math.hypot(float(end.x[0] - path.xyz[0, 0]), float(end.y[0] - path.xyz[0, 1]))
        assert gap < 0.01
        k = path.curvature
        turn = float(path.heading[-1] + 0.5 * (k[-1] + k[0]) * path.ds - path.heading[0])
        assert abs(abs(turn) - 2 * math.pi) < 1e-3


def test_circuits_respect_the_distribution(circuits):
    """Length, corner radii and corner count lie in the configured ranges; labels say procedural.

    Fails if a draw escapes its configuration.
    """
    cfg = ProceduralConfig()
    for seed, path in circuits.items():
        assert cfg.length_range[0] - 1 <= path.length <= cfg.length_range[1] + 1
        assert cfg.corners[0] <= len(path.features) <= cfg.corners[1]
        radii = [f.min_radius for f in path.features]
        assert min(radii) >= cfg.radius_range[0] - 1e-9
        assert max(radii) <= cfg.radius_range[1] + 1e-9
        assert path.labels[:2] == ("circuit", "procedural")
        assert path.name == f"procedural:{seed}"
        z = path.xyz[:, 2]
        assert float(z.max() - z.min()) == pytest.approx(cfg.elevation_m, abs=1e-6)


def test_circuits_do_not_cross_or_crowd_themselves(circuits):
    """No self-intersection, and parts of the lap keep at least 2 road widths apart.

    Fails if the rejection test for overlapping layouts is broken.
    """
    for path in circuits.values():
        x, y = path.xyz[:, 0].numpy(), path.xyz[:, 1].numpy()
        assert polyline_self_intersections(x, y, closed=True) == []
        assert min_clearance(x, y, closed=True, exclude_arc=60.0) >= 20.0 - 1e-6


def test_same_seed_same_circuit_and_seeds_differ(circuits):
    """A seed always gives the identical circuit; different seeds give different ones.

    Fails if generation depends on global random state or ignores the seed.
    """
    again = procedural_circuit(3)
    assert torch.equal(again.xyz, circuits[3].xyz)
    lengths = {round(p.length, 3) for p in circuits.values()}
    assert len(lengths) == len(circuits)
    directions = {p.labels[2] for p in circuits.values()}
    assert directions == {"clockwise", "counter-clockwise"}


def test_overrides_and_impossible_requests():
    """Width and length overrides apply; an impossible length raises a ConfigError.

    Fails if keyword overrides are ignored or the retry loop never gives up.
    """
    path = procedural_circuit(7, length_range=(1200.0, 1300.0), width=12.0)
    assert 1199.0 <= path.length <= 1301.0
    assert float(path.width_left[0] + path.width_right[0]) == pytest.approx(12.0)
    with pytest.raises(ConfigError, match="no valid procedural circuit"):
        procedural_circuit(0, config=ProceduralConfig(length_range=(300.0, 300.0), max_attempts=5))
