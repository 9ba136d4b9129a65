"""Session-wide test settings: headless SDL, deterministic torch, shared fixtures."""

from __future__ import annotations

import math
import os

# SDL must be configured before pygame is imported anywhere (headless CI, virtual joystick).
os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
os.environ.setdefault("SDL_JOYSTICK_ALLOW_BACKGROUND_EVENTS", "1")
os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from gym_s3.tracks.geometry import Segment, integrate  # noqa: E402
from gym_s3.tracks.path import ReferencePath  # noqa: E402

torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))


def make_circle(radius: float = 50.0, ds: float = 1.0, width: float = 8.0) -> ReferencePath:
    """A closed counter-clockwise circle centred at (0, radius), starting at the origin heading +x."""
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


@pytest.fixture
def circle() -> ReferencePath:
    """A closed circle of radius 50 m."""
    return make_circle()


@pytest.fixture
def straight() -> ReferencePath:
    """An open 300 m straight."""
    return make_straight()
