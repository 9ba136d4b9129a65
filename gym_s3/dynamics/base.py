"""The contract of every distillable dynamics backend.

A backend is a :class:`torch.nn.Module` with a pure, batched ``step``: given the state of N cars,
their actions and the friction under their wheels, it returns the state one control period later.
One car is N = 1; there is never a per-car Python loop.

State layout (:class:`BackendState`): the pose ``[x, y, yaw]`` and body velocities
``[v_long, v_lat, yaw_rate]`` every backend shares, a history window of standard features that the
learned backends read, and a dict of backend-specific tensors (actuator states, recurrent or
attention caches). Backends predict the velocity change; the pose is integrated by
:func:`integrate_pose`, the same for every backend, after two physical bounds every backend shares:
brakes never drive a car backwards (:func:`brakes_never_reverse`) and runaway or non-finite cars
are frozen (:func:`guard`).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar

import torch
from torch import Tensor, nn

from gym_s3.observations import EgoState
from gym_s3.rows import ResetRows
from gym_s3.spec import CONTROL_DT_S

#: Features of one history step, in order: body velocities [m/s, m/s, rad/s], the action applied
#: from this step to the next [1, 1] and the friction under the FL, FR, RL, RR wheels [-].
HISTORY_FEATURES: tuple[str, ...] = (
    "v_long",
    "v_lat",
    "yaw_rate",
    "steer",
    "accel",
    "mu_fl",
    "mu_fr",
    "mu_rl",
    "mu_rr",
)
NUM_HISTORY_FEATURES = len(HISTORY_FEATURES)
#: Guard against runaway states: speeds and yaw rates beyond these are flagged as faults.
MAX_SPEED = 90.0  # [m/s]
MAX_YAW_RATE = 8.0  # [rad/s]


@dataclass
class BackendState:
    """State of N cars in a dynamics backend.

    Attributes:
        pose: ``(N, 3)`` ``[x, y, yaw]`` [m, m, rad].
        vel: ``(N, 3)`` ``[v_long, v_lat, yaw_rate]`` [m/s, m/s, rad/s].
        history: ``(N, H, 9)`` the last H steps of :data:`HISTORY_FEATURES`, oldest first (the
            action column of the newest row is filled in by ``step``).
        extra: backend-specific ``(N, ...)`` tensors (actuator states, caches).
        fault: ``(N,)`` bool, a non-finite or runaway state was caught and the car frozen.
    """

    pose: Tensor
    vel: Tensor
    history: Tensor
    extra: dict[str, Tensor] = field(default_factory=dict)
    fault: Tensor | None = None

    @property
    def n(self) -> int:
        """Number of cars N."""
        return int(self.pose.shape[0])

    def ego(self) -> EgoState:
        """The standardised :class:`EgoState` of the cars."""
        return EgoState(
            x=self.pose[:, 0],
            y=self.pose[:, 1],
            yaw=self.pose[:, 2],
            v_long=self.vel[:, 0],
            v_lat=self.vel[:, 1],
            yaw_rate=self.vel[:, 2],
        )

    def where(self, mask: Tensor, other: BackendState) -> BackendState:
        """Row-wise ``mask ? other : self`` (sync-free partial reset)."""

        def sel(a: Tensor, b: Tensor) -> Tensor:
            return torch.where(mask.reshape(-1, *([1] * (a.ndim - 1))), b, a)

        return self._combine(other, sel)

    def rows(self, rows: Tensor) -> BackendState:
        """The ``R`` cars ``rows`` ``(R,)`` of the state (copies)."""
        return BackendState(
            pose=self.pose[rows],
            vel=self.vel[rows],
            history=self.history[rows],
            extra={k: v[rows] for k, v in self.extra.items()},
            fault=None if self.fault is None else self.fault[rows],
        )

    @staticmethod
    def cat(states: list[BackendState]) -> BackendState:
        """The cars of ``states`` one after another (same ``extra`` keys and trailing shapes)."""
        faults = [s.fault for s in states]
        return BackendState(
            pose=torch.cat([s.pose for s in states]),
            vel=torch.cat([s.vel for s in states]),
            history=torch.cat([s.history for s in states]),
            extra={k: torch.cat([s.extra[k] for s in states]) for k in states[0].extra},
            fault=None if any(f is None for f in faults) else torch.cat(faults),  # type: ignore[arg-type]
        )

    def index_copy(self, rows: Tensor, other: BackendState) -> BackendState:
        """A copy with rows ``rows`` ``(R,)`` replaced by the ``R`` cars of ``other``."""
        return self._combine(other, lambda a, b: a.index_copy(0, rows, b.to(a.dtype)))

    def index_copy_(self, rows: Tensor, other: BackendState) -> BackendState:
        """Write the ``R`` cars of ``other`` into rows ``rows`` ``(R,)`` in place (same tensors)."""
        return self._combine(other, lambda a, b: a.index_copy_(0, rows, b.to(a.dtype)))

    def _combine(self, other: BackendState, fn) -> BackendState:
        """A state whose every tensor is ``fn(mine, other's)``."""
        fault = None
        if self.fault is not None and other.fault is not None:
            fault = fn(self.fault, other.fault)
        return BackendState(
            pose=fn(self.pose, other.pose),
            vel=fn(self.vel, other.vel),
            history=fn(self.history, other.history),
            extra={k: fn(v, other.extra[k]) for k, v in self.extra.items()},
            fault=fault,
        )

    def tensors(self) -> dict[str, Tensor]:
        """Flat dict of every tensor (for checkpoints of rollouts and tests)."""
        out = {"pose": self.pose, "vel": self.vel, "history": self.history}
        out.update({f"extra.{k}": v for k, v in self.extra.items()})
        if self.fault is not None:
            out["fault"] = self.fault
        return out


def integrate_pose(pose: Tensor, vel_old: Tensor, vel_new: Tensor, dt: float) -> Tensor:
    """Advance ``[x, y, yaw]`` over ``dt`` with trapezoidal body velocities.

    The yaw advances by the mean yaw rate; the body-frame displacement (mean velocities) is rotated
    by the mid-step heading (second-order accurate).

    Args:
        pose: ``(N, 3)`` pose at the start of the step.
        vel_old: ``(N, 3)`` body velocities at the start [m/s, m/s, rad/s].
        vel_new: ``(N, 3)`` body velocities at the end.
        dt: step [s].
    """
    mean = 0.5 * (vel_old + vel_new)
    yaw_mid = pose[:, 2] + 0.5 * dt * mean[:, 2]
    c, s = torch.cos(yaw_mid), torch.sin(yaw_mid)
    dx = (mean[:, 0] * c - mean[:, 1] * s) * dt
    dy = (mean[:, 0] * s + mean[:, 1] * c) * dt
    return torch.stack([pose[:, 0] + dx, pose[:, 1] + dy, pose[:, 2] + dt * mean[:, 2]], dim=-1)


def brakes_never_reverse(vel: Tensor, vel_next: Tensor, action: Tensor) -> Tensor:
    """``vel_next`` with a braked car's forward speed kept from turning backwards.

    Brakes stop a car; they cannot drive it backwards. Under a commanded brake (``accel < 0``)
    the forward speed may fall to zero but not below ``min(v_long, 0)``: a car rolling forwards
    stops at rest, one already rolling backwards may not speed up backwards. The high-fidelity
    data never has a braked car going backwards (none of 783,316 expert rows and 210,652 policy
    rows brakes at ``v_long < -0.05 m/s``), but a learned model that never saw braking at rest
    can predict it (the shipped ``trans``, steering -0.85 and braking 0.25 on snow, reversed to
    -1.37 m/s in ``tools/low_speed_probe.py``).

    Args:
        vel: ``(N, 3)`` body velocities ``[v_long, v_lat, yaw_rate]`` before the step.
        vel_next: ``(N, 3)`` the backend's prediction one control period later.
        action: ``(N, 2)`` ``[steer, accel]`` applied during the step.

    Returns:
        ``(N, 3)`` a new tensor (``vel_next`` may be a view into a backend's cache).
    """
    floor = torch.where(action[:, 1] < 0, vel[:, 0].clamp(max=0.0), -math.inf)
    v_long = torch.maximum(vel_next[:, 0], floor.to(vel_next.dtype))
    return torch.cat([v_long[:, None], vel_next[:, 1:]], dim=-1)


def guard(
    state: BackendState, candidate: BackendState, *, sync_free: bool | None = None
) -> BackendState:
    """Keep ``candidate`` where it is finite and within physical bounds, else freeze and flag.

    A car whose new state is non-finite, faster than :data:`MAX_SPEED` or spinning faster than
    :data:`MAX_YAW_RATE` keeps its previous (finite) state with zero velocity and gets
    ``fault = True``; the environments terminate such cars.

    Args:
        state: the N cars before the step.
        candidate: the N cars after it (its ``fault`` is kept where the car is sound).
        sync_free: select every tensor row-wise with ``torch.where`` (no host synchronisation:
            accelerators and compiled graphs). ``None`` chooses it everywhere but the eager CPU,
            where reading the bad rows costs nothing: there the state is the candidate itself
            when every car is sound (the usual step) and only the bad rows are frozen otherwise.
            Both give the same values (for the same dtypes and ``extra`` keys, as every backend
            step has); the row-wise selection copies every tensor of the state each step (the
            attention caches of ``trans`` and ``dytr`` too), while the CPU path returns the
            candidate's own tensors, so a backend's ``predict`` must return tensors of its own.
    """
    ok = torch.isfinite(candidate.pose).all(-1) & torch.isfinite(candidate.vel).all(-1)
    ok &= candidate.vel[:, :2].norm(dim=-1) <= MAX_SPEED
    ok &= candidate.vel[:, 2].abs() <= MAX_YAW_RATE
    candidate.fault = torch.zeros_like(ok) if candidate.fault is None else candidate.fault
    if sync_free is None:
        sync_free = ok.device.type != "cpu" or torch.compiler.is_compiling()
    bad = ResetRows(~ok) if sync_free else ResetRows.indexed(~ok)
    if bad.empty:
        return candidate
    return bad.put(candidate, _frozen(bad.pick(state)))


def _frozen(state: BackendState) -> BackendState:
    """``state`` at rest and flagged: finite pose, history and caches, zero velocity, ``fault``."""
    return BackendState(
        pose=torch.nan_to_num(state.pose),
        vel=torch.zeros_like(state.vel),
        history=torch.nan_to_num(state.history),
        extra={
            k: torch.nan_to_num(v) if v.is_floating_point() else v for k, v in state.extra.items()
        },
        fault=torch.ones(state.pose.shape[0], dtype=torch.bool, device=state.pose.device),
    )


def shift_history(history: Tensor, newest: Tensor) -> Tensor:
    """Drop the oldest row of ``(N, H, F)`` and append ``newest`` ``(N, F)``."""
    return torch.cat([history[:, 1:], newest[:, None, :]], dim=1)


def history_row(vel: Tensor, action: Tensor, wheel_mu: Tensor) -> Tensor:
    """One ``(N, 9)`` history row: velocities ``(N, 3)``, action ``(N, 2)``, friction ``(N, 4)``."""
    return torch.cat([vel, action.to(vel.dtype), wheel_mu.to(vel.dtype)], dim=-1)


class DynamicsBackend(nn.Module, ABC):
    """Base class of the distillable backends (``bicycle``, ``ddm``, ``trans``, ``dytr``).

    Subclasses set :attr:`name` and :attr:`history_length` and implement :meth:`predict`, which
    maps the history window (whose newest row already holds the action being applied) to the body
    velocities one control period later. :meth:`step` handles the history, the brake bound, pose
    integration and the non-finite guard identically for every backend.
    """

    name: ClassVar[str] = ""
    history_length: int = 1

    def __init__(self, dt: float = CONTROL_DT_S) -> None:
        super().__init__()
        self.dt = float(dt)

    # -------------------------------------------------------------- to implement
    @abstractmethod
    def predict(
        self, history: Tensor, extra: dict[str, Tensor]
    ) -> tuple[Tensor, dict[str, Tensor]]:
        """Body velocities at the next step.

        Args:
            history: ``(N, H, 9)`` standard history, newest row last, its action filled in.
            extra: backend-specific state.

        Returns:
            ``(vel_next (N, 3), extra_next)``, tensors made by this call: never ``history``,
            ``extra`` or one of their tensors handed back unchanged (views of tensors made here
            are fine). :meth:`step` passes them on without a copy, and the env writes reset rows
            into the state in place.
        """

    def initial_extra(self, n: int, device: torch.device, dtype: torch.dtype) -> dict[str, Tensor]:
        """Backend-specific state of N fresh cars (none by default)."""
        return {}

    def config(self) -> dict[str, Any]:
        """JSON-serialisable constructor arguments (stored in checkpoints)."""
        return {"dt": self.dt}

    # -------------------------------------------------------------- shared machinery
    def initial_state(self, pose: Tensor, speed: Tensor, wheel_mu: Tensor) -> BackendState:
        """State of N cars driving straight at ``speed`` with a history of that steady motion.

        Args:
            pose: ``(N, 3)`` start ``[x, y, yaw]``.
            speed: ``(N,)`` start forward speed [m/s].
            wheel_mu: ``(N, 4)`` friction under the wheels [-].
        """
        n = pose.shape[0]
        dtype = pose.dtype
        vel = torch.zeros(n, 3, dtype=dtype, device=pose.device)
        vel[:, 0] = speed.to(dtype)
        row = history_row(vel, torch.zeros(n, 2, dtype=dtype, device=pose.device), wheel_mu)
        history = row[:, None, :].expand(n, self.history_length, -1).clone()
        return BackendState(
            pose=pose.clone(),
            vel=vel,
            history=history,
            extra=self.initial_extra(n, pose.device, dtype),
            fault=torch.zeros(n, dtype=torch.bool, device=pose.device),
        )

    def step(self, state: BackendState, action: Tensor, wheel_mu: Tensor) -> BackendState:
        """Advance N cars by one control period.

        Args:
            state: current state.
            action: ``(N, 2)`` ``[steer, accel]`` in [-1, 1] (already validated and clipped).
            wheel_mu: ``(N, 4)`` friction under the wheels at the current state [-].
        """
        row = history_row(state.vel, action, wheel_mu)
        history = torch.cat([state.history[:, 1:], row[:, None, :]], dim=1)
        vel_next, extra = self.predict(history, state.extra)
        vel_next = brakes_never_reverse(state.vel, vel_next, action)
        pose = integrate_pose(state.pose, state.vel, vel_next, self.dt)
        candidate = BackendState(pose=pose, vel=vel_next, history=history, extra=extra)
        return guard(state, candidate)
