"""What the logger and the expert know about the road: Frenet coordinates, target speed, friction.

A :class:`TrackSide` follows N cars, each on one *variant* of a
:class:`~gym_s3.scenarios.pool.ScenarioPool` (a reference path with a surface layout and its
friction-aware speed profile). From a measured pose it computes the logged quantities that no
simulator reports: the Frenet coordinates ``s, d``, the target speed, and the friction and
surface id under each wheel. The collection session (real BeamNG or the stand-in, N = 1) and the
batched generator use this same class, so these columns mean the same in every log.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from gym_s3.errors import ConfigError
from gym_s3.scenarios.pool import PoolConfig, ScenarioPool
from gym_s3.tracks.path import PathSample, ReferencePath
from gym_s3.tracks.surfaces import SurfaceLayout
from gym_s3.vehicle.params import SEDAN, VehicleParams


@dataclass(frozen=True)
class TrackSample:
    """Track-side view of N cars; every field ``(N,)`` unless noted.

    Attributes:
        s: arc length of the projection [m].
        d: lateral offset, + left [m].
        heading: path heading at the projection [rad].
        curvature: path curvature at the projection [1/m].
        width_left: road width left of the centreline [m].
        width_right: road width right of the centreline [m].
        target_speed: friction-aware target speed at ``s`` [m/s].
        mu: ``(N, 4)`` peak friction under the FL, FR, RL, RR wheels [-].
        surface: ``(N, 4)`` int64 surface id under each wheel (index into ``SURFACE_NAMES``).
    """

    s: Tensor
    d: Tensor
    heading: Tensor
    curvature: Tensor
    width_left: Tensor
    width_right: Tensor
    target_speed: Tensor
    mu: Tensor
    surface: Tensor


class TrackSide:
    """Frenet projection, target speed and wheel friction of N cars on pool variants.

    Args:
        pool: the variants (paths, layouts, speed profiles).
        variant: ``(N,)`` int64 variant of each car.
        params: vehicle parameters (wheel contact points).
        window: half-width of the windowed Frenet search [samples]; it must cover one control
            step of travel.
    """

    def __init__(
        self,
        pool: ScenarioPool,
        variant: Tensor,
        *,
        params: VehicleParams = SEDAN,
        window: int = 12,
    ) -> None:
        if variant.ndim != 1 or variant.numel() == 0:
            raise ConfigError(
                f"variant must be a non-empty (N,) tensor, got {tuple(variant.shape)}"
            )
        if int(variant.max()) >= pool.num_variants or int(variant.min()) < 0:
            raise ConfigError(f"variant ids must be in [0, {pool.num_variants})")
        self.pool = pool
        self.dtype = pool.speed.dtype
        self.window = window
        self.wheel_offsets = params.wheel_positions(dtype=self.dtype)
        self.set_variant(variant)

    @staticmethod
    def single(
        path: ReferencePath,
        layout: SurfaceLayout,
        *,
        pool_config: PoolConfig | None = None,
        params: VehicleParams = SEDAN,
    ) -> TrackSide:
        """A one-car track side for one path and layout (the collection session)."""
        pool = ScenarioPool.build([path], [[layout]], pool_config or PoolConfig(), starts=[[0.0]])
        return TrackSide(pool, torch.zeros(1, dtype=torch.int64), params=params)

    def set_variant(self, variant: Tensor) -> None:
        """Put the cars on new variants (forgets the projection hints)."""
        self.variant = variant.to(torch.int64)
        self.pid = self.pool.variant_path[self.variant]
        self.surfaces = self.pool.surfaces.index(self.variant)
        self.hint: Tensor | None = None

    @property
    def n(self) -> int:
        """Number of cars N."""
        return int(self.variant.shape[0])

    @property
    def length(self) -> Tensor:
        """``(N,)`` length of each car's path [m]."""
        return self.pool.bank.length[self.pid]

    @property
    def closed(self) -> Tensor:
        """``(N,)`` bool, each car's path is a loop."""
        return self.pool.bank.closed[self.pid]

    def forget(self) -> None:
        """Use a global search at the next :meth:`measure` (after a teleport or reset)."""
        self.hint = None

    def wheel_points(self, x: Tensor, y: Tensor, yaw: Tensor) -> Tensor:
        """``(N, 4, 2)`` world contact points of the wheels [m]."""
        c, s = torch.cos(yaw)[:, None], torch.sin(yaw)[:, None]
        ox, oy = self.wheel_offsets[:, 0], self.wheel_offsets[:, 1]
        return torch.stack([x[:, None] + ox * c - oy * s, y[:, None] + ox * s + oy * c], dim=-1)

    def measure(self, x: Tensor, y: Tensor, yaw: Tensor) -> TrackSample:
        """Track-side quantities of the cars at world poses ``(N,)`` [m, m, rad]."""
        x, y, yaw = (v.to(self.dtype) for v in (x, y, yaw))
        fr = self.pool.bank.project(
            self.pid, torch.stack([x, y], dim=-1), self.hint, window=self.window
        )
        self.hint = fr.index
        mu, surface = self.surfaces.lookup(self.wheel_points(x, y, yaw))
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

    def sample(self, s: Tensor) -> PathSample:
        """Each car's path at arc lengths ``(N,)`` or ``(N, J)`` [m]."""
        return self.pool.bank.sample(self.pid, s.to(self.dtype))

    def target_speed(self, s: Tensor) -> Tensor:
        """Target speed [m/s] of each car's variant at arc lengths ``(N,)`` or ``(N, J)``."""
        return self.pool.target_speed(self.variant, s.to(self.dtype))

    def start_pose(self, s: Tensor, lateral: Tensor | None = None) -> Sequence[Tensor]:
        """World pose ``(x, y, z, yaw)`` ``(N,)`` at arc lengths ``s``, offset ``lateral`` left."""
        smp = self.sample(s)
        off = torch.zeros_like(smp.x) if lateral is None else lateral.to(smp.x.dtype)
        h = smp.heading
        return smp.x - off * torch.sin(h), smp.y + off * torch.cos(h), smp.z, h
