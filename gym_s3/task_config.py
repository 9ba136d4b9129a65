"""Settings of the reference-tracking task (:class:`TaskConfig`) and the evaluation lap."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from gym_s3.errors import ConfigError
from gym_s3.plausibility import Bounds, check_bounds
from gym_s3.rewards import RewardWeights
from gym_s3.spec import CONTROL_DT_S, OBS_MODES, ObsMode

#: Ranges of the numeric :class:`TaskConfig` fields (NaN is outside every range).
TASK_BOUNDS: dict[str, Bounds] = {
    "max_episode_steps": Bounds(1, 10**8, "steps", integer=True),
    "off_track_margin_m": Bounds(0.0, 100.0, "m"),
    "spin_heading_rad": Bounds(0.1, 3.1416, "rad"),
    "start_lateral_m": Bounds(0.0, 50.0, "m"),
    "start_heading_rad": Bounds(0.0, 3.1416, "rad"),
    "rest_start_lateral_m": Bounds(0.0, 50.0, "m"),
    "rest_start_heading_rad": Bounds(0.0, 3.1416, "rad"),
    "start_speed_fraction_lo": Bounds(0.0, 2.0, "-"),
    "slow_start_weight": Bounds(0.0, 1e4, "-"),
    "slow_start_speed_mps": Bounds(0.0, 100.0, "m/s"),
    "start_speed_fraction_hi": Bounds(0.0, 2.0, "-"),
    "complete_margin_m": Bounds(0.0, 1000.0, "m"),
    "complete_laps": Bounds(0.0, 10**6, "laps"),
    "window": Bounds(1, 10**5, "samples", integer=True),
}


@dataclass(frozen=True)
class TaskConfig:
    """Episode, termination and start-state settings of the tracking task.

    Attributes:
        obs_mode: ``"default"``, ``"oracle"`` (adds the friction under each wheel) or
            ``"history"`` (adds the measured accelerations and actions of the last steps).
        max_episode_steps: steps before truncation (20 Hz, so 400 = 20 s); with
            ``time_limit_factor`` it caps the derived limit.
        time_limit_factor: when set, each episode is truncated (``time_limit``) after this
            multiple of its route's reference time, the time the friction-aware target speeds
            take from the start to the end of the route (``complete_laps`` laps of a loop; see
            :meth:`~gym_s3.scenarios.pool.ScenarioPool.route_time`), at most
            ``max_episode_steps`` steps; ``None``: ``max_episode_steps`` alone.
        stall_speed_mps: forward speed below which a car counts as standing [m/s].
        stall_time_s: a car standing for this long without a break has stalled: the episode
            terminates as ``stalled``, a failure distinct from ``time_limit`` [s]; ``None``
            disables the rule.
        reward: reward term weights.
        off_track_margin_m: a car whose centre is this far beyond a road edge has left the road [m].
        spin_heading_rad: heading error that counts as a spin-out [rad].
        start_lateral_m: start lateral offset drawn from ``U(-x, x)`` [m].
        start_heading_rad: start heading error drawn from ``U(-x, x)`` [rad].
        start_speed_fraction: start speed as a fraction of the target speed, ``U(lo, hi)``.
        start_from_rest: share of episodes that start standing still instead [0..1].
        rest_start_lateral_m: standing starts (``start_from_rest > 0``) draw their lateral
            offset from ``U(-x, x)`` instead [m]; ``None``: ``start_lateral_m`` (restarts: a car
            that came to rest wide of the line after a slide must get going again).
        rest_start_heading_rad: standing starts draw their heading error from ``U(-x, x)``
            instead [rad]; ``None``: ``start_heading_rad``.
        rest_start_prev_action: standing starts draw the previous action their first
            observation shows, steer ``U(-1, 1)`` and accel ``U(-1, 0)`` (a car that braked to a
            stop with the wheel anywhere must get going again; a policy that reads its last
            brake at rest as a reason to brake again stalls). The first step's action-change
            terms (smoothness penalty, statistics) count from it, as for a car that braked to a
            stop. ``False``: zero, like every start.
        slow_start_weight: scenarios whose target speed falls below ``slow_start_speed_mps``
            within :data:`SLOW_START_REACH_M` of their start (tight corners on low friction,
            where a car crawls at full lock) are drawn ``1 + x`` times as often as the others
            [-]; 0: every scenario alike (the default draws, unchanged). A policy that almost
            never sees a walking-pace target can learn to stand still there.
        slow_start_speed_mps: target speed below which a scenario counts as slow [m/s].
        friction_noise: each episode scales the friction of its whole surface layout (what the
            car feels, not what the target speeds assume) by ``U(1 - x, 1 + x)`` [-]; 0: exact.
        complete_margin_m: an open route is completed this close to its end [m].
        complete_laps: on closed paths, the episode is completed after this many laps of
            progress (``None``: closed-path episodes end only by failure or the time limit).
        window: Frenet search half-window [samples]; must cover one step of travel.
    """

    obs_mode: ObsMode = "default"
    max_episode_steps: int = 400
    time_limit_factor: float | None = None
    stall_speed_mps: float = 0.5
    stall_time_s: float | None = 10.0
    reward: RewardWeights = field(default_factory=RewardWeights)
    off_track_margin_m: float = 1.0
    spin_heading_rad: float = 1.75
    start_lateral_m: float = 0.5
    start_heading_rad: float = 0.05
    start_speed_fraction: tuple[float, float] = (0.6, 1.0)
    start_from_rest: float = 0.0
    rest_start_lateral_m: float | None = None
    rest_start_heading_rad: float | None = None
    rest_start_prev_action: bool = False
    slow_start_weight: float = 0.0
    slow_start_speed_mps: float = 4.0
    friction_noise: float = 0.0
    complete_margin_m: float = 2.0
    complete_laps: float | None = None
    window: int = 12

    def __post_init__(self) -> None:
        if self.obs_mode not in OBS_MODES:
            raise ConfigError(f"unknown obs_mode '{self.obs_mode}'; valid: {', '.join(OBS_MODES)}")
        if self.max_episode_steps < 1:
            raise ConfigError(f"max_episode_steps must be >= 1, got {self.max_episode_steps}")
        if self.time_limit_factor is not None and not self.time_limit_factor > 0:
            raise ConfigError(
                f"time_limit_factor must be > 0 or None, got {self.time_limit_factor}"
            )
        if not self.stall_speed_mps >= 0:
            raise ConfigError(f"stall_speed_mps must be >= 0 [m/s], got {self.stall_speed_mps}")
        if self.stall_time_s is not None and not self.stall_time_s > 0:
            raise ConfigError(
                f"stall_time_s must be > 0 [s] or None (no stall rule), got {self.stall_time_s}"
            )
        if not 0.0 <= self.start_from_rest <= 1.0:
            raise ConfigError(f"start_from_rest must be in [0, 1], got {self.start_from_rest}")
        if not 0.0 <= self.friction_noise < 1.0:
            raise ConfigError(
                f"friction_noise must be in [0, 1) (a relative range), got {self.friction_noise}"
            )
        lo, hi = self.start_speed_fraction
        if not 0.0 <= lo <= hi:
            raise ConfigError(f"start_speed_fraction must satisfy 0 <= lo <= hi, got {lo}, {hi}")
        if self.complete_laps is not None and self.complete_laps <= 0:
            raise ConfigError(f"complete_laps must be positive, got {self.complete_laps}")
        fields = {name: getattr(self, name) for name in TASK_BOUNDS if hasattr(self, name)}
        fields["start_speed_fraction_lo"], fields["start_speed_fraction_hi"] = (
            self.start_speed_fraction
        )
        for name in ("complete_laps", "rest_start_lateral_m", "rest_start_heading_rad"):
            if fields[name] is None:
                del fields[name]
        check_bounds(fields, TASK_BOUNDS, where="TaskConfig",
                     fix="pass a value inside the range (the defaults are)")  # fmt: skip


#: How far ahead of a scenario's start its target speed counts for ``slow_start_weight`` [m]
#: (one start spacing of the default pool, so the start before a slow corner counts too).
SLOW_START_REACH_M = 25.0

#: Time a lap may take, as a multiple of the reference lap (the friction-aware target speeds).
LAP_TIME_FACTOR = 2.0
#: Hard cap on a lap with a derived time limit [steps of 50 ms] (2 hours).
LAP_MAX_STEPS = 144_000


def lap_task(time_limit_s: float | None = None, **overrides: object) -> TaskConfig:
    """The task of an evaluation lap (``S3BeamNG-v0``'s default, also used in ``S3Distilled-v0``).

    One lap from a standing start on the reference line. The lap may take
    :data:`LAP_TIME_FACTOR` times the reference lap time (so the limit follows the surface: an
    ice lap gets far longer than a dry one), or exactly ``time_limit_s`` seconds when given.
    ``overrides`` replace fields (e.g. ``obs_mode``).

    Raises:
        ConfigError: ``time_limit_s`` is not positive.
    """
    lap = TaskConfig(max_episode_steps=LAP_MAX_STEPS, time_limit_factor=LAP_TIME_FACTOR,
                     start_speed_fraction=(0.0, 0.0), start_lateral_m=0.0,
                     start_heading_rad=0.0, complete_laps=1.0)  # fmt: skip
    if time_limit_s is not None:
        if not time_limit_s > 0:
            raise ConfigError(f"the lap time limit must be > 0 [s], got {time_limit_s}")
        steps = max(1, math.ceil(time_limit_s / CONTROL_DT_S - 1e-9))
        lap = replace(lap, max_episode_steps=steps, time_limit_factor=None)
    return replace(lap, **overrides)
