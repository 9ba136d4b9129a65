"""Settings of ``s3 data generate`` (:class:`GenerateConfig`) and its named presets."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from gym_s3.drivers.expert_config import ExpertConfig
from gym_s3.errors import ConfigError
from gym_s3.scenarios.pool import PoolConfig
from gym_s3.spec import CONTROL_DT_S
from gym_s3.task_config import TaskConfig
from gym_s3.tracks.layouts import PatchConfig
from gym_s3.tracks.surfaces import SURFACE_NAMES, get_surface


@dataclass(frozen=True)
class GenerateConfig:
    """What ``s3 data generate`` drives.

    Attributes:
        procedural_tracks: number of procedural circuits (seeds derived from the dataset seed).
        town_routes: number of town routes.
        track_weights: sampling weights of Putnam Park, procedural circuits, town routes.
        surfaces: base surfaces (every one is used).
        layouts_per_surface: surface layouts (ice-patch placements) per track and surface.
        patches: ice-patch distribution of each layout (placed at braking zones and apexes by
            default, where they bite).
        cars: cars driven at once in a wave.
        waves: number of waves.
        episode_s: longest episode [s].
        start_speed_fraction: start speed as a share of the target speed, ``U(lo, hi)``.
        start_lateral_m: start lateral offset ``U(-x, x)`` [m].
        off_track_margin_m: an episode ends this far beyond a road edge [m].
        spin_heading_rad: an episode ends at this heading error (spin-out) [rad].
        expert: the expert driver (gains, noise, perturbations); the defaults when ``None``.
        pool: speed-profile settings of the reference trajectories.
        threads: torch intra-op threads during generation (1 is fastest for these sizes).
        tracks: track names to drive on instead of Putnam Park + ``procedural_tracks`` +
            ``town_routes`` (empty: those); e.g. ``("putnam", "procedural:7")``.
    """

    procedural_tracks: int = 6
    town_routes: int = 6
    track_weights: tuple[float, float, float] = (0.3, 0.45, 0.25)
    surfaces: tuple[str, ...] = SURFACE_NAMES
    layouts_per_surface: int = 2
    patches: PatchConfig = field(
        default_factory=lambda: PatchConfig(count=(1, 6), placement="corners")
    )
    cars: int = 256
    waves: int = 1
    episode_s: float = 40.0
    start_speed_fraction: tuple[float, float] = (0.0, 1.0)
    start_lateral_m: float = 0.5
    off_track_margin_m: float = 5.0
    spin_heading_rad: float = 1.75
    expert: ExpertConfig | None = None
    pool: PoolConfig = field(default_factory=PoolConfig)
    threads: int = 1
    tracks: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.procedural_tracks < 0 or self.town_routes < 0:
            raise ConfigError("procedural_tracks and town_routes must be >= 0")
        if len(self.track_weights) != 3 or min(self.track_weights) < 0:
            raise ConfigError(
                "track_weights needs 3 non-negative weights (putnam, procedural, town)"
            )
        if not self.surfaces:
            raise ConfigError("surfaces must name at least one surface")
        names = [get_surface(s).name for s in self.surfaces]
        if len(set(names)) != len(names):
            raise ConfigError(f"surfaces must not repeat, got {self.surfaces}")
        object.__setattr__(self, "surfaces", tuple(names))
        for name, value in (("layouts_per_surface", self.layouts_per_surface), ("cars", self.cars),
                            ("waves", self.waves), ("threads", self.threads)):  # fmt: skip
            if value < 1:
                raise ConfigError(f"GenerateConfig.{name} must be >= 1, got {value}")
        if not self.episode_s >= 2 * CONTROL_DT_S:
            raise ConfigError(
                f"episode_s must be at least {2 * CONTROL_DT_S} s, got {self.episode_s}"
            )
        if self.expert is None:
            object.__setattr__(self, "expert", ExpertConfig())

    @property
    def steps(self) -> int:
        """Rows of an episode that reaches the time limit (states ``0 .. steps - 1``)."""
        return int(round(self.episode_s / CONTROL_DT_S))

    def task(self) -> TaskConfig:
        """The episode rules of generated driving: the env's rules with this dataset's margins.

        An episode ends where :class:`~gym_s3.task.TrackingTask` ends it: off the road by more
        than ``off_track_margin_m``, spun out beyond ``spin_heading_rad``, a simulator fault,
        the end of an open route, or the time limit after ``steps - 1`` control steps (so a
        full episode logs ``steps`` rows). The wider default road margin than the env's keeps
        recoveries from beyond the road edge in the data.
        """
        return TaskConfig(max_episode_steps=self.steps - 1,
                          off_track_margin_m=self.off_track_margin_m,
                          spin_heading_rad=self.spin_heading_rad)  # fmt: skip


#: Named sizes: ``default`` (the dataset distillation is trained on: 4 waves of 256 cars, about
#: 9.4 h of driving; the size study in the README says why) and ``tiny`` (tests).
PRESETS: dict[str, GenerateConfig] = {
    "default": GenerateConfig(waves=4),
    "tiny": GenerateConfig(
        procedural_tracks=1, town_routes=1, layouts_per_surface=1, cars=12, waves=1, episode_s=3.0
    ),  # fmt: skip
}


def preset(name: str, **overrides: Any) -> GenerateConfig:
    """A preset with some fields replaced (``None`` values are ignored)."""
    if name not in PRESETS:
        raise ConfigError(f"unknown preset '{name}'; valid: {', '.join(PRESETS)}")
    return replace(PRESETS[name], **{k: v for k, v in overrides.items() if v is not None})
