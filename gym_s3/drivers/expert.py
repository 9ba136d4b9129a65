"""The scripted expert driver: pure pursuit + PI speed control with noise and perturbations.

One batched controller (:class:`BatchedExpert`) drives N cars at once: ``s3 data generate`` drives
thousands of cars with it, the collection session (``wheel_collector.expert.ExpertInput``) one.
It is a driver of the episode loop (task + source of cars + driver): it reads the cars' state and
the task's :class:`~gym_s3.task_types.TrackSample` and asks the task (:class:`Road`) for the
reference ahead. There is no second copy.

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
  low friction), trail braking, and (opt-in) walking pace at full lock with a held pedal and
  launches (a held throttle from rest and at walking pace, wheel spin on low friction). They
  push the data to the edges of the envelope, beyond the expert's own limits.

Sign conventions: the output action is ``[steer, accel]`` with ``steer = +1`` full right and
``accel < 0`` braking (:mod:`gym_s3.spec`); road-wheel angles are + left.
"""

from __future__ import annotations

import math
from typing import Protocol

import torch
from torch import Tensor

from gym_s3.drivers.expert_config import (
    EVENTS,
    LAUNCH_MAX_SPEED_MPS,
    EventConfig,
    ExpertConfig,
    PerturbationConfig,
)
from gym_s3.errors import ConfigError
from gym_s3.observations import EgoState
from gym_s3.spec import CONTROL_DT_S
from gym_s3.task_types import TrackSample
from gym_s3.tracks.path import PathSample
from gym_s3.vehicle.params import GRAVITY

#: How many events (the first ones of :data:`EVENTS`) draw from the expert's main generator; the
#: rest (``lock_crawl`` and ``launch``, which must stay last) draw from streams of their own, only
#: when enabled.
_SHARED_EVENT_COUNT = EVENTS.index("lock_crawl")

__all__ = ["EVENTS", "BatchedExpert", "EventConfig", "ExpertConfig", "PerturbationConfig", "Road"]


class Road(Protocol):
    """Each car's reference path and target speed (a :class:`~gym_s3.task.TrackingTask`)."""

    def path_at(self, s: Tensor) -> PathSample:
        """Each car's reference path at arc lengths ``(N,)`` [m]."""
        ...

    def target_speed_at(self, s: Tensor) -> Tensor:
        """Each car's target speed [m/s] at arc lengths ``(N,)`` [m]."""
        ...


class BatchedExpert:
    """The expert controller of N cars (stateful: integrators, noise, active events).

    Args:
        n: number of cars N.
        config: gains, noise, perturbations (the defaults when ``None``).
        seed: seed of the noise and the events (CPU generators: one for the noise and the seven
            default events, one of ``lock_crawl``'s own and one of ``launch``'s; runs repeat
            exactly).
        dt: control period [s].
    """

    def __init__(
        self, n: int, config: ExpertConfig | None = None, *, seed: int = 0,
        dt: float = CONTROL_DT_S,
    ) -> None:  # fmt: skip
        if n < 1:
            raise ConfigError(f"the expert needs n >= 1 cars, got {n}")
        config = config or ExpertConfig()
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
        # lock_crawl draws from a stream of its own (only when enabled), so enabling it leaves
        # the noise and the other events of a seed exactly as they were
        self._lock_on = config.perturbations.lock_crawl.rate_per_min > 0
        lock_seed = (int(seed) * 2_654_435_761 + 1) % 2**63
        self._lock_generator = torch.Generator().manual_seed(lock_seed)
        self.lock_steer = torch.zeros(n)  # held steering command of a lock_crawl event [1]
        self.lock_pedal = torch.zeros(n)  # held pedal below its speed cap [1]
        # launch draws from a third stream (only when enabled), for the same reason
        self._launch_on = config.perturbations.launch.rate_per_min > 0
        launch_seed = (int(seed) * 2_654_435_761 + 2) % 2**63
        self._launch_generator = torch.Generator().manual_seed(launch_seed)
        # noise-free, event-free and one speed scale (the lap tables' and the PPO teacher's
        # expert): nothing it would draw can act, so :meth:`act` skips the draws (identical
        # actions, less work; the speed scales of later resets need the stream as it was)
        self._quiet = (
            config.steer_noise == 0.0
            and config.accel_noise == 0.0
            and config.speed_scale[0] == config.speed_scale[1]
            and not bool((self._rate > 0).any())
        )
        self.reset()

    def _uniform(self, shape: tuple[int, ...]) -> Tensor:
        """``U(0, 1)`` draws of the expert's generator."""
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
        shared = (self.n, _SHARED_EVENT_COUNT)
        start_u, dur_u, mag_u = self._uniform(shared), self._uniform(shared), self._uniform(shared)
        sign = torch.where(self._uniform((self.n,)) < 0.5, -1.0, 1.0)
        own = torch.rand(self.n, 6, generator=self._lock_generator) if self._lock_on else (
            torch.ones(self.n, 6))  # fmt: skip
        launch = torch.rand(self.n, 3, generator=self._launch_generator) if self._launch_on else (
            torch.ones(self.n, 3))  # fmt: skip
        start_u, dur_u, mag_u = (torch.cat([u, own[:, i : i + 1], launch[:, i : i + 1]], dim=1)
                                 for i, u in enumerate((start_u, dur_u, mag_u)))  # fmt: skip
        idle = self.event_left <= 0
        start = idle & (start_u < self._rate)
        duration = self._dur[:, 0] + (self._dur[:, 1] - self._dur[:, 0]) * dur_u
        magnitude = self._mag[:, 0] + (self._mag[:, 1] - self._mag[:, 0]) * mag_u
        self.event_left = torch.where(start, duration, self.event_left - self.dt)
        self.event_mag = torch.where(start, magnitude, self.event_mag)
        pulse_start = start[:, EVENTS.index("steer_pulse")]
        self.event_sign = torch.where(pulse_start, sign, self.event_sign)
        lock_start = start[:, EVENTS.index("lock_crawl")]
        side = torch.where(own[:, 3] < 0.5, -1.0, 1.0)
        self.lock_steer = torch.where(lock_start, side * (0.6 + 0.4 * own[:, 4]), self.lock_steer)
        self.lock_pedal = torch.where(lock_start, -0.3 + 0.9 * own[:, 5], self.lock_pedal)
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

    def act(self, ego: EgoState, sample: TrackSample, road: Road) -> Tensor:
        """Actions of the N cars.

        Args:
            ego: measured state of the cars.
            sample: the road under them (``task.measure(ego)`` at the same pose).
            road: each car's reference path and target speed (the cars' tracking task).

        Returns:
            ``(N, 2)`` float32 ``[steer, accel]`` in [-1, 1].
        """
        cfg = self.config
        if self._quiet:
            active, noise = torch.zeros(self.n, len(EVENTS), dtype=torch.bool), self.noise
        else:
            active, noise = self._advance_events(), self._noise_step()
        on = {name: active[:, i] for i, name in enumerate(EVENTS)}
        size = {name: self.event_mag[:, i] for i, name in enumerate(EVENTS)}
        dtype = sample.s.dtype
        x, y, yaw = (t.to(dtype) for t in (ego.x, ego.y, ego.yaw))
        v = ego.v_long.to(dtype).clamp(min=0.0)
        # lateral: pure pursuit + yaw-rate correction
        look = (cfg.lookahead_s * v).clamp(cfg.lookahead_min_m, cfg.lookahead_max_m)
        ahead = road.path_at(sample.s + look)
        dx, dy = ahead.x - x, ahead.y - y
        c, s = torch.cos(yaw), torch.sin(yaw)
        lx, ly = dx * c + dy * s, -dx * s + dy * c
        kappa = 2.0 * ly / (lx.square() + ly.square()).clamp(min=1.0)
        delta = torch.atan(cfg.wheelbase_m * kappa)
        delta = delta + cfg.yaw_rate_gain * (v * kappa - ego.yaw_rate.to(dtype))
        delta_path = torch.atan(cfg.wheelbase_m * road.path_at(sample.s + 0.5 * look).curvature)
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
        v_ref = road.target_speed_at(s_target) * self.speed_scale
        v_ref = v_ref * torch.where(on["overspeed"], size["overspeed"], 1.0)
        v_ref = torch.where(on["lock_crawl"], torch.minimum(v_ref, size["lock_crawl"]), v_ref)
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
        cornering = delta_path.abs() > torch.atan(torch.tensor(cfg.wheelbase_m / 150.0))
        accel = torch.where(
            on["trail_brake"] & cornering, torch.minimum(accel, -size["trail_brake"]), accel
        )
        if self._launch_on:  # off (the default), no car can be launching: no ops on the hot path
            launching = on["launch"] & (v <= LAUNCH_MAX_SPEED_MPS)
            accel = torch.where(launching, size["launch"], accel)
        crawling = on["lock_crawl"]
        steer = torch.where(crawling, self.lock_steer + noise[:, 0], steer)
        accel = torch.where(crawling & (v <= size["lock_crawl"]), self.lock_pedal, accel)
        return torch.stack([steer, accel], dim=-1).clamp(-1.0, 1.0).float()
