"""Settings of the reference-tracking task (:class:`TaskConfig`) and the evaluation lap."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from gym_s3.errors import ConfigError
from gym_s3.plausibility import Bounds, check_bounds
from gym_s3.rewards import RewardWeights
from gym_s3.spec import OBS_MODES, ObsMode

#: Ranges of the numeric :class:`TaskConfig` fields (NaN is outside every range).
TASK_BOUNDS: dict[str, Bounds] = {
    "max_episode_steps": Bounds(1, 10**8, "steps", integer=True),
    "off_track_margin_m": Bounds(0.0, 100.0, "m"),
    "spin_heading_rad": Bounds(0.1, 3.1416, "rad"),
    "start_lateral_m": Bounds(0.0, 50.0, "m"),
    "start_heading_rad": Bounds(0.0, 3.1416, "rad"),
    "start_speed_fraction_lo": Bounds(0.0, 2.0, "-"),
    "start_speed_fraction_hi": Bounds(0.0, 2.0, "-"),
    "complete_margin_m": Bounds(0.0, 1000.0, "m"),
    "complete_laps": Bounds(0.0, 10**6, "laps"),
    "window": Bounds(1, 10**5, "samples", integer=True),
}


@dataclass(frozen=True)
class TaskConfig:
    """Episode, termination and start-state settings of the tracking task.

    Attributes:
        obs_mode: ``"default"`` or ``"oracle"`` (adds the friction under each wheel).
        max_episode_steps: steps before truncation (20 Hz, so 400 = 20 s).
        reward: reward term weights.
        off_track_margin_m: a car whose centre is this far beyond a road edge has left the road [m].
        spin_heading_rad: heading error that counts as a spin-out [rad].
        start_lateral_m: start lateral offset drawn from ``U(-x, x)`` [m].
        start_heading_rad: start heading error drawn from ``U(-x, x)`` [rad].
        start_speed_fraction: start speed as a fraction of the target speed, ``U(lo, hi)``.
        complete_margin_m: an open route is completed this close to its end [m].
        complete_laps: on closed paths, the episode is completed after this many laps of
            progress (``None``: closed-path episodes end only by failure or the time limit).
        window: Frenet search half-window [samples]; must cover one step of travel.
    """

    obs_mode: ObsMode = "default"
    max_episode_steps: int = 400
    reward: RewardWeights = field(default_factory=RewardWeights)
    off_track_margin_m: float = 1.0
    spin_heading_rad: float = 1.75
    start_lateral_m: float = 0.5
    start_heading_rad: float = 0.05
    start_speed_fraction: tuple[float, float] = (0.6, 1.0)
    complete_margin_m: float = 2.0
    complete_laps: float | None = None
    window: int = 12

    def __post_init__(self) -> None:
        if self.obs_mode not in OBS_MODES:
            raise ConfigError(f"unknown obs_mode '{self.obs_mode}'; valid: {', '.join(OBS_MODES)}")
        if self.max_episode_steps < 1:
            raise ConfigError(f"max_episode_steps must be >= 1, got {self.max_episode_steps}")
        lo, hi = self.start_speed_fraction
        if not 0.0 <= lo <= hi:
            raise ConfigError(f"start_speed_fraction must satisfy 0 <= lo <= hi, got {lo}, {hi}")
        if self.complete_laps is not None and self.complete_laps <= 0:
            raise ConfigError(f"complete_laps must be positive, got {self.complete_laps}")
        fields = {name: getattr(self, name) for name in TASK_BOUNDS if hasattr(self, name)}
        fields["start_speed_fraction_lo"], fields["start_speed_fraction_hi"] = (
            self.start_speed_fraction
        )
        if self.complete_laps is None:
            del fields["complete_laps"]
        check_bounds(fields, TASK_BOUNDS, where="TaskConfig",
                     fix="pass a value inside the range (the defaults are)")  # fmt: skip


def lap_task(**overrides: object) -> TaskConfig:
    """The task of an evaluation lap (``S3BeamNG-v0``'s default, also used in ``S3Distilled-v0``).

    One lap from a standing start on the reference line, at most 400 s (an ice lap takes about
    320 s); ``overrides`` replace fields (e.g. ``obs_mode``).
    """
    lap = TaskConfig(max_episode_steps=8000, start_speed_fraction=(0.0, 0.0),
                     start_lateral_m=0.0, start_heading_rad=0.0, complete_laps=1.0)  # fmt: skip
    return replace(lap, **overrides)
