"""Town routes: through four-way intersections, in the right-hand lane, never crossing."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from gym_s3.errors import ConfigError
from gym_s3.tracks.geometry import polyline_self_intersections
from gym_s3.tracks.town import TownConfig, town_grid, town_route

SEEDS = range(8)


@pytest.fixture(scope="module")
def routes():
    """Routes for a few seeds in the default town."""
    return {seed: town_route(seed) for seed in SEEDS}


def _node_of(grid, x: float, y: float) -> tuple[int, int] | None:
    """The intersection whose box (one road width around its centre) contains (x, y)."""
    i = int(np.argmin(np.abs(np.array(grid.xs) - x)))
    j = int(np.argmin(np.abs(np.array(grid.ys) - y)))
    inside = abs(grid.xs[i] - x) <= grid.road_width and abs(grid.ys[j] - y) <= grid.road_width
    return (i, j) if inside else None


def test_every_feature_is_an_intersection_visited_once(routes):
    """Each manoeuvre's middle lies in an intersection box; no intersection is visited twice.

    Turns are +-90 deg with a radius in the configured range; there are exactly n_turns turns.
    Fails if the features are misplaced or the walk revisits a crossing.
    """
    grid, cfg = town_grid(0), TownConfig()
    for path in routes.values():
        mids = torch.tensor([(f.s_start + f.s_end) / 2 for f in path.features], dtype=torch.float64)
        smp = path.sample(mids)
        nodes = [_node_of(grid, float(x), float(y)) for x, y in zip(smp.x, smp.y, strict=True)]
        assert None not in nodes
        assert len(set(nodes)) == len(nodes)
        turns = [f for f in path.features if f.direction != "S"]
        assert len(turns) == 3
        for f in turns:
            assert abs(abs(f.angle) - math.pi / 2) < 1e-9
            assert cfg.turn_radius[0] <= f.min_radius <= cfg.turn_radius[1]
        assert "intersection" in path.labels and not path.closed


def test_routes_stay_in_the_right_hand_lane_inside_the_grid(routes):
    """Away from intersections every sample is half a lane right of a street's centre line.

    Fails if lane offsets or turn fitting shift the route off its lane, or it leaves the grid.
    """
    grid = town_grid(0)
    half_lane = grid.lane_width / 2
    xs, ys = np.array(grid.xs), np.array(grid.ys)
    for path in routes.values():
        x, y = path.xyz[:, 0].numpy(), path.xyz[:, 1].numpy()
        h = path.heading.numpy()
        boxes = np.zeros_like(x, dtype=bool)
        for f in path.features:
            lo, hi = int(f.s_start / path.ds) - 1, int(f.s_end / path.ds) + 2
            boxes[max(lo, 0) : hi] = True
        free = ~boxes
        east_west = np.abs(np.sin(h[free])) < 1e-6
        # right of travel: (sin h, -cos h); a street centre lies half a lane to the left
        cx = x[free] - half_lane * np.sin(h[free])
        cy = y[free] + half_lane * np.cos(h[free])
        off_ew = np.abs(ys[None, :] - cy[:, None]).min(axis=1)
        off_ns = np.abs(xs[None, :] - cx[:, None]).min(axis=1)
        assert np.where(east_west, off_ew, off_ns).max() < 1e-3
        margin = grid.road_width
        assert xs[0] - margin <= x.min() and x.max() <= xs[-1] + margin
        assert ys[0] - margin <= y.min() and y.max() <= ys[-1] + margin


def test_routes_never_cross_themselves(routes):
    """No two parts of a route cross. Fails if the walk reuses a street or crossing."""
    for path in routes.values():
        x, y = path.xyz[:, 0].numpy(), path.xyz[:, 1].numpy()
        assert polyline_self_intersections(x, y, closed=False) == []


def test_routes_are_deterministic_and_vary(routes):
    """The same seed gives the same route; seeds give different routes; length mode works.

    Fails if route drawing ignores the seed or the length request.
    """
    assert torch.equal(town_route(5).xyz, routes[5].xyz)
    assert len({round(p.length, 3) for p in routes.values()}) > len(routes) // 2
    long = town_route(1, length=800.0)
    assert long.length >= 800.0 - 2 * town_grid(0).road_width - 100.0


def test_impossible_routes_raise():
    """Asking for more turns than a small town allows raises a ConfigError naming the fix.

    Fails if the retry loop never gives up.
    """
    cfg = TownConfig(blocks=(2, 2), max_attempts=10)
    with pytest.raises(ConfigError, match="fewer turns"):
        town_route(0, n_turns=12, config=cfg)
