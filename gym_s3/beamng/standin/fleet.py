"""The vehicles of the stand-in world as one batch, stepped by the reference vehicle simulator.

All N vehicles of a world live in one :class:`~gym_s3.vehicle.VehicleState` (row ``i`` is the
``i``-th vehicle in spawn order) and are stepped by one batched call per frame; there is no
per-vehicle loop. Controls are latched in an ``(N, 5)`` tensor (steering, throttle, brake,
parking brake, clutch) exactly as BeamNG keeps the last input until a new one arrives.

Frames: BeamNG advances ``1 / steps_per_second`` seconds per ``Step`` count. The physics runs at
``steps_per_second * substeps`` Hz with ``substeps = round(physics_rate_hz / steps_per_second)``,
so a frame is always an exact number of physics steps (1 kHz for 20 or 50 steps per second,
1020 Hz for 60).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch
from torch import Tensor

from gym_s3.tracks.friction import FrictionField
from gym_s3.vehicle import VehicleModel, VehicleParams, VehicleState

if TYPE_CHECKING:  # pragma: no cover
    from gym_s3.beamng.standin.config import WorldConfig

#: columns of the latched control tensor
CONTROL_COLUMNS = ("steering", "throttle", "brake", "parkingbrake", "clutch")
STEER, THROTTLE, BRAKE, PARKINGBRAKE, CLUTCH = range(len(CONTROL_COLUMNS))


@dataclass(frozen=True)
class Pose:
    """A planar vehicle pose.

    Attributes:
        x: world x of the centre of gravity [m].
        y: world y of the centre of gravity [m].
        yaw: heading [rad, CCW from +x].
    """

    x: float
    y: float
    yaw: float


class Fleet:
    """Batched vehicle states, latched controls and smoothed accelerations of a world.

    Args:
        params: vehicle parameters shared by every vehicle.
        physics_rate_hz: target physics rate [Hz].
        smoothing_rate: rate of the first-order filter of the smoothed accelerations [1/s].
        abs_enabled: simulate ABS.
        device: torch device of the state.
        dtype: floating dtype of the state.
    """

    def __init__(
        self,
        params: VehicleParams,
        *,
        physics_rate_hz: float,
        smoothing_rate: float,
        abs_enabled: bool,
        device: torch.device,
        dtype: torch.dtype,
        compile: bool = False,
    ) -> None:
        self.params = params
        self.compile = compile
        self.physics_rate_hz = physics_rate_hz
        self.smoothing_rate = smoothing_rate
        self.abs_enabled = abs_enabled
        self.device = device
        self.dtype = dtype
        self._models: dict[int, VehicleModel] = {}
        self.state: VehicleState | None = None
        self.controls = torch.zeros((0, len(CONTROL_COLUMNS)), device=device, dtype=dtype)
        #: ``(N, 3)`` smoothed body accelerations [forward, left, up] [m/s^2]
        self.accel_smooth = torch.zeros((0, 3), device=device, dtype=dtype)
        #: ``(N,)`` +1 drive, 0 neutral (also used for reverse, which is not simulated)
        self.drive_enabled = torch.ones(0, device=device, dtype=dtype)

    @staticmethod
    def from_config(config: WorldConfig) -> Fleet:
        """The (empty) fleet of a stand-in world with ``config``'s physics settings."""
        return Fleet(
            config.vehicle_params,
            physics_rate_hz=config.physics_rate_hz,
            smoothing_rate=config.smoothing_rate,
            abs_enabled=config.abs_enabled,
            device=torch.device(config.device),
            dtype=getattr(torch, config.dtype),
            compile=config.compile,
        )

    @property
    def n(self) -> int:
        """Number of vehicles N."""
        return 0 if self.state is None else self.state.n

    def model(self, steps_per_second: int) -> VehicleModel:
        """The vehicle model whose ``step`` advances exactly one frame at ``steps_per_second``."""
        model = self._models.get(steps_per_second)
        if model is None:
            substeps = max(1, round(self.physics_rate_hz / steps_per_second))
            model = VehicleModel(
                self.params,
                physics_dt=1.0 / (steps_per_second * substeps),
                substeps=substeps,
                abs_enabled=self.abs_enabled,
                device=self.device,
                dtype=self.dtype,
                compile=self.compile,
                # compiled: one chunk size per frame (one graph); friction read about every 5 ms
                friction_every=_divisor_near(substeps, 5) if self.compile else 5,
            )
            self._models[steps_per_second] = model
        return model

    def warm_up(self, steps_per_second: int) -> None:
        """Build and run the frame model of ``steps_per_second`` once on a dummy car.

        With ``compile=True`` this moves the one-off compilation (up to a minute on a small CPU,
        seconds from inductor's disk cache) to server start, so no client request waits for it.
        """
        from gym_s3.tracks.friction import UniformFriction

        model = self.model(steps_per_second)
        state = self._fresh([Pose(0.0, 0.0, 0.0)], [0.0], [10.0])
        commands = torch.zeros((1, 3), device=self.device, dtype=self.dtype)
        model.step(state, commands, UniformFriction(1.0))

    def any_model(self) -> VehicleModel:
        """A model for frame-independent work (initial states, contact points)."""
        return next(iter(self._models.values()), None) or self.model(60)

    # ------------------------------------------------------------------------------- rows
    def _fresh(self, poses: list[Pose], heights: list[float], speeds: list[float]) -> VehicleState:
        def col(values: list[float]) -> Tensor:
            return torch.tensor(values, device=self.device, dtype=self.dtype)

        return self.any_model().initial_state(
            col([p.x for p in poses]),
            col([p.y for p in poses]),
            col([p.yaw for p in poses]),
            speed=col(speeds),
            z=col(heights),
        )

    def add(self, pose: Pose, height: float) -> int:
        """Append a vehicle at rest; returns its row."""
        fresh = self._fresh([pose], [height], [0.0])
        self.state = fresh if self.state is None else VehicleState.cat([self.state, fresh])
        zeros = torch.zeros((1, len(CONTROL_COLUMNS)), device=self.device, dtype=self.dtype)
        self.controls = torch.cat([self.controls, zeros])
        self.accel_smooth = torch.cat([self.accel_smooth, zeros[:, :3]])
        self.drive_enabled = torch.cat([self.drive_enabled, zeros.new_ones(1)])
        return self.n - 1

    def remove(self, row: int) -> None:
        """Drop the vehicle in ``row`` (later rows move up by one)."""
        keep = [i for i in range(self.n) if i != row]
        if not keep:
            self.clear()
            return
        assert self.state is not None
        self.state = self.state.index(keep)
        self.controls = self.controls[keep]
        self.accel_smooth = self.accel_smooth[keep]
        self.drive_enabled = self.drive_enabled[keep]

    def clear(self) -> None:
        """Remove every vehicle."""
        self.state = None
        self.controls = self.controls[:0]
        self.accel_smooth = self.accel_smooth[:0]
        self.drive_enabled = self.drive_enabled[:0]

    def place(
        self, rows: list[int], poses: list[Pose], heights: list[float], *, reset: bool
    ) -> None:
        """Move vehicles to new poses.

        Args:
            rows: rows to move.
            poses: their new poses.
            heights: ground height under each [m].
            reset: ``True`` puts them at rest (zero velocities, wheel spin, actuator states,
                smoothed accelerations); ``False`` keeps their body-frame motion.
        """
        assert self.state is not None
        mask = torch.zeros(self.n, dtype=torch.bool, device=self.device)
        mask[rows] = True
        full_poses = self.poses()
        full_heights = self.state.z.tolist()
        for row, pose, height in zip(rows, poses, heights, strict=True):
            full_poses[row], full_heights[row] = pose, height
        fresh = self._fresh(full_poses, full_heights, [0.0] * self.n)
        if not reset:
            moved = self.state.clone()
            moved.x, moved.y, moved.yaw, moved.z = fresh.x, fresh.y, fresh.yaw, fresh.z
            fresh = moved
        else:
            self.accel_smooth[rows] = 0.0
        self.state = fresh.where(mask, self.state)

    def set_forward_speed(self, row: int, speed: float) -> None:
        """Give a vehicle a forward speed [m/s] with rolling wheels and no sideslip or yaw rate."""
        assert self.state is not None
        s = self.state = self.state.clone()
        s.vx[row], s.vy[row], s.yaw_rate[row] = speed, 0.0, 0.0
        s.omega[row] = speed / self.params.wheel_radius

    def poses(self) -> list[Pose]:
        """Current pose of every vehicle."""
        if self.state is None:
            return []
        xs, ys, yaws = (v.tolist() for v in (self.state.x, self.state.y, self.state.yaw))
        return [Pose(x, y, yaw) for x, y, yaw in zip(xs, ys, yaws, strict=True)]

    # ------------------------------------------------------------------------------ physics
    def step(
        self,
        frames: int,
        steps_per_second: int,
        friction: FrictionField,
        height_fn: object | None,
    ) -> None:
        """Advance every vehicle by ``frames`` frames of ``1 / steps_per_second`` seconds."""
        if self.state is None or frames <= 0:
            return
        model = self.model(steps_per_second)
        c = self.controls
        commands = torch.stack(
            (
                c[:, STEER],
                c[:, THROTTLE] * self.drive_enabled,
                torch.maximum(c[:, BRAKE], c[:, PARKINGBRAKE]),
            ),
            dim=-1,
        )
        gain = 1.0 - math.exp(-self.smoothing_rate / steps_per_second)
        state = self.state
        for _ in range(frames):
            state = model.step(state, commands, friction, height_fn=height_fn)
            accel = torch.stack((state.ax, state.ay, torch.zeros_like(state.ax)), dim=-1)
            self.accel_smooth = self.accel_smooth + gain * (accel - self.accel_smooth)
        self.state = state

    def contact_points(self) -> Tensor:
        """World contact-patch positions ``(N, 4, 2)`` [m] (wheels FL, FR, RL, RR)."""
        assert self.state is not None
        return self.any_model().wheel_points(self.state)

    def snapshot(self) -> dict[str, np.ndarray]:
        """Every per-vehicle quantity the sensors need, as numpy arrays with leading N."""
        assert self.state is not None
        out = {name: _numpy(getattr(self.state, name)) for name in VehicleState.field_names()}
        out["controls"] = _numpy(self.controls)
        out["accel_smooth"] = _numpy(self.accel_smooth)
        return out


def _numpy(tensor: Tensor) -> np.ndarray:
    """A numpy copy (never a view that later in-place updates could change)."""
    return tensor.detach().cpu().numpy().copy()


def _divisor_near(n: int, target: int) -> int:
    """The divisor of ``n`` closest to ``target`` (ties: the smaller one)."""
    divisors = [d for d in range(1, n + 1) if n % d == 0]
    return min(divisors, key=lambda d: (abs(d - target), d))
