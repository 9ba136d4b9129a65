"""The batched high-fidelity reference vehicle: 1 kHz physics inside 20 Hz control steps."""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable
from typing import NamedTuple

import torch
from torch import Tensor

from gym_s3.errors import ConfigError, DataFormatError
from gym_s3.tracks.friction import FrictionField
from gym_s3.vehicle.constants import build_constants
from gym_s3.vehicle.controls import check_controls
from gym_s3.vehicle.params import GRAVITY, SEDAN, VehicleParams
from gym_s3.vehicle.physics import (
    PhysicsState,
    body_frame,
    chunk,
    contact_points,
    pack_state,
    tyre_state,
    unpack_state,
)
from gym_s3.vehicle.state import VehicleState

#: ``height_fn(points (N, Q, 2) [m]) -> (N, Q)`` terrain height [m].
HeightFn = Callable[[Tensor], Tensor]


class WheelForces(NamedTuple):
    """Per-wheel tyre quantities of a state (wheels ordered FL, FR, RL, RR).

    Attributes:
        force: ``(N, 4, 2)`` tyre force on the car in the body frame (x forward, y left) [N].
        normal_load: ``(N, 4)`` quasi-static normal load [N].
        slip_ratio: ``(N, 4)`` longitudinal slip kappa, positive when driving [-].
        slip_angle: ``(N, 4)`` slip angle alpha, positive when the force points left [rad].
        mu: ``(N, 4)`` peak friction used [-].
    """

    force: Tensor
    normal_load: Tensor
    slip_ratio: Tensor
    slip_angle: Tensor
    mu: Tensor


def _physics_state(state: VehicleState) -> PhysicsState:
    """The integrated fields of ``state``, with ``omega`` wheel-major ``(4, N)``.

    ``omega`` is copied only when its memory is not wheel-major already (states produced by
    :class:`VehicleModel` store it wheel-major, so this is normally a view).
    """
    fields = {name: getattr(state, name) for name in PhysicsState._fields}
    fields["omega"] = state.omega.t().contiguous()
    return PhysicsState(**fields)


class VehicleModel:
    """N double-track cars stepped together at ``physics_dt`` inside control steps.

    One :meth:`step` is one control step of ``substeps`` physics steps (default 50 x 1 ms = the
    20 Hz control period). Friction is read at the four world contact points every
    ``friction_every`` substeps (default 5 ms: a car at 40 m/s moves 0.2 m between reads, so patch
    edges are resolved to well under a metre) and held in between.

    Args:
        params: vehicle parameters (default: the tuned sedan).
        physics_dt: physics step [s].
        substeps: physics steps per control step.
        abs_enabled: enable the anti-lock brakes.
        friction_every: substeps between friction (and height) reads.
        device: torch device of the states this model steps.
        dtype: floating dtype (float32 or float64).
        compile: run the physics through ``torch.compile`` (inductor): about 10x faster per
            step at N = 1 and 3-4x at N = 4096 on CPU. The first step of each batch size
            compiles (about a minute on a 2-core CPU; inductor caches the result on disk, so later
            processes take seconds). Beyond torch._dynamo's recompile limit (8 batch sizes or
            parameter sets) new variants run eagerly. If compilation fails the model warns and
            falls back to eager execution of the same code.
        check_finite: reject non-finite controls with :class:`~gym_s3.errors.ActionError` (one host
            synchronisation per step). When False, a car given non-finite controls is faulted
            instead, without synchronising.
    """

    def __init__(
        self,
        params: VehicleParams = SEDAN,
        *,
        physics_dt: float = 1e-3,
        substeps: int = 50,
        abs_enabled: bool = True,
        friction_every: int = 5,
        device: torch.device | str = "cpu",
        dtype: torch.dtype = torch.float32,
        compile: bool = False,
        check_finite: bool = True,
    ) -> None:
        if not isinstance(params, VehicleParams):
            raise ConfigError(f"params must be a VehicleParams, got {type(params).__name__}")
        if not (math.isfinite(physics_dt) and 0 < physics_dt <= 0.02):
            raise ConfigError(f"physics_dt must be in (0, 0.02] s, got {physics_dt!r}")
        if not (isinstance(substeps, int) and substeps >= 1):
            raise ConfigError(f"substeps must be an int >= 1, got {substeps!r}")
        if not (isinstance(friction_every, int) and 1 <= friction_every):
            raise ConfigError(f"friction_every must be an int >= 1, got {friction_every!r}")
        if dtype not in (torch.float32, torch.float64):
            raise ConfigError(f"dtype must be torch.float32 or torch.float64, got {dtype}")
        self.params = params
        self.physics_dt = float(physics_dt)
        self.substeps = substeps
        self.abs_enabled = bool(abs_enabled)
        self.friction_every = min(friction_every, substeps)
        self.device = torch.device(device)
        self.dtype = dtype
        self.check_finite = check_finite
        self._c = build_constants(params, self.physics_dt, self.abs_enabled, self.device, dtype)
        self._chunk = functools.partial(chunk, self._c)
        self._compiled: Callable | None = None
        if compile:
            self._compiled = torch.compile(self._chunk, fullgraph=True, dynamic=False)

    @property
    def control_dt(self) -> float:
        """Duration of one :meth:`step` [s]."""
        return self.physics_dt * self.substeps

    @property
    def compiled(self) -> bool:
        """Whether steps run through ``torch.compile`` (False after a fallback to eager)."""
        return self._compiled is not None

    # --- states ----------------------------------------------------------------------------------
    def initial_state(
        self,
        x: Tensor | float,
        y: Tensor | float,
        yaw: Tensor | float,
        speed: Tensor | float = 0.0,
        z: Tensor | float = 0.0,
        *,
        n: int | None = None,
    ) -> VehicleState:
        """Cars driving straight at ``speed`` with wheels rolling and actuators released.

        Args:
            x: world x [m], ``(N,)`` or scalar.
            y: world y [m], ``(N,)`` or scalar.
            yaw: heading [rad], ``(N,)`` or scalar.
            speed: forward speed [m/s], ``(N,)`` or scalar.
            z: ground height [m], ``(N,)`` or scalar.
            n: number of cars when every argument is a scalar (default 1).

        Returns:
            A state whose ``mu`` is ``params.mu_ref`` until the first step reads the surface.
        """
        kw = {"device": self.device, "dtype": self.dtype}
        values = [torch.as_tensor(v, **kw) for v in (x, y, yaw, speed, z)]
        if any(v.ndim > 1 for v in values):
            raise ConfigError("initial_state arguments must be scalars or (N,) tensors")
        sizes = {v.shape[0] for v in values if v.ndim == 1}
        if len(sizes) > 1 or (n is not None and sizes and sizes != {n}):
            raise ConfigError(f"initial_state arguments disagree on N: {sorted(sizes)}, n={n}")
        count = sizes.pop() if sizes else (1 if n is None else n)
        x_, y_, yaw_, v_, z_ = (v.expand(count).clone() for v in values)
        zeros = torch.zeros(count, **kw)
        return VehicleState(
            x=x_,
            y=y_,
            yaw=torch.remainder(yaw_ + math.pi, 2 * math.pi) - math.pi,
            z=z_,
            vx=v_,
            vy=zeros.clone(),
            yaw_rate=zeros.clone(),
            omega=(v_ / self.params.wheel_radius).expand(4, count).clone().t(),
            steer_angle=zeros.clone(),
            throttle=zeros.clone(),
            brake=zeros.clone(),
            ax=zeros.clone(),
            ay=zeros.clone(),
            mu=torch.full((count, 4), self.params.mu_ref, **kw),
            fault=torch.zeros(count, dtype=torch.bool, device=self.device),
        )

    def wheel_points(self, state: VehicleState) -> Tensor:
        """World contact-patch positions ``(N, 4, 2)`` [m] (FL, FR, RL, RR)."""
        return contact_points(self._c, state.x, state.y, state.yaw)

    # --- stepping --------------------------------------------------------------------------------
    def step(
        self,
        state: VehicleState,
        controls: Tensor,
        friction: FrictionField,
        height_fn: HeightFn | None = None,
    ) -> VehicleState:
        """Advance every car by one control step (``substeps`` physics steps).

        Args:
            state: current state (N cars, this model's device and dtype).
            controls: ``(N, 3)`` [steer in [-1, 1] (+1 = full right), throttle in [0, 1],
                brake in [0, 1]]; out-of-range values are clipped.
            friction: friction field read at the wheels' contact points.
            height_fn: optional terrain height ``(N, Q, 2) -> (N, Q)`` [m]; when given, ``z`` is
                the mean height under the wheels and the grade between axles (and the bank
                between sides) adds the gravity component along the body axes.

        Returns:
            The new state. Cars whose state became non-finite or ran away have ``fault`` set and
            keep their last good state.
        """
        self._check_state(state)
        check_controls(controls, state.n, check_finite=self.check_finite)
        with torch.no_grad():
            u = controls.to(device=self.device, dtype=self.dtype)
            fault = state.fault
            if not self.check_finite:
                fault = fault | ~torch.isfinite(u).all(-1)
                u = torch.nan_to_num(u, nan=0.0, posinf=0.0, neginf=0.0)
            lo = u.new_tensor([-1.0, 0.0, 0.0])
            hi = u.new_tensor([1.0, 1.0, 1.0])
            scale = u.new_tensor([-self.params.max_steer_rad, 1.0, 1.0])
            cmd = (torch.minimum(torch.maximum(u, lo), hi) * scale).t().contiguous()
            packed = pack_state(_physics_state(state)._replace(fault=fault))
            points = self.wheel_points(state)
            z = state.z
            mu = state.mu
            done = 0
            while done < self.substeps:
                n = min(self.friction_every, self.substeps - done)
                mu = self._read_friction(friction, points)
                grade = None
                if height_fn is not None:
                    z, grade = self._read_height(height_fn, points)
                packed, points = self._run_chunk(packed, cmd, mu.t().contiguous(), grade, n)
                done += n
            s = unpack_state(packed)
        return VehicleState(**s._replace(omega=s.omega.t())._asdict(), z=z, mu=mu)

    def wheel_forces(
        self, state: VehicleState, friction: FrictionField | None = None
    ) -> WheelForces:
        """Tyre forces the physics would apply in ``state``.

        Args:
            state: the state to evaluate (uses its steering angle, wheel speeds and ``ax, ay``).
            friction: field to read at the contact points; ``None`` uses ``state.mu``.

        Returns:
            Body-frame forces, normal loads and slips per wheel (:class:`WheelForces`).
        """
        self._check_state(state)
        with torch.no_grad():
            mu = (
                state.mu
                if friction is None
                else self._read_friction(friction, self.wheel_points(state))
            )
            s = _physics_state(state)
            kin, fz, tyre = tyre_state(self._c, s, state.steer_angle, mu.t().contiguous())
            force = body_frame(tyre.force, kin).permute(2, 1, 0)
            alpha = torch.atan(tyre.tan_slip_angle).t()
            return WheelForces(force, fz.t(), tyre.slip_ratio.t(), alpha, mu)

    # --- internals -------------------------------------------------------------------------------
    def _check_state(self, state: VehicleState) -> None:
        """Reject a state on another device or dtype (cheap, no synchronisation)."""
        if not isinstance(state, VehicleState):
            raise DataFormatError(f"state must be a VehicleState, got {type(state).__name__}")
        if state.dtype != self.dtype or state.device != self.device:
            raise DataFormatError(
                f"state is {state.dtype} on {state.device} but the model runs {self.dtype} on "
                f"{self.device}; use state.to(device=..., dtype=...)"
            )

    def _read_friction(self, friction: FrictionField, points: Tensor) -> Tensor:
        """Peak friction ``(N, 4)`` under the contact points ``(N, 4, 2)``."""
        mu = friction.friction_at(points)
        if not isinstance(mu, Tensor) or tuple(mu.shape) != tuple(points.shape[:2]):
            shape = tuple(mu.shape) if isinstance(mu, Tensor) else type(mu).__name__
            raise ConfigError(
                f"{type(friction).__name__}.friction_at returned {shape}; expected a tensor of "
                f"shape {tuple(points.shape[:2])} (one friction value per car and wheel)"
            )
        return mu.to(device=self.device, dtype=self.dtype)

    def _read_height(self, height_fn: HeightFn, points: Tensor) -> tuple[Tensor, Tensor]:
        """Mean ground height ``(N,)`` [m] and gravity along body x, y ``(2, N)`` [m/s^2]."""
        h = height_fn(points)
        if not isinstance(h, Tensor) or tuple(h.shape) != tuple(points.shape[:2]):
            shape = tuple(h.shape) if isinstance(h, Tensor) else type(h).__name__
            raise ConfigError(
                f"height_fn returned {shape}; expected a tensor of shape "
                f"{tuple(points.shape[:2])} (one height per car and wheel)"
            )
        h = h.to(device=self.device, dtype=self.dtype)
        rise = 0.5 * (h[:, 0] + h[:, 1] - h[:, 2] - h[:, 3])  # front minus rear axle [m]
        bank = 0.5 * (h[:, 0] + h[:, 2] - h[:, 1] - h[:, 3])  # left minus right side [m]
        length, width = self.params.wheelbase, self.params.track_width
        gx = -GRAVITY * rise * torch.rsqrt(rise * rise + length * length)
        gy = -GRAVITY * bank * torch.rsqrt(bank * bank + width * width)
        return h.mean(-1), torch.stack((gx, gy))

    def _run_chunk(
        self, packed: Tensor, cmd: Tensor, mu: Tensor, grade: Tensor | None, n: int
    ) -> tuple[Tensor, Tensor]:
        """Run ``n`` substeps, compiled when enabled (falling back to eager on failure)."""
        if self._compiled is not None:
            try:
                return self._compiled(packed, cmd, mu, grade, n)
            except Exception as exc:  # noqa: BLE001 - any compiler failure -> same code, eager
                warnings.warn(
                    f"torch.compile of the vehicle physics failed ({type(exc).__name__}: {exc}); "
                    "falling back to eager execution",
                    RuntimeWarning,
                    stacklevel=3,
                )
                self._compiled = None
        return self._chunk(packed, cmd, mu, grade, n)
