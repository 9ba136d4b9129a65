"""Procedural circuits from a seed, for training diversity.

A circuit is drawn as a sequence of corners (signed angles that add up to one full turn, radii
log-uniform in a range, clothoid shares varied) separated by straights; the straights are then
adjusted by :func:`~gym_s3.tracks.geometry.close_loop` so the loop closes exactly. A draw is
rejected (and redrawn from the next attempt of the same seed, so the result stays deterministic)
when it cannot close, crosses itself or passes closer to itself than the road needs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from gym_s3.errors import ConfigError
from gym_s3.tracks.circuits import ElevationFn, closed_circuit
from gym_s3.tracks.geometry import (
    Corner,
    close_loop,
    min_clearance,
    polyline_self_intersections,
)
from gym_s3.tracks.path import ReferencePath


@dataclass(frozen=True)
class ProceduralConfig:
    """The distribution procedural circuits are drawn from.

    Attributes:
        length_range: lap length range [m].
        width: road width [m].
        corners: inclusive range of the number of corners.
        radius_range: range of corner minimum radii [m] (drawn log-uniformly).
        angle_range: range of corner turn magnitudes [deg].
        counter_share: probability that a corner turns against the direction of travel [-].
        min_straight: shortest straight between corners [m].
        elevation_m: peak-to-peak elevation change over the lap [m] (0 for flat).
        clearance: smallest allowed distance between non-neighbouring parts of the centreline,
            in road widths [-].
        max_attempts: draws tried before giving up.
    """

    length_range: tuple[float, float] = (1500.0, 3500.0)
    width: float = 10.0
    corners: tuple[int, int] = (7, 14)
    radius_range: tuple[float, float] = (15.0, 150.0)
    angle_range: tuple[float, float] = (25.0, 150.0)
    counter_share: float = 0.25
    min_straight: float = 15.0
    elevation_m: float = 4.0
    clearance: float = 2.0
    max_attempts: int = 200

    def __post_init__(self) -> None:
        """Validate the fields (raises :class:`~gym_s3.errors.ConfigError`)."""
        if not 0 < self.length_range[0] <= self.length_range[1]:
            raise ConfigError(f"length_range must be positive and ordered, got {self.length_range}")
        if not 3 <= self.corners[0] <= self.corners[1]:
            raise ConfigError(f"corners must satisfy 3 <= min <= max, got {self.corners}")
        if not 0 < self.radius_range[0] <= self.radius_range[1]:
            raise ConfigError(f"radius_range must be positive and ordered, got {self.radius_range}")
        if not 0 < self.angle_range[0] <= self.angle_range[1] < 180:
            raise ConfigError(f"angle_range must lie in (0, 180) deg, got {self.angle_range}")
        if not 0 <= self.counter_share < 0.5:
            raise ConfigError(f"counter_share must be in [0, 0.5), got {self.counter_share}")
        if self.width <= 0 or self.min_straight < 0 or self.elevation_m < 0:
            raise ConfigError("width must be positive, min_straight and elevation_m non-negative")
        if self.clearance < 1 or self.max_attempts < 1:
            raise ConfigError("clearance must be >= 1 road width and max_attempts >= 1")


def _draw_angles(
    rng: np.random.Generator, count: int, sign: float, cfg: ProceduralConfig
) -> np.ndarray | None:
    """Signed corner angles [rad] adding up to ``sign * 2 pi``, or ``None`` if the draw fails."""
    lo, hi = np.radians(cfg.angle_range)
    mags = rng.uniform(lo, hi, count)
    signs = np.where(rng.random(count) < cfg.counter_share, -sign, sign)
    forward = signs == sign
    counter_sum = float((mags * signs)[~forward].sum())
    forward_sum = float(mags[forward].sum())
    if forward_sum == 0.0:
        return None
    scale = (sign * 2.0 * math.pi - counter_sum) / (sign * forward_sum)
    mags = np.where(forward, mags * scale, mags)
    if not 0.5 <= scale <= 2.0 or mags.max() > math.radians(170.0) or mags.min() < lo / 2:
        return None
    return mags * signs


def _draw(
    rng: np.random.Generator, cfg: ProceduralConfig
) -> tuple[list[float], list[Corner], float] | None:
    """One candidate: (straights, corners, sign) before closing, or ``None``."""
    count = int(rng.integers(cfg.corners[0], cfg.corners[1] + 1))
    sign = 1.0 if rng.random() < 0.5 else -1.0
    angles = _draw_angles(rng, count, sign, cfg)
    if angles is None:
        return None
    log_r = rng.uniform(*np.log(cfg.radius_range), count)
    radii = np.exp(log_r)
    corners = []
    for angle, radius in zip(angles, radii, strict=True):
        arc = abs(angle) * radius
        corners.append(Corner(float(angle), float(radius), arc * float(rng.uniform(1.15, 1.8))))
    length = float(rng.uniform(*cfg.length_range))
    room = length - sum(c.length for c in corners) - count * cfg.min_straight
    if room <= 0:
        return None
    straights = cfg.min_straight + room * rng.dirichlet(np.full(count, 0.8))
    return list(straights), corners, sign


def _elevation(rng: np.random.Generator, peak_to_peak: float) -> ElevationFn:
    """A smooth periodic elevation profile (three random harmonics) scaled to ``peak_to_peak``."""
    amps = rng.uniform(0.3, 1.0, 3) / np.arange(1, 4)
    phases = rng.uniform(0.0, 2.0 * math.pi, 3)

    def profile(s: np.ndarray, length: float) -> np.ndarray:
        """Elevation [m] at arc lengths ``s`` of a lap of ``length`` metres."""
        t = 2.0 * math.pi * s[:, None] / length * np.arange(1, 4)[None, :]
        z = (amps * np.sin(t + phases)).sum(axis=1)
        span = z.max() - z.min()
        return (z - z.min()) * (peak_to_peak / span if span > 0 else 0.0)

    return profile


def procedural_circuit(
    seed: int,
    *,
    length_range: tuple[float, float] | None = None,
    width: float | None = None,
    ds: float = 1.0,
    config: ProceduralConfig | None = None,
) -> ReferencePath:
    """A closed circuit drawn from ``seed`` (the same seed always gives the same circuit).

    Args:
        seed: integer seed.
        length_range: overrides ``config.length_range`` [m].
        width: overrides ``config.width`` [m].
        ds: sample spacing [m].
        config: the distribution (defaults to :class:`ProceduralConfig`).

    Returns:
        A closed :class:`ReferencePath` named ``"procedural:<seed>"`` with ``"corner"`` features,
        labelled ``("circuit", "procedural", "clockwise" | "counter-clockwise")``.

    Raises:
        ConfigError: if no valid circuit is found within ``config.max_attempts`` draws.
    """
    cfg = config or ProceduralConfig()
    overrides = {}
    if length_range is not None:
        overrides["length_range"] = tuple(length_range)
    if width is not None:
        overrides["width"] = width
    if overrides:
        cfg = ProceduralConfig(**{**cfg.__dict__, **overrides})
    for attempt in range(cfg.max_attempts):
        rng = np.random.default_rng([int(seed), attempt])
        path = _attempt(rng, seed, cfg, ds)
        if path is not None:
            return path
    raise ConfigError(
        f"no valid procedural circuit for seed {seed} in {cfg.max_attempts} attempts; widen "
        "length_range or reduce the number of corners"
    )


def _attempt(
    rng: np.random.Generator, seed: int, cfg: ProceduralConfig, ds: float
) -> ReferencePath | None:
    """Draw, close and check one circuit; ``None`` when the draw is rejected."""
    drawn = _draw(rng, cfg)
    if drawn is None:
        return None
    straights, corners, sign = drawn
    try:
        straights = close_loop(straights, corners, min_straight=cfg.min_straight)
    except ConfigError:
        return None
    # Start line in the middle of the longest straight, which then comes first.
    first = int(np.argmax(straights))
    straights = straights[first:] + straights[:first]
    corners = corners[first:] + corners[:first]
    heading0 = float(rng.uniform(-math.pi, math.pi))
    profile = _elevation(rng, cfg.elevation_m) if cfg.elevation_m > 0 else None
    direction = "counter-clockwise" if sign > 0 else "clockwise"
    path = closed_circuit(
        f"procedural:{seed}",
        straights,
        corners,
        lead=straights[0] / 2.0,
        ds=ds,
        width=cfg.width,
        heading0=heading0,
        elevation=profile,
        description=f"procedural circuit from seed {seed} ({len(corners)} corners, {direction})",
        labels=("circuit", "procedural", direction),
    )
    x, y = path.xyz[:, 0].numpy(), path.xyz[:, 1].numpy()
    if polyline_self_intersections(x, y, closed=True):
        return None
    gap = cfg.clearance * cfg.width
    if min_clearance(x, y, closed=True, exclude_arc=3.0 * gap) < gap:
        return None
    return path
