"""The reference-tracking task shared by ``S3Distilled-v0`` and ``S3BeamNG-v0``.

The two environments differ only in where the next :class:`~gym_s3.observations.EgoState` comes
from (a dynamics backend or simulator sensors). Everything else — drawing a scenario, placing the
car, Frenet projection, observation, reward terms, termination and truncation, episode
statistics — lives here, batched over N cars and free of host synchronisation. The settings are
:class:`~gym_s3.task_config.TaskConfig` (re-exported here).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from gym_s3 import metrics
from gym_s3.errors import ConfigError
from gym_s3.observations import EgoState, build_observation
from gym_s3.rewards import compute_reward
from gym_s3.rows import ResetRows
from gym_s3.scenarios.pool import ScenarioPool
from gym_s3.spec import CONTROL_DT_S, HISTORY_FRAME, HISTORY_STEPS, LOOKAHEAD_M
from gym_s3.task_config import TaskConfig, lap_task
from gym_s3.task_starts import EpisodeStarts
from gym_s3.task_types import END_REASONS, StartPose, TaskStep, TrackSample
from gym_s3.tracks.path import PathSample
from gym_s3.tracks.surfaces import SurfaceBatch
from gym_s3.vehicle.params import SEDAN, VehicleParams

__all__ = [
    "END_REASONS",
    "StartPose",
    "TaskConfig",
    "TaskStep",
    "TrackSample",
    "TrackingTask",
    "lap_task",
]


class TrackingTask:
    """Per-car scenario state and the task logic of N cars.

    Args:
        pool: scenarios to draw from.
        num_envs: number of cars N.
        config: task settings.
        params: the vehicle, for its wheel contact points (friction under each wheel).
        device: device of every per-car tensor (the pool must be on it too).

    Where a reset car begins (scenario draw, start pose and noise) is :attr:`starts`
    (:class:`~gym_s3.task_starts.EpisodeStarts`).
    """

    def __init__(
        self,
        pool: ScenarioPool,
        num_envs: int,
        config: TaskConfig | None = None,
        *,
        params: VehicleParams = SEDAN,
        device: torch.device | str = "cpu",
    ) -> None:
        if num_envs < 1:
            raise ConfigError(f"num_envs must be >= 1, got {num_envs}")
        config = config if config is not None else TaskConfig()
        self.pool = pool
        self.n = num_envs
        self.config = config
        self.device = torch.device(device)
        dtype = pool.speed.dtype
        self.dtype = dtype
        self.wheel_offsets = params.wheel_positions(self.device, dtype)
        self.wheel_reach = float(self.wheel_offsets.norm(dim=-1).max())  # [m] from the centre
        z = torch.zeros(num_envs, dtype=dtype, device=self.device)
        zi = torch.zeros(num_envs, dtype=torch.int64, device=self.device)
        self.scenario = zi.clone()
        self.variant = pool.scenario_variant[zi]
        self.pid = pool.variant_path[self.variant]
        self.hint = zi.clone()
        self.s = z.clone()
        self.steps = zi.clone()
        self.limit = torch.full_like(zi, config.max_episode_steps)
        self.standing = zi.clone()
        self.mu_scale = torch.ones(num_envs, dtype=dtype, device=self.device)
        self.prev_action = torch.zeros(num_envs, 2, dtype=dtype, device=self.device)
        # obs_mode "history": the last control steps, most recent first (see observations.py),
        # the motion [v_long, v_lat, yaw_rate] the last one ended with, and whether a car's
        # motion has been seen (observed or stepped) since its episode began; in the other
        # modes the first two hold no columns (no memory per car)
        keeps = self.keeps_history = config.obs_mode == "history"
        shape = (num_envs, HISTORY_STEPS if keeps else 0, HISTORY_FRAME)
        self.history = torch.zeros(shape, dtype=dtype, device=self.device)
        self.last_motion = torch.zeros(num_envs, 3 if keeps else 0, dtype=dtype, device=self.device)
        self.seen = torch.zeros(num_envs, dtype=torch.bool, device=self.device)
        self.surfaces: SurfaceBatch = pool.surfaces.index(self.variant)
        self.stats = metrics.EpisodeStats.zeros(num_envs, self.device, dtype)
        self.lookahead = torch.tensor(LOOKAHEAD_M, dtype=dtype, device=self.device)
        self.starts = EpisodeStarts(pool, num_envs, config, self.device)

    # ------------------------------------------------------------------ helpers
    def wheel_points(self, ego: EgoState) -> Tensor:
        """``(N, 4, 2)`` world positions of the wheel contact points [m]."""
        c, s = torch.cos(ego.yaw)[:, None], torch.sin(ego.yaw)[:, None]
        ox, oy = self.wheel_offsets[:, 0], self.wheel_offsets[:, 1]
        return torch.stack([ego.x[:, None] + ox * c - oy * s, ego.y[:, None] + ox * s + oy * c], -1)

    def wheel_friction(self, ego: EgoState, *, rows: Tensor | None = None) -> Tensor:
        """``(N, 4)`` peak friction under each wheel from each car's surface layout [-].

        With ``rows``, ``ego`` holds those cars only and the result is ``(R, 4)``.
        """
        mu = self.wheel_surfaces(ego, rows=rows)[0]
        if self.config.friction_noise == 0.0:
            return mu
        return mu * (self.mu_scale if rows is None else self.mu_scale[rows])[:, None]

    def wheel_surfaces(self, ego: EgoState, *, rows: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """``(N, 4)`` peak friction [-] and ``(N, 4)`` int64 surface id under each wheel.

        The layouts' own friction (no friction noise). With ``rows``, ``ego`` holds those cars
        only and the results are ``(R, 4)``.
        """
        surfaces = self.surfaces if rows is None else self.surfaces.index(rows)
        centre = torch.stack([ego.x, ego.y], dim=-1)
        return surfaces.lookup(
            self.wheel_points(ego).to(self.dtype), centre=centre, reach=self.wheel_reach
        )

    def path_at(self, s: Tensor) -> PathSample:
        """Each car's reference path at arc lengths ``(N,)`` or ``(N, J)`` [m]."""
        return self.pool.bank.sample(self.pid, s.to(self.dtype))

    def target_speed_at(self, s: Tensor) -> Tensor:
        """Each car's target speed [m/s] at arc lengths ``(N,)`` or ``(N, J)`` [m]."""
        return self.pool.target_speed(self.variant, s.to(self.dtype))

    def measure(self, ego: EgoState) -> TrackSample:
        """What a logger or a driver knows about the road under every car, without a task step.

        Projects the cars onto their paths (updating the projection hints, as a step does) and
        looks up the target speed and the friction and surface under each wheel. Recorders log
        these columns and the scripted expert drives on them, so they mean the same in every
        log, whichever source produced the cars.
        """
        ego = _sanitize(ego)
        fr = self.pool.bank.project(self.pid, ego.xy, self.hint, window=self.config.window)
        self.hint = fr.index
        mu, surface = self.wheel_surfaces(ego)
        return TrackSample(
            s=fr.s,
            d=fr.d,
            heading=fr.heading,
            curvature=fr.curvature,
            width_left=fr.width_left,
            width_right=fr.width_right,
            target_speed=self.pool.target_speed(self.variant, fr.s),
            mu=mu,
            surface=surface,
        )

    # ------------------------------------------------------------------ reset
    def reset(
        self, mask: Tensor, generator: torch.Generator, scenario: Tensor | None = None
    ) -> StartPose:
        """Draw new scenarios for the cars in ``mask`` and return every car's start pose.

        Rows outside ``mask`` keep their scenario and bookkeeping; their returned pose is the
        start pose of their current scenario and should be ignored by the caller.

        Args:
            mask: ``(N,)`` bool, cars to reset.
            generator: CPU generator that draws scenarios and start noise (seeded by the env).
            scenario: optional ``(N,)`` scenario ids to use instead of random draws.
        """
        return self.begin(ResetRows(mask), generator, scenario)

    def begin(
        self, select: ResetRows, generator: torch.Generator, scenario: Tensor | None = None
    ) -> StartPose:
        """Start new episodes for the selected cars; returns the start poses of ``select``'s rows.

        A masked selector works on all N cars (sync-free; unselected rows keep everything and
        their returned pose is to be ignored); an indexed one works on the R selected cars only
        (the CPU fast path). Both draw the same random numbers (one per car, kept for the
        selected ones), so they give identical episodes.

        Args:
            select: the cars to reset (:class:`~gym_s3.rows.ResetRows`).
            generator: CPU generator that draws scenarios and start noise (seeded by the env).
            scenario: optional scenario ids instead of random draws, one per row of ``select``.
        """
        if scenario is None:
            new = select.pick(self.starts.sample(generator))
        else:
            new = scenario.to(self.device)
        if select.rows is None:
            new = torch.where(select.mask, new, self.scenario)
        pose, s0, start_idx, mu_scale, prev = self.starts.draw(new, generator, select.rows)
        self._start(select, new, self.pool.scenario_variant[new], s0, start_idx, mu_scale, prev)
        return pose

    def slow_scenarios(self) -> Tensor:
        """``(S,)`` bool: the pool's slow scenarios (:meth:`EpisodeStarts.slow_scenarios`)."""
        return self.starts.slow_scenarios()

    def slow_start_share(self) -> float:
        """Expected share of episodes that start on a slow scenario (see ``slow_start_weight``)."""
        return self.starts.slow_start_share()

    def begin_at(self, select: ResetRows, variant: Tensor, s0: Tensor) -> None:
        """Start new episodes for the selected cars on given variants at given arc lengths.

        For callers that place the cars themselves (``s3 data generate`` draws its own starts
        anywhere along a path); the cars' scenario id is ``-1`` (none of the pool's starts) and
        they feel the surfaces' nominal friction (no friction noise).

        Args:
            select: the cars to reset.
            variant: ``(R,)`` int64 pool variant of each selected car (``(N,)`` when masked).
            s0: ``(R,)`` start arc length of each [m].
        """
        variant = variant.to(device=self.device, dtype=torch.int64)
        if select.rows is None:
            variant = torch.where(select.mask, variant, self.variant)
        s0 = s0.to(device=self.device, dtype=self.dtype)
        bank, pid = self.pool.bank, self.pool.variant_path[variant]
        start_idx = bank.locate(pid, s0).idx
        ones = torch.ones_like(s0)
        still = torch.zeros(len(s0), 2, dtype=self.dtype, device=self.device)
        self._start(select, torch.full_like(variant, -1), variant, s0, start_idx, ones, still)

    def _start(
        self,
        select: ResetRows,
        scenario: Tensor,
        variant: Tensor,
        s0: Tensor,
        start_idx: Tensor,
        mu_scale: Tensor,
        prev_action: Tensor,
    ) -> None:
        """Write the per-car bookkeeping of episodes that start (rows as ``select`` gives them).

        ``prev_action`` ``(R, 2)`` is the previous action their first observation shows.
        """
        put = select.put
        self.scenario = put(self.scenario, scenario)
        self.variant = put(self.variant, variant)
        self.pid = put(self.pid, self.pool.variant_path[variant])
        # the per-car layouts are the task's own copy (never handed out): written in place
        self.surfaces = select.put_(self.surfaces, self.pool.surfaces.index(variant))
        self.hint = put(self.hint, start_idx)
        self.s = put(self.s, s0)
        self.steps = put(self.steps, torch.zeros_like(start_idx))
        self.standing = put(self.standing, torch.zeros_like(start_idx))
        self.limit = put(self.limit, self._step_limit(variant, s0))
        self.mu_scale = put(self.mu_scale, mu_scale)
        self.prev_action = put(self.prev_action, prev_action)
        if self.keeps_history:
            blank = self.history.new_zeros(len(s0), *self.history.shape[1:])
            self.history = put(self.history, blank)
            self.seen = put(self.seen, torch.zeros_like(start_idx, dtype=torch.bool))
        self.stats.reset(select.mask)

    def _step_limit(self, variant: Tensor, start: Tensor) -> Tensor:
        """``(R,)`` steps before truncation of episodes on ``variant`` starting at ``start`` [m]."""
        cfg = self.config
        cap = torch.full_like(variant, cfg.max_episode_steps)
        if cfg.time_limit_factor is None:
            return cap
        ref = self.pool.route_time(variant, start, cfg.complete_laps or 1.0)
        steps = torch.ceil(cfg.time_limit_factor * ref / CONTROL_DT_S).to(torch.int64)
        return torch.minimum(steps.clamp(min=1), cap)

    # ------------------------------------------------------------------ observation and step
    def _observe(
        self,
        ego: EgoState,
        frenet,
        v_ref: Tensor,
        wheel_mu: Tensor | None,
        rows: Tensor | None = None,
    ) -> Tensor:
        """Observation of every car, or of the cars ``rows`` (``ego`` etc. are those rows)."""
        pid, variant, prev = self.pid, self.variant, self.prev_action
        history = self.history if self.keeps_history else None
        if rows is not None:
            pid, variant, prev = pid[rows], variant[rows], prev[rows]
            history = None if history is None else history[rows]
        look_x, look_y, look_v = self.lookahead_points(pid, variant, frenet.s)
        return build_observation(
            ego,
            cross_track=frenet.d,
            heading_err=metrics.heading_error(ego.yaw, frenet.heading),
            speed_err=metrics.speed_error(ego.v_long, v_ref),
            prev_action=prev,
            lookahead_x=look_x,
            lookahead_y=look_y,
            lookahead_v=look_v,
            wheel_mu=wheel_mu,
            history=history,
            mode=self.config.obs_mode,
        )

    def lookahead_points(
        self, pid: Tensor, variant: Tensor, s: Tensor
    ) -> tuple[Tensor, Tensor, Tensor]:
        """World x, y [m] and target speed [m/s] ``(R, K)`` of the lookahead points.

        They lie :data:`~gym_s3.spec.LOOKAHEAD_M` ahead of arc lengths ``s`` ``(R,)`` on paths
        ``pid`` of variants ``variant``; one segment search serves positions and speeds.
        """
        look_s = s[:, None] + self.lookahead[None, :]
        loc = self.pool.bank.locate(pid, look_s)
        look_x, look_y = self.pool.bank.position(pid, loc)
        return look_x, look_y, self.pool.target_speed(variant, look_s, loc=loc)

    def observe(
        self, ego: EgoState, wheel_mu: Tensor | None = None, *, rows: Tensor | None = None
    ) -> Tensor:
        """Observation without advancing the task (used right after a reset).

        Args:
            ego: the state of every car, or of the cars ``rows``.
            wheel_mu: friction under their wheels (computed from the layouts when omitted).
            rows: optional ``(R,)`` indices: observe only these cars (CPU reset fast path).
        """
        ego = _sanitize(ego)
        pid, hint = (self.pid, self.hint) if rows is None else (self.pid[rows], self.hint[rows])
        fr = self.pool.bank.project(pid, ego.xy, hint, window=self.config.window)
        self.hint = fr.index if rows is None else self.hint.index_copy(0, rows, fr.index)
        variant = self.variant if rows is None else self.variant[rows]
        v_ref = self.pool.target_speed(variant, fr.s)
        if wheel_mu is None and self.config.obs_mode == "oracle":
            wheel_mu = self.wheel_friction(ego, rows=rows)
        if self.keeps_history:
            self._first_sight(ego, rows)
        return self._observe(ego, fr, v_ref, wheel_mu, rows)

    def _first_sight(self, ego: EgoState, rows: Tensor | None) -> None:
        """Take the motion of cars not seen since their episode began as their history's base."""
        motion = _motion(ego)
        if rows is None:
            self.last_motion = torch.where(self.seen[:, None], self.last_motion, motion)
            self.seen = torch.ones_like(self.seen)
            return
        kept = self.last_motion[rows]
        motion = torch.where(self.seen[rows][:, None], kept, motion)
        self.last_motion = self.last_motion.index_copy(0, rows, motion)
        self.seen = self.seen.index_fill(0, rows, True)

    def step(
        self,
        ego: EgoState,
        action: Tensor,
        *,
        fault: Tensor | None = None,
        wheel_mu: Tensor | None = None,
    ) -> TaskStep:
        """Advance the task by one control step of every car.

        Args:
            ego: the cars' state after the step.
            action: ``(N, 2)`` the (validated, clipped) action that was applied.
            fault: ``(N,)`` bool, the simulator flagged the car (non-finite or runaway state).
            wheel_mu: ``(N, 4)`` friction under the wheels after the step (computed from the
                layout when omitted).
        """
        cfg = self.config
        finite = ego.is_finite()
        bad = ~finite if fault is None else (~finite | fault.to(self.device))
        ego = _sanitize(ego)
        if wheel_mu is None:
            wheel_mu = self.wheel_friction(ego)
        fr = self.pool.bank.project(self.pid, ego.xy, self.hint, window=cfg.window)
        self.hint = fr.index
        length = self.pool.bank.length[self.pid]
        closed = self.pool.bank.closed[self.pid]
        advanced = metrics.progress(self.s, fr.s, length, closed)
        self.s = fr.s
        v_ref = self.pool.target_speed(self.variant, fr.s)
        herr = metrics.heading_error(ego.yaw, fr.heading)
        serr = metrics.speed_error(ego.v_long, v_ref)
        off = metrics.off_track(fr.d, fr.width_left, fr.width_right, cfg.off_track_margin_m)
        spin = herr.abs() > cfg.spin_heading_rad
        completed = ~closed & (fr.s >= length - cfg.complete_margin_m)
        if cfg.complete_laps is not None:
            laps = (self.stats.progress + advanced) / length
            completed = completed | (closed & (laps >= cfg.complete_laps))
        stalled = self._stalled(ego.v_long)
        failed = off | spin | bad | stalled
        terminated = failed | completed
        self.steps = self.steps + 1
        truncated = (self.steps >= self.limit) & ~terminated
        action = action.to(self.dtype)
        delta = metrics.action_change(action, self.prev_action)
        reward, terms = compute_reward(
            cfg.reward,
            advanced=advanced,
            lateral_offset=fr.d,
            heading_err=herr,
            speed_err=serr,
            target_speed=v_ref,
            action_delta=delta,
            failed=failed,
            accel=action[:, 1],
        )
        reward = torch.where(bad, torch.full_like(reward, -cfg.reward.failure), reward)
        self.stats.update(
            lateral_offset=fr.d,
            heading_err=herr,
            speed_err=serr,
            action_delta=delta,
            advanced=advanced,
            is_off_track=off,
            curvature=fr.curvature,
        )
        self.prev_action = action
        if self.keeps_history:
            self._remember(ego, action)
        obs = self._observe(ego, fr, v_ref, wheel_mu if cfg.obs_mode == "oracle" else None)
        info: dict[str, Tensor] = {f"reward/{k}": v for k, v in terms.items()}
        info.update(
            x=ego.x,
            y=ego.y,
            yaw=ego.yaw,
            cross_track_error=fr.d,
            heading_error=herr,
            speed_error=serr,
            target_speed=v_ref,
            s=fr.s,
            scenario=self.scenario.clone(),
            off_track=off,
            spin_out=spin,
            non_finite=bad,
            stalled=stalled,
            completed=completed,
            wheel_mu=wheel_mu,
        )
        summary = self.stats.summary()
        summary["completion"] = metrics.completion(self.stats.progress, length)
        info.update({f"episode/{k}": v for k, v in summary.items()})
        return TaskStep(obs, reward.to(torch.float32), terminated, truncated, info)

    def _remember(self, ego: EgoState, action: Tensor) -> None:
        """Push the step that just ended onto every car's history (``history`` mode).

        The step's measured accelerations are the change of ``[v_long, v_lat, yaw_rate]`` over
        it per second, from the motion the car was last seen with (its first observation or its
        previous step); a car stepped without having been observed since its episode began has
        none (zeros).
        """
        motion = _motion(ego)
        rates = (motion - self.last_motion) / CONTROL_DT_S
        rates = torch.where(self.seen[:, None], rates, torch.zeros_like(rates))
        frame = torch.cat([rates, action], dim=-1)
        self.history = torch.cat([frame[:, None], self.history[:, :-1]], dim=1)
        self.last_motion = motion
        self.seen = torch.ones_like(self.seen)

    def _stalled(self, speed: Tensor) -> Tensor:
        """``(N,)`` bool: the car has stood (``speed`` below the stall speed) for the stall time."""
        cfg = self.config
        standing = speed.abs() < cfg.stall_speed_mps
        self.standing = torch.where(standing, self.standing + 1, torch.zeros_like(self.standing))
        if cfg.stall_time_s is None:
            return torch.zeros_like(standing)
        return self.standing >= math.ceil(cfg.stall_time_s / CONTROL_DT_S - 1e-9)


def _motion(ego: EgoState) -> Tensor:
    """``(N, 3)`` ``[v_long, v_lat, yaw_rate]`` (m/s, m/s, rad/s)."""
    return torch.stack([ego.v_long, ego.v_lat, ego.yaw_rate], dim=-1)


def _sanitize(ego: EgoState) -> EgoState:
    """Replace non-finite fields by zeros so projections and observations stay finite."""
    return EgoState(*(torch.nan_to_num(t, nan=0.0, posinf=0.0, neginf=0.0) for t in (
        ego.x, ego.y, ego.yaw, ego.v_long, ego.v_lat, ego.yaw_rate)))  # fmt: skip
