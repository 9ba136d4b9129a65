"""A town grid with four-way intersections, and seeded routes through it (intersection scenarios).

The town is a rectangular street grid: every street is a two-lane road (one lane per direction,
``2 * lane_width`` wide) and every crossing is a four-way intersection. Block edges are drawn from
``block_m`` per row and column, so the grid is irregular but fixed by ``grid_seed``.

A route is a self-avoiding walk over the intersections that starts and ends in the middle of a
block. It drives in the right-hand lane; at every intersection it goes straight, turns left or
turns right. Turns are 90 deg clothoid-arc-clothoid corners of radius ``turn_radius`` on the lane
centre, fitted between the incoming and outgoing lane lines. Because no intersection is visited
twice, a route never reuses a street segment and never crosses itself. Every intersection on the
route becomes an ``"intersection"`` :class:`~gym_s3.tracks.path.PathFeature` (direction ``L``,
``R`` or ``S``) so scenario labelling can find the manoeuvres.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from gym_s3.errors import ConfigError
from gym_s3.tracks.geometry import Corner, Segment, end_point, integrate
from gym_s3.tracks.path import PathFeature, ReferencePath

#: the four travel directions on the grid: east, north, west, south
_DIRECTIONS = ((1, 0), (0, 1), (-1, 0), (0, -1))


@dataclass(frozen=True)
class TownConfig:
    """Town and route parameters.

    Attributes:
        blocks: number of blocks along x and y (``+1`` streets each way).
        block_m: range of block edge lengths, street centre to street centre [m].
        lane_width: width of one lane [m]; streets have two lanes.
        turn_radius: range of the turn radius on the lane centre [m].
        clothoid_share: range of the extra corner length for the clothoid transitions, as a
            share of the arc length ``pi/2 * R`` [-].
        turn_probability: chance of turning at an intersection while turns are still due [-].
        max_attempts: walks tried before giving up.
    """

    blocks: tuple[int, int] = (6, 6)
    block_m: tuple[float, float] = (60.0, 100.0)
    lane_width: float = 3.75
    turn_radius: tuple[float, float] = (8.0, 15.0)
    clothoid_share: tuple[float, float] = (0.3, 0.8)
    turn_probability: float = 0.5
    max_attempts: int = 100

    def __post_init__(self) -> None:
        """Validate the fields (raises :class:`~gym_s3.errors.ConfigError`)."""
        if min(self.blocks) < 2:
            raise ConfigError(f"a town needs at least 2 x 2 blocks, got {self.blocks}")
        if not 0 < self.block_m[0] <= self.block_m[1]:
            raise ConfigError(f"block_m must be positive and ordered, got {self.block_m}")
        if not 0 < self.turn_radius[0] <= self.turn_radius[1]:
            raise ConfigError(f"turn_radius must be positive and ordered, got {self.turn_radius}")
        if 2.0 * self.turn_radius[1] + 4.0 * self.lane_width > self.block_m[0]:
            raise ConfigError("blocks are too short for the turn radius: raise block_m")
        if not 0 <= self.clothoid_share[0] <= self.clothoid_share[1] <= 1.0:
            raise ConfigError(f"clothoid_share must lie in [0, 1], got {self.clothoid_share}")
        if not 0 < self.turn_probability <= 1 or self.lane_width <= 0 or self.max_attempts < 1:
            raise ConfigError("need 0 < turn_probability <= 1, lane_width > 0, max_attempts >= 1")


@dataclass(frozen=True)
class TownGrid:
    """The street grid.

    Attributes:
        xs: x of every north-south street [m], increasing.
        ys: y of every east-west street [m], increasing.
        lane_width: width of one lane [m].
    """

    xs: tuple[float, ...]
    ys: tuple[float, ...]
    lane_width: float

    @property
    def road_width(self) -> float:
        """Width of a street [m] (two lanes)."""
        return 2.0 * self.lane_width

    def node(self, i: int, j: int) -> np.ndarray:
        """World position [m] of intersection ``(i, j)``."""
        return np.array([self.xs[i], self.ys[j]])

    def contains(self, i: int, j: int) -> bool:
        """Whether ``(i, j)`` is an intersection of the grid."""
        return 0 <= i < len(self.xs) and 0 <= j < len(self.ys)


@lru_cache(maxsize=8)
def town_grid(grid_seed: int = 0, config: TownConfig | None = None) -> TownGrid:
    """The town's street grid for ``grid_seed`` (deterministic)."""
    cfg = config or TownConfig()
    rng = np.random.default_rng([int(grid_seed), 7])
    steps_x = rng.uniform(*cfg.block_m, cfg.blocks[0])
    steps_y = rng.uniform(*cfg.block_m, cfg.blocks[1])
    xs = np.concatenate([[0.0], np.cumsum(steps_x)])
    ys = np.concatenate([[0.0], np.cumsum(steps_y)])
    return TownGrid(tuple(xs.tolist()), tuple(ys.tolist()), cfg.lane_width)


def _walk(
    rng: np.random.Generator,
    grid: TownGrid,
    n_turns: int,
    min_length: float | None,
    cfg: TownConfig,
) -> tuple[list[tuple[int, int]], list[int]] | None:
    """A self-avoiding walk: (nodes, directions) or ``None`` when it gets stuck."""
    i, j = int(rng.integers(len(grid.xs))), int(rng.integers(len(grid.ys)))
    heading = int(rng.integers(4))
    di, dj = _DIRECTIONS[heading]
    if not grid.contains(i + di, j + dj):
        return None
    nodes, headings = [(i, j), (i + di, j + dj)], [heading]
    turns, length = 0, 0.0
    while True:
        ci, cj = nodes[-1]
        if (min_length is None and turns == n_turns) or (
            min_length is not None and length >= min_length
        ):
            di, dj = _DIRECTIONS[headings[-1]]
            nxt = (ci + di, cj + dj)
            if grid.contains(*nxt) and nxt not in nodes:
                return nodes + [nxt], headings + [headings[-1]]
            return None
        options = []
        for turn in (0, 1, -1):  # straight, left, right
            h = (headings[-1] + turn) % 4
            di, dj = _DIRECTIONS[h]
            nxt = (ci + di, cj + dj)
            if grid.contains(*nxt) and nxt not in nodes:
                options.append((turn, h, nxt))
        if not options:
            return None
        turning = [o for o in options if o[0] != 0]
        straight = [o for o in options if o[0] == 0]
        want_turn = turns < n_turns or min_length is not None
        if turning and (not straight or (want_turn and rng.random() < cfg.turn_probability)):
            turn, h, nxt = turning[int(rng.integers(len(turning)))]
        else:
            turn, h, nxt = straight[0]
        turns += turn != 0
        length += float(np.linalg.norm(grid.node(*nxt) - grid.node(ci, cj)))
        nodes.append(nxt)
        headings.append(h)


def _turn_tangent(corner: Corner) -> float:
    """Distance from the corner point of the lane lines to where the 90 deg turn begins [m]."""
    ex, _, _ = end_point(corner.segments(), ds=0.05)
    return ex  # the exit lane line is x = ex in the corner's entry frame


def town_route(
    seed: int,
    *,
    n_turns: int = 3,
    length: float | None = None,
    grid_seed: int = 0,
    ds: float = 1.0,
    config: TownConfig | None = None,
) -> ReferencePath:
    """An open route through the town drawn from ``seed`` (deterministic).

    Args:
        seed: route seed.
        n_turns: number of left/right turns (ignored when ``length`` is given).
        length: alternatively, keep driving (turning at random) until the walk covers this many
            metres of streets [m].
        grid_seed: which town (see :func:`town_grid`).
        ds: sample spacing [m].
        config: town and route parameters.

    Returns:
        An open :class:`ReferencePath` named ``"town:<seed>"`` on the right-hand lane centre,
        labelled ``("town", "intersection")``, whose features are the intersections it passes.
    """
    cfg = config or TownConfig()
    if n_turns < 0 or (length is not None and length <= 0):
        raise ConfigError("n_turns must be >= 0 and length positive")
    grid = town_grid(grid_seed, cfg)
    for attempt in range(cfg.max_attempts):
        rng = np.random.default_rng([int(seed), attempt])
        walk = _walk(rng, grid, n_turns, length, cfg)
        if walk is not None:
            return _route_path(f"town:{seed}", grid, *walk, rng, cfg, ds)
    raise ConfigError(
        f"no route with {n_turns} turns found for seed {seed} in {cfg.max_attempts} attempts; "
        "use fewer turns or a larger town (TownConfig.blocks)"
    )


def _route_path(
    name: str,
    grid: TownGrid,
    nodes: list[tuple[int, int]],
    headings: list[int],
    rng: np.random.Generator,
    cfg: TownConfig,
    ds: float,
) -> ReferencePath:
    """Build the lane-centre path of a walk: straights between turns fitted at the nodes."""
    half_lane = cfg.lane_width / 2.0
    pts = [grid.node(*n) for n in nodes]
    # Distance travelled between consecutive events along the lane (start, nodes..., end).
    # The route starts and ends mid-block; lane offsets do not change distances along a street
    # except at turns, where the lane-line corner point shifts by half a lane.
    legs = [0.5 * float(np.linalg.norm(pts[1] - pts[0]))]
    legs += [float(np.linalg.norm(pts[k + 1] - pts[k])) for k in range(1, len(pts) - 2)]
    legs += [0.5 * float(np.linalg.norm(pts[-1] - pts[-2]))]
    events: list[tuple[str, Corner | None]] = []
    for k in range(1, len(nodes) - 1):
        turn = (headings[k] - headings[k - 1]) % 4
        if turn == 0:
            events.append(("S", None))
            continue
        sign = 1.0 if turn == 1 else -1.0
        radius = float(rng.uniform(*cfg.turn_radius))
        share = float(rng.uniform(*cfg.clothoid_share))
        corner = Corner(sign * math.pi / 2, radius, math.pi / 2 * radius * (1.0 + share))
        # Right-hand lanes: a left turn's lane corner lies half a lane beyond the node on both
        # legs, a right turn's half a lane before it.
        shift = half_lane if sign > 0 else -half_lane
        legs[k - 1] += shift
        legs[k] += shift
        events.append(("L" if sign > 0 else "R", corner))
    segments: list[Segment] = []
    features: list[PathFeature] = []
    s, pending = 0.0, 0.0  # pending: tangent length already used at the start of this leg
    for k, leg in enumerate(legs):
        event = events[k] if k < len(events) else None
        tangent = _turn_tangent(event[1]) if event is not None and event[1] is not None else 0.0
        straight = leg - pending - tangent
        if straight < 1.0:
            raise ConfigError("turn radius too large for the block length; raise block_m")
        segments.append(Segment(straight))
        s += straight
        if event is None:
            break
        if event[1] is None:
            half_road = grid.road_width / 2.0
            features.append(
                PathFeature("intersection", s - half_road, s + half_road, "S", 0.0, math.inf)
            )
            pending = 0.0
        else:
            corner = event[1]
            segments.extend(corner.segments())
            features.append(
                PathFeature(
                    "intersection", s, s + corner.length, event[0], corner.angle, corner.min_radius
                )
            )
            s += corner.length
            pending = tangent
    u0 = np.array(_DIRECTIONS[headings[0]], dtype=np.float64)
    heading0 = math.atan2(u0[1], u0[0])
    right0 = np.array([u0[1], -u0[0]])
    start = 0.5 * (pts[0] + pts[1]) + half_lane * right0
    line = integrate(
        segments, ds=ds, x0=float(start[0]), y0=float(start[1]), heading0=heading0, closed=False
    )
    m = len(line.x)
    turns = sum(f.direction != "S" for f in features)
    return ReferencePath.from_arrays(
        name,
        np.stack([line.x, line.y, np.zeros(m)], axis=1),
        line.heading,
        line.curvature,
        np.full(m, 3.0 * half_lane),
        np.full(m, half_lane),
        ds=line.ds,
        closed=False,
        description=(
            f"town route ({len(features)} intersections, {turns} turns) in the right-hand lane "
            "of a street grid"
        ),
        labels=("town", "intersection"),
        features=tuple(features),
    )
