"""Small analytic reference paths for tests (a circle and a straight)."""

from __future__ import annotations

import math

import numpy as np

from gym_s3.tracks.geometry import Segment, integrate
from gym_s3.tracks.path import ReferencePath


def make_circle(radius: float = 50.0, ds: float = 1.0, width: float = 8.0) -> ReferencePath:
    """A closed CCW circle centred at (0, radius), starting at the origin heading +x."""
    line = integrate([Segment(2 * math.pi * radius, 1 / radius, 1 / radius)], ds=ds, closed=True)
    m = len(line.x)
    half = np.full(m, width / 2)
    return ReferencePath.from_arrays(
        f"circle{radius:g}",
        np.stack([line.x, line.y, np.zeros(m)], axis=1),
        line.heading,
        line.curvature,
        half,
        half.copy(),
        ds=line.ds,
        closed=True,
    )


def make_straight(length: float = 300.0, ds: float = 1.0, width: float = 8.0) -> ReferencePath:
    """An open straight along +x from the origin."""
    m = int(round(length / ds)) + 1
    x = np.arange(m) * ds
    half = np.full(m, width / 2)
    return ReferencePath.from_arrays(
        "straight",
        np.stack([x, np.zeros(m), np.zeros(m)], axis=1),
        np.zeros(m),
        np.zeros(m),
        half,
        half.copy(),
        ds=ds,
        closed=False,
    )


def cars_on_road(pool, variant, s, speed: float = 10.0):
    """A tracking task with cars on the centreline of pool variants, heading along the path.

    Args:
        pool: a :class:`~gym_s3.scenarios.pool.ScenarioPool`.
        variant: ``(N,)`` int64 variant of each car.
        s: ``(N,)`` arc length of each car [m].
        speed: their forward speed [m/s].

    Returns:
        ``(task, ego)``: the task (its episodes begun at ``s``) and the cars' EgoState.
    """
    import torch

    from gym_s3.observations import EgoState
    from gym_s3.rows import ResetRows
    from gym_s3.task import TrackingTask

    n = int(variant.shape[0])
    task = TrackingTask(pool, n)
    task.begin_at(ResetRows(torch.ones(n, dtype=torch.bool)), variant, s)
    path = task.path_at(s)
    zero = torch.zeros_like(path.x)
    return task, EgoState(path.x, path.y, path.heading, torch.full_like(path.x, speed), zero, zero)
