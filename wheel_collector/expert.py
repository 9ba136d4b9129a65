"""The scripted expert driver: pure pursuit + PI speed control with noise and perturbations.

One batched controller (:class:`BatchedExpert`) drives N cars at once; the collection session uses
it through :class:`ExpertInput`, an :class:`~wheel_collector.commands.InputSource` with N = 1, and
``s3 data generate`` drives thousands of cars with it directly. There is no second copy.

* **Lateral:** pure pursuit on the reference path. The target point lies ``lookahead_s * v`` ahead
  of the car's projection (clamped to ``[lookahead_min_m, lookahead_max_m]``); the road-wheel
  angle is ``atan(wheelbase * 2 y / (x^2 + y^2))`` with the target at ``(x, y)`` in the car frame,
  plus ``yaw_rate_gain * (v * kappa - yaw_rate)`` against under-rotation.
* **Longitudinal:** PI control of ``v_long`` on the friction-aware target speed, previewed
  ``preview_s`` ahead. The throttle is limited to the drive force the front tyres can take
  (``throttle_grip_share`` of the friction left after cornering, against the drive force the
  pedal gives at this speed), the brake to ``brake_mu_gain * mu``: gentle on ice, flat out on
  dry asphalt at speed.
* **Noise:** Ornstein-Uhlenbeck noise on both commands, and a per-episode speed scale.
* **Perturbations** (Poisson events per car, rates per minute): late braking (the speed target is
  read further back, so braking starts late and ends hard), steering pulses, throttle lifts,
  over-speed into corners (target x factor), hard brake stabs and throttle bursts (wheel spin on
  low friction). They push the data to the edges of the envelope, beyond the expert's own limits.

Sign conventions: the output action is ``[steer, accel]`` with ``steer = +1`` full right and
``accel < 0`` braking (:mod:`gym_s3.spec`); road-wheel angles are + left.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace
from typing import Protocol, runtime_checkable

import torch
from torch import Tensor

from gym_s3.data.trackside import TrackSample, TrackSide
from gym_s3.errors import ConfigError
from gym_s3.observations import EgoState
from gym_s3.spec import CONTROL_DT_S
from gym_s3.vehicle.params import GRAVITY, SEDAN
from wheel_collector.commands import (
    SAFE_COMMAND,
    DriverCommand,
    InputReading,
    InputStatus,
)

__all__ = [
    "EVENTS",
    "BatchedExpert",
    "EventConfig",
    "ExpertConfig",
    "ExpertInput",
    "PerturbationConfig",
    "StateObserver",
]

#: Perturbation events, in the column order of the event tensors.
EVENTS: tuple[str, ...] = (
    "late_braking",
    "steer_pulse",
    "throttle_lift",
    "overspeed",
    "hard_brake",
    "throttle_burst",
)


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
    """

    late_braking: EventConfig = EventConfig(1.0, (2.0, 4.0), (20.0, 50.0))
    steer_pulse: EventConfig = EventConfig(2.0, (0.15, 0.5), (0.05, 0.25))
    throttle_lift: EventConfig = EventConfig(1.5, (0.4, 1.5), (0.0, 0.15))
    overspeed: EventConfig = EventConfig(0.7, (3.0, 8.0), (1.1, 1.35))
    hard_brake: EventConfig = EventConfig(0.4, (0.5, 1.5), (0.6, 1.0))
    throttle_burst: EventConfig = EventConfig(0.6, (0.3, 1.5), (0.7, 1.0))

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


class BatchedExpert:
    """The expert controller of N cars (stateful: integrators, noise, active events).

    Args:
        n: number of cars N.
        config: gains, noise, perturbations.
        seed: seed of the noise and the events (one CPU generator, so runs repeat exactly).
        dt: control period [s].
    """

    def __init__(
        self, n: int, config: ExpertConfig = ExpertConfig(), *, seed: int = 0,
        dt: float = CONTROL_DT_S,
    ) -> None:  # fmt: skip
        if n < 1:
            raise ConfigError(f"the expert needs n >= 1 cars, got {n}")
        self.n, self.config, self.dt = n, config, float(dt)
        self.generator = torch.Generator().manual_seed(int(seed))
        ev = config.perturbations.events()
        self._rate = torch.tensor([1.0 - math.exp(-e.rate_per_min / 60.0 * dt) for e in ev])
        self._dur = torch.tensor([e.duration_s for e in ev])  # (E, 2)
        self._mag = torch.tensor([e.magnitude for e in ev])  # (E, 2)
        e = len(EVENTS)
        self.integral = torch.zeros(n)
        self.noise = torch.zeros(n, 2)
        self.event_left = torch.zeros(n, e)
        self.event_mag = torch.zeros(n, e)
        self.event_sign = torch.ones(n)
        self.event_count = torch.zeros(n, e, dtype=torch.int64)
        self.speed_scale = torch.ones(n)
        self.reset()

    def _uniform(self, shape: tuple[int, ...]) -> Tensor:
        return torch.rand(shape, generator=self.generator)

    def reset(self, mask: Tensor | None = None) -> None:
        """Start new episodes for the cars in ``mask`` (all by default): clear state, new scale."""
        mask = torch.ones(self.n, dtype=torch.bool) if mask is None else mask.to(torch.bool)
        lo, hi = self.config.speed_scale
        scale = lo + (hi - lo) * self._uniform((self.n,))
        self.speed_scale = torch.where(mask, scale, self.speed_scale)
        self.integral = torch.where(mask, torch.zeros_like(self.integral), self.integral)
        self.noise = torch.where(mask[:, None], torch.zeros_like(self.noise), self.noise)
        self.event_left = torch.where(
            mask[:, None], torch.zeros_like(self.event_left), self.event_left
        )
        self.event_count = torch.where(mask[:, None], torch.zeros_like(self.event_count),
                                       self.event_count)  # fmt: skip

    def _advance_events(self) -> Tensor:
        """Start, age and end events; returns ``(N, E)`` bool of the active ones."""
        shape = (self.n, len(EVENTS))
        start_u, dur_u, mag_u = self._uniform(shape), self._uniform(shape), self._uniform(shape)
        sign = torch.where(self._uniform((self.n,)) < 0.5, -1.0, 1.0)
        idle = self.event_left <= 0
        start = idle & (start_u < self._rate)
        duration = self._dur[:, 0] + (self._dur[:, 1] - self._dur[:, 0]) * dur_u
        magnitude = self._mag[:, 0] + (self._mag[:, 1] - self._mag[:, 0]) * mag_u
        self.event_left = torch.where(start, duration, self.event_left - self.dt)
        self.event_mag = torch.where(start, magnitude, self.event_mag)
        pulse_start = start[:, EVENTS.index("steer_pulse")]
        self.event_sign = torch.where(pulse_start, sign, self.event_sign)
        self.event_count += start.to(torch.int64)
        return self.event_left > 0

    def _noise_step(self) -> Tensor:
        """Advance the Ornstein-Uhlenbeck noises; returns ``(N, 2)`` [steer, accel]."""
        cfg = self.config
        a = math.exp(-self.dt / cfg.noise_tau_s)
        sigma = torch.tensor([cfg.steer_noise, cfg.accel_noise])
        self.noise = a * self.noise + sigma * math.sqrt(1 - a * a) * torch.randn(
            self.n, 2, generator=self.generator
        )
        return self.noise

    def act(self, ego: EgoState, sample: TrackSample, track: TrackSide) -> Tensor:
        """Actions of the N cars.

        Args:
            ego: measured state of the cars.
            sample: their track-side view (from ``track.measure`` at the same pose).
            track: the track side (reference paths and speed profiles of the cars).

        Returns:
            ``(N, 2)`` float32 ``[steer, accel]`` in [-1, 1].
        """
        cfg = self.config
        active = self._advance_events()
        on = {name: active[:, i] for i, name in enumerate(EVENTS)}
        size = {name: self.event_mag[:, i] for i, name in enumerate(EVENTS)}
        noise = self._noise_step()
        dtype = sample.s.dtype
        x, y, yaw = (t.to(dtype) for t in (ego.x, ego.y, ego.yaw))
        v = ego.v_long.to(dtype).clamp(min=0.0)
        # lateral: pure pursuit + yaw-rate correction
        look = (cfg.lookahead_s * v).clamp(cfg.lookahead_min_m, cfg.lookahead_max_m)
        ahead = track.sample(sample.s + look)
        dx, dy = ahead.x - x, ahead.y - y
        c, s = torch.cos(yaw), torch.sin(yaw)
        lx, ly = dx * c + dy * s, -dx * s + dy * c
        kappa = 2.0 * ly / (lx.square() + ly.square()).clamp(min=1.0)
        delta = torch.atan(cfg.wheelbase_m * kappa)
        delta = delta + cfg.yaw_rate_gain * (v * kappa - ego.yaw_rate.to(dtype))
        delta_path = torch.atan(cfg.wheelbase_m * track.sample(sample.s + 0.5 * look).curvature)
        margin = cfg.steer_margin_rad
        delta = torch.minimum(torch.maximum(delta, delta_path - margin), delta_path + margin)
        steer = -delta / cfg.max_steer_rad
        steer = (
            steer
            + noise[:, 0]
            + torch.where(on["steer_pulse"], self.event_sign * size["steer_pulse"], 0.0)
        )
        # longitudinal: PI on the previewed, perturbed target speed
        s_target = (
            sample.s
            + cfg.preview_s * v
            - torch.where(on["late_braking"], size["late_braking"], 0.0)
        )
        v_ref = track.target_speed(s_target) * self.speed_scale
        v_ref = v_ref * torch.where(on["overspeed"], size["overspeed"], 1.0)
        err = v_ref - v
        if cfg.ki_speed > 0:
            limit = cfg.integral_limit / cfg.ki_speed
            self.integral = (self.integral + err.float() * self.dt).clamp(-limit, limit)
        accel = cfg.kp_speed * err + cfg.ki_speed * self.integral + noise[:, 1]
        mu = sample.mu.mean(-1)
        demand = torch.maximum(
            (v * ego.yaw_rate.to(dtype)).abs(), v.square() * sample.curvature.abs()
        )
        lateral = demand / (GRAVITY * mu.clamp(min=0.05))
        room = (1.0 - lateral.clamp(max=1.0).square()).sqrt()
        grip = cfg.throttle_grip_share * mu * cfg.front_load_n * room
        full = torch.minimum(torch.full_like(v, cfg.max_drive_force_n),
                             cfg.max_power_w / v.clamp(min=1.0))  # fmt: skip
        throttle_max = (grip / full).clamp(cfg.throttle_floor, 1.0)
        brake_max = (cfg.brake_mu_gain * mu).clamp(cfg.brake_floor, 1.0)
        accel = torch.maximum(torch.minimum(accel, throttle_max), -brake_max)
        accel = torch.where(
            on["throttle_lift"], torch.minimum(accel, -size["throttle_lift"]), accel
        )
        accel = torch.where(
            on["throttle_burst"], torch.maximum(accel, size["throttle_burst"]), accel
        )
        accel = torch.where(on["hard_brake"], -size["hard_brake"], accel)
        return torch.stack([steer, accel], dim=-1).clamp(-1.0, 1.0).float()


@runtime_checkable
class StateObserver(Protocol):
    """An input source that needs the car's state before each poll (the scripted expert)."""

    def observe(self, ego: EgoState, sample: TrackSample, track: TrackSide) -> None:
        """Give the source its car's measured state, track-side view and track side."""
        ...

    def reset(self) -> None:
        """A new episode starts (e.g. after a teleport)."""
        ...


class ExpertInput:
    """The scripted expert as an :class:`~wheel_collector.commands.InputSource` (one car).

    The session calls :meth:`observe` with the measured state before every :meth:`poll`; until
    the first observation (and after :meth:`close`) the source reports ``NO_DEVICE`` and sends
    :data:`SAFE_COMMAND`.

    Args:
        config: expert settings.
        seed: seed of its noise and perturbations.
    """

    device_name = "scripted-expert"

    def __init__(self, config: ExpertConfig | None = None, *, seed: int = 0) -> None:
        self.expert = BatchedExpert(1, config or ExpertConfig(), seed=seed)
        self._observed: tuple[EgoState, TrackSample, TrackSide] | None = None
        self._closed = False

    def observe(self, ego: EgoState, sample: TrackSample, track: TrackSide) -> None:
        """Store the state the next :meth:`poll` acts on.

        Raises:
            ConfigError: ``track`` follows more than one car.
        """
        if track.n != 1:
            raise ConfigError(f"ExpertInput drives one car; the track side has {track.n}")
        self._observed = (ego, sample, track)

    def reset(self) -> None:
        """New episode: clear integrators, noise and events."""
        self.expert.reset()

    def poll(self) -> InputReading:
        """The expert's command for the last observed state (never blocks)."""
        if self._closed or self._observed is None:
            return InputReading(SAFE_COMMAND, InputStatus.NO_DEVICE, self.device_name)
        ego, sample, track = self._observed
        steer, accel = (float(v) for v in self.expert.act(ego, sample, track)[0])
        command = DriverCommand.clamped(steer, max(accel, 0.0), max(-accel, 0.0), source="expert")
        return InputReading(command, InputStatus.CONNECTED, self.device_name)

    def close(self) -> None:
        """Stop driving; later polls send :data:`SAFE_COMMAND`."""
        self._closed = True
