"""Named stretches of a path: the corners of a circuit, the manoeuvres of a town route."""

from __future__ import annotations

from dataclasses import dataclass

from gym_s3.errors import ConfigError


@dataclass(frozen=True)
class PathFeature:
    """A named stretch of a path: a corner of a circuit or a manoeuvre of a town route.

    Attributes:
        kind: ``"corner"`` (circuits) or ``"intersection"`` (town routes).
        s_start: arc length where it begins [m].
        s_end: arc length where it ends [m] (may exceed the length on a closed path: wraps).
        direction: ``"L"`` (left), ``"R"`` (right) or ``"S"`` (straight through).
        angle: signed heading change over the stretch [rad] (negative = right).
        min_radius: smallest radius of curvature on the stretch [m] (``inf`` when straight).
    """

    kind: str
    s_start: float
    s_end: float
    direction: str
    angle: float
    min_radius: float

    def __post_init__(self) -> None:
        """Validate the fields (raises :class:`~gym_s3.errors.ConfigError`)."""
        if self.direction not in ("L", "R", "S"):
            raise ConfigError(f"feature direction must be 'L', 'R' or 'S', got {self.direction!r}")
        if not self.s_end >= self.s_start:
            raise ConfigError(f"feature needs s_end >= s_start, got {self.s_start}..{self.s_end}")

    @property
    def name(self) -> str:
        """Readable name, e.g. ``"corner_right"`` or ``"intersection_straight"``."""
        word = {"L": "left", "R": "right", "S": "straight"}[self.direction]
        return f"{self.kind}_{word}"
