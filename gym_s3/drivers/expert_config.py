"""Settings of the scripted expert driver: gains, noise and perturbation events.

See :mod:`gym_s3.drivers.expert` for the controller these settings drive.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from gym_s3.errors import ConfigError
from gym_s3.vehicle.params import SEDAN

__all__ = ["EVENTS", "LAUNCH_MAX_SPEED_MPS", "EventConfig", "ExpertConfig", "PerturbationConfig"]


#: Perturbation events, in the column order of the event tensors.
EVENTS: tuple[str, ...] = (
    "late_braking",
    "steer_pulse",
    "throttle_lift",
    "overspeed",
    "hard_brake",
    "throttle_burst",
    "trail_brake",
    "lock_crawl",
    "launch",
)
#: A ``launch`` event holds its pedal only at or below this speed [m/s]: standing starts and
#: walking pace, where the expert's own throttle on ice stays at a share of the friction.
LAUNCH_MAX_SPEED_MPS = 4.0


@dataclass(frozen=True)
class EventConfig:
    """One kind of perturbation event.

    Attributes:
        rate_per_min: mean number of events per minute of driving [1/min] (0 disables).
        duration_s: range of the event duration [s].
        magnitude: range of its size; the unit depends on the event (see
            :class:`PerturbationConfig`).
    """

    rate_per_min: float
    duration_s: tuple[float, float]
    magnitude: tuple[float, float]

    def __post_init__(self) -> None:
        if not (math.isfinite(self.rate_per_min) and self.rate_per_min >= 0):
            raise ConfigError(f"event rate must be finite and >= 0, got {self.rate_per_min}")
        if not 0 < self.duration_s[0] <= self.duration_s[1]:
            raise ConfigError(f"event duration range must be positive, ordered: {self.duration_s}")
        if not self.magnitude[0] <= self.magnitude[1]:
            raise ConfigError(f"event magnitude range must be ordered: {self.magnitude}")


@dataclass(frozen=True)
class PerturbationConfig:
    """Perturbation events of the expert.

    Attributes:
        late_braking: the speed target is read ``magnitude`` metres further back [m].
        steer_pulse: a steering offset of ``magnitude`` with a random sign [1].
        throttle_lift: the pedal goes to ``-magnitude`` at most (lift, light brake) [1].
        overspeed: the speed target is multiplied by ``magnitude`` [-].
        hard_brake: the brake pedal is pressed to ``magnitude`` [1].
        throttle_burst: the throttle is pressed to at least ``magnitude`` [1].
        trail_brake: in a corner (path curvature ahead above 1/150 1/m) the brake pedal is held
            at least at ``magnitude`` while the car turns in (braking at the friction limit
            while cornering) [1].
        lock_crawl: walking pace at full lock: the steering is held at 0.6-1.0 of full lock to
            a random side, the speed target is capped at ``magnitude`` [m/s], and at or below
            the cap a pedal drawn from ``U(-0.3, 0.6)`` is held (braking, coasting or spinning
            the front wheels at lock). The expert's own driving rarely goes there on ice (94 of
            133,452 ice rows of the default data below 4 m/s past 0.6 of lock), a policy does.
            The wheel goes to lock at once, also at speed (then the car often spins or leaves
            the road while the PI brakes towards the cap). Off by default
            (rate 0): events that never happen draw nothing and are not recorded, so the
            default dataset is unchanged by its existence.
        launch: the pedal is held at ``magnitude`` (throttle) while the car is at or below
            :data:`LAUNCH_MAX_SPEED_MPS`: standing starts and walking pace with more throttle
            than the friction allows, so the wheels spin on low friction. The expert's own
            throttle from rest on ice stays at about 0.05 (none of 691 rows on ice below 2 m/s of
            the quick pipeline's data above it), where a policy gives 0.07-0.14 and a learned
            model then has nothing to learn the wheel spin from. The steering is the expert's.
            Off by default, with a random stream of its own, as ``lock_crawl``.
    """

    late_braking: EventConfig = EventConfig(1.0, (2.0, 4.0), (20.0, 50.0))
    steer_pulse: EventConfig = EventConfig(2.0, (0.15, 0.5), (0.05, 0.25))
    throttle_lift: EventConfig = EventConfig(1.5, (0.4, 1.5), (0.0, 0.15))
    overspeed: EventConfig = EventConfig(0.7, (3.0, 8.0), (1.1, 1.35))
    hard_brake: EventConfig = EventConfig(0.4, (0.5, 1.5), (0.6, 1.0))
    throttle_burst: EventConfig = EventConfig(0.6, (0.3, 1.5), (0.7, 1.0))
    trail_brake: EventConfig = EventConfig(1.0, (1.0, 3.0), (0.3, 0.8))
    lock_crawl: EventConfig = EventConfig(0.0, (2.0, 6.0), (0.5, 4.0))
    launch: EventConfig = EventConfig(0.0, (2.0, 6.0), (0.1, 1.0))

    @staticmethod
    def none() -> PerturbationConfig:
        """No perturbations (every rate 0)."""
        return PerturbationConfig().scaled(0.0)

    def scaled(self, factor: float) -> PerturbationConfig:
        """Every rate multiplied by ``factor`` (>= 0)."""
        if not factor >= 0:
            raise ConfigError(f"perturbation rate factor must be >= 0, got {factor}")
        return PerturbationConfig(
            **{f.name: replace(getattr(self, f.name), rate_per_min=getattr(self, f.name)
                               .rate_per_min * factor) for f in fields(self)}
        )  # fmt: skip

    def events(self) -> tuple[EventConfig, ...]:
        """The events in :data:`EVENTS` order."""
        return tuple(getattr(self, name) for name in EVENTS)

    def enabled(self) -> tuple[str, ...]:
        """Names of the events that can happen (rate > 0), in :data:`EVENTS` order."""
        return tuple(name for name in EVENTS if getattr(self, name).rate_per_min > 0)

    def to_json(self) -> dict[str, Any]:
        """The enabled events, JSON-serialisable (as episode metadata records them)."""
        return {name: asdict(getattr(self, name)) for name in self.enabled()}


@dataclass(frozen=True)
class ExpertConfig:
    """Gains, noise and perturbations of the scripted expert.

    Attributes:
        lookahead_s: pure-pursuit lookahead time [s].
        lookahead_min_m: shortest lookahead [m].
        lookahead_max_m: longest lookahead [m].
        yaw_rate_gain: road-wheel angle per unit of yaw-rate shortfall [s].
        steer_margin_rad: the road-wheel angle stays within this much of the kinematic angle of
            the path curvature ahead, so the front tyres are not pushed far past their peak slip
            angle (which loses grip, worst on ice) [rad].
        preview_s: the speed target is read this far ahead in time [s].
        kp_speed: proportional pedal gain [1 per m/s].
        ki_speed: integral pedal gain [1 per m].
        integral_limit: largest pedal share of the integral term [1].
        throttle_grip_share: the throttle is limited so that the drive force is at most this
            share of ``mu * front_load_n * sqrt(1 - u^2)`` (``mu`` the mean wheel friction, ``u``
            the share of it the cornering uses), at least ``throttle_floor`` [-].
        throttle_floor: lowest throttle limit [1].
        brake_mu_gain: the brake pedal is limited to ``brake_mu_gain * mu``, at least
            ``brake_floor`` [-].
        brake_floor: lowest brake limit [1].
        steer_noise: stationary std of the steering noise [1].
        accel_noise: stationary std of the pedal noise [1].
        noise_tau_s: correlation time of both noises [s].
        speed_scale: range of the per-episode target-speed factor [-].
        wheelbase_m: wheelbase of the driven car [m].
        max_steer_rad: road-wheel angle at full steering command [rad].
        front_load_n: static load on the driven (front) axle [N].
        max_drive_force_n: drive force at full throttle at low speed [N].
        max_power_w: drive power at full throttle [W] (the force is ``min(F, P / v)``).
        perturbations: perturbation events.
    """

    lookahead_s: float = 0.5
    lookahead_min_m: float = 5.0
    lookahead_max_m: float = 35.0
    yaw_rate_gain: float = 0.4
    steer_margin_rad: float = 0.1
    preview_s: float = 0.5
    kp_speed: float = 0.3
    ki_speed: float = 0.05
    integral_limit: float = 0.3
    throttle_grip_share: float = 0.65
    throttle_floor: float = 0.03
    brake_mu_gain: float = 1.2
    brake_floor: float = 0.1
    steer_noise: float = 0.02
    accel_noise: float = 0.04
    noise_tau_s: float = 0.5
    speed_scale: tuple[float, float] = (0.85, 1.0)
    wheelbase_m: float = SEDAN.wheelbase
    max_steer_rad: float = SEDAN.max_steer_rad
    front_load_n: float = SEDAN.static_axle_loads[0]
    max_drive_force_n: float = SEDAN.max_drive_torque / SEDAN.wheel_radius
    max_power_w: float = SEDAN.max_power
    perturbations: PerturbationConfig = field(default_factory=PerturbationConfig)

    def __post_init__(self) -> None:
        positive = (
            "lookahead_s",
            "lookahead_min_m",
            "noise_tau_s",
            "wheelbase_m",
            "max_steer_rad",
            "steer_margin_rad",
            "front_load_n",
            "max_drive_force_n",
            "max_power_w",
        )
        for name in positive:
            if not getattr(self, name) > 0:
                raise ConfigError(f"ExpertConfig.{name} must be > 0, got {getattr(self, name)}")
        if self.lookahead_max_m < self.lookahead_min_m:
            raise ConfigError("ExpertConfig.lookahead_max_m must be >= lookahead_min_m")
        non_negative = (
            "yaw_rate_gain",
            "preview_s",
            "kp_speed",
            "ki_speed",
            "integral_limit",
            "throttle_grip_share",
            "brake_mu_gain",
            "steer_noise",
            "accel_noise",
        )
        for name in non_negative:
            if not getattr(self, name) >= 0:
                raise ConfigError(f"ExpertConfig.{name} must be >= 0, got {getattr(self, name)}")
        for name in ("throttle_floor", "brake_floor"):
            if not 0 < getattr(self, name) <= 1:
                raise ConfigError(
                    f"ExpertConfig.{name} must be in (0, 1], got {getattr(self, name)}"
                )
        if not 0 < self.speed_scale[0] <= self.speed_scale[1]:
            raise ConfigError(
                f"ExpertConfig.speed_scale must be positive, ordered: {self.speed_scale}"
            )

    def to_json(self) -> dict[str, Any]:
        """The settings, JSON-serialisable, as episode metadata records them.

        The perturbations list only the enabled events (:meth:`PerturbationConfig.to_json`).
        """
        return {**asdict(self), "perturbations": self.perturbations.to_json()}
