"""Where episodes start: scenario draws and start poses with their noise.

:class:`EpisodeStarts` is the part of :class:`~gym_s3.task.TrackingTask` that decides where a car
that resets begins: which scenario of the pool (uniform, or slow scenarios drawn more often with
``slow_start_weight``), and the start pose around the scenario's start point (lateral, heading and
speed noise, standing starts, the previous action the first observation shows, the episode's
friction scale). Every draw comes from the env's CPU generator, one number per car of the batch
whatever is reset, so a masked and an indexed reset give identical episodes.
"""

from __future__ import annotations

import torch
from torch import Tensor

from gym_s3.errors import ConfigError
from gym_s3.scenarios.pool import ScenarioPool
from gym_s3.task_config import SLOW_START_REACH_M, TaskConfig
from gym_s3.task_types import StartPose

__all__ = ["EpisodeStarts", "StartDraw"]

#: ``(pose, s0, start_index, mu_scale, prev_action)`` of the cars that start (see
#: :meth:`EpisodeStarts.draw`).
StartDraw = tuple[StartPose, Tensor, Tensor, Tensor, Tensor]


class EpisodeStarts:
    """Scenario draws and start poses of N cars on one pool.

    Args:
        pool: the scenarios to draw from.
        num_envs: number of cars N (every draw is made for all N).
        config: the task settings (start noise, standing starts, slow-start weight).
        device: device of the returned tensors (the pool's).

    Raises:
        ConfigError: ``slow_start_weight > 0`` but no scenario of the pool is slow, or the pool
            has more scenarios than weighted draws support (2^24).
    """

    def __init__(
        self, pool: ScenarioPool, num_envs: int, config: TaskConfig, device: torch.device
    ) -> None:
        self.pool = pool
        self.n = num_envs
        self.config = config
        self.device = device
        self.dtype = pool.speed.dtype
        self._weights = self._slow_start_weights() if config.slow_start_weight > 0 else None

    # ------------------------------------------------------------------ slow starts
    def slow_scenarios(self) -> Tensor:
        """``(S,)`` bool: the pool's slow scenarios.

        Those whose target speed falls below ``config.slow_start_speed_mps`` within
        :data:`~gym_s3.task_config.SLOW_START_REACH_M` of their start, read on the paths' own
        sample spacing (a short dip at an apex counts). On a pool built from driving logs the
        target is the driven speed, so a log that starts from rest is slow at its start.
        """
        pool = self.pool
        ds = float(pool.bank.ds.min())
        reach = torch.arange(0.0, SLOW_START_REACH_M + 0.5 * ds, ds, dtype=self.dtype,
                             device=self.device)  # fmt: skip
        s = pool.scenario_start[:, None] + reach[None, :]
        v_min = pool.target_speed(pool.scenario_variant, s).amin(dim=1)
        return v_min < self.config.slow_start_speed_mps

    def slow_start_share(self) -> float:
        """Expected share of episodes that start on a slow scenario (see ``slow_start_weight``)."""
        slow = self.slow_scenarios().to(device="cpu", dtype=torch.float64)
        weights = self._draw_weights(slow)
        return float((weights * slow).sum() / weights.sum())

    def _draw_weights(self, slow: Tensor) -> Tensor:
        """``(S,)`` float64 draw weights from the ``(S,)`` float64 slow flags: ``1 + w * slow``."""
        return 1.0 + self.config.slow_start_weight * slow

    def _slow_start_weights(self) -> Tensor:
        """``(S,)`` float64 CPU draw weights of the pool's scenarios (``slow_start_weight``)."""
        cfg, num = self.config, self.pool.num_scenarios
        if num > 2**24:
            raise ConfigError(
                f"slow_start_weight draws from at most 2^24 scenarios, the pool has {num}; "
                "use fewer tracks or layouts, or set slow_start_weight=0"
            )
        slow = self.slow_scenarios().to(device="cpu", dtype=torch.float64)
        if not bool(slow.any()):
            raise ConfigError(
                f"slow_start_weight={cfg.slow_start_weight:g} but none of the pool's {num} "
                f"scenarios has a target speed below {cfg.slow_start_speed_mps:g} m/s within "
                f"{SLOW_START_REACH_M:g} m of its start; add low-friction layouts (e.g. "
                "`s3 train --pool default_ice`) or tight tracks (town:<seed>), raise "
                "slow_start_speed_mps, or set slow_start_weight=0"
            )
        return self._draw_weights(slow)

    # ------------------------------------------------------------------ draws
    def sample(self, generator: torch.Generator) -> Tensor:
        """``(N,)`` int64 scenario ids, one per car: uniform or weighted (``slow_start_weight``)."""
        if self._weights is None:
            return self.pool.sample(self.n, generator)
        ids = torch.multinomial(self._weights, self.n, replacement=True, generator=generator)
        return ids.to(self.pool.scenario_variant.device)

    def draw(
        self, scenario: Tensor, generator: torch.Generator, rows: Tensor | None = None
    ) -> StartDraw:
        """Start poses of cars beginning ``scenario`` ``(R,)``, with start noise.

        The noise is drawn for all N cars (the same stream whatever is reset) and, with
        ``rows``, kept for those cars. Standing starts, their previous actions and friction
        noise draw only when on.

        Returns:
            ``(pose, s0, start_index, mu_scale, prev_action)``: the poses, the start arc lengths
            ``(R,)`` [m], the sample index of the start (the first projection hint), the
            friction scale of the episode ``(R,)`` and the previous action the first
            observation shows ``(R, 2)``.
        """
        variant = self.pool.scenario_variant[scenario]
        pid = self.pool.variant_path[variant]
        s0 = self.pool.scenario_start[scenario]
        cfg = self.config

        def uniform(lo: float, hi: float) -> Tensor:
            u = torch.rand(self.n, generator=generator, dtype=torch.float64)
            u = (lo + (hi - lo) * u).to(device=self.device, dtype=self.dtype)
            return u if rows is None else u[rows]

        lateral = uniform(-cfg.start_lateral_m, cfg.start_lateral_m)
        dyaw = uniform(-cfg.start_heading_rad, cfg.start_heading_rad)
        frac = uniform(*cfg.start_speed_fraction)
        prev = torch.zeros(len(scenario), 2, dtype=self.dtype, device=self.device)
        if cfg.start_from_rest > 0.0:
            rest = uniform(0.0, 1.0) < cfg.start_from_rest
            frac = torch.where(rest, 0.0, frac)
            if cfg.rest_start_lateral_m is not None:
                wide = uniform(-cfg.rest_start_lateral_m, cfg.rest_start_lateral_m)
                lateral = torch.where(rest, wide, lateral)
            if cfg.rest_start_heading_rad is not None:
                turned = uniform(-cfg.rest_start_heading_rad, cfg.rest_start_heading_rad)
                dyaw = torch.where(rest, turned, dyaw)
            if cfg.rest_start_prev_action:
                drawn = torch.stack([uniform(-1.0, 1.0), uniform(-1.0, 0.0)], dim=-1)
                prev = torch.where(rest[:, None], drawn, prev)
        mu_scale = torch.ones_like(frac)
        if cfg.friction_noise > 0.0:
            mu_scale = uniform(1.0 - cfg.friction_noise, 1.0 + cfg.friction_noise)
        bank = self.pool.bank
        loc = bank.locate(pid, s0)  # one segment search for the pose, the hint and the speed
        smp = bank.sample(pid, s0, loc=loc)
        pose = StartPose(
            x=smp.x - lateral * torch.sin(smp.heading),
            y=smp.y + lateral * torch.cos(smp.heading),
            z=smp.z,
            yaw=smp.heading + dyaw,
            speed=frac * self.pool.target_speed(variant, s0, loc=loc),
        )
        return pose, s0, loc.idx, mu_scale, prev
