"""Shared helpers of the vehicle tests: surfaces, friction fields and closed-loop rollouts."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from gym_s3.tracks.friction import FrictionField
from gym_s3.vehicle import VehicleModel, VehicleState

#: Peak friction of the project's named surfaces (the table lives in gym_s3.tracks.surfaces; a
#: local copy keeps these physics tests independent of that module).
SURFACE_MU: dict[str, float] = {
    "asphalt": 1.0,
    "asphalt_wet": 0.7,
    "gravel": 0.6,
    "dirt": 0.65,
    "snow": 0.25,
    "ice": 0.10,
}

Controller = Callable[[int, VehicleState], Tensor]


def coarse_model(**kwargs: object) -> VehicleModel:
    """A 2.5 ms x 20-substep model for tests of properties that hold at any physics step.

    Properties such as energy dissipation, symmetry, batching or determinism must not depend on
    the step, so those tests run 2.5x faster than at the default 1 ms.
    """
    return VehicleModel(physics_dt=2.5e-3, substeps=20, friction_every=2, **kwargs)  # type: ignore[arg-type]


def rollout(
    model: VehicleModel,
    state: VehicleState,
    controller: Controller,
    steps: int,
    friction: FrictionField,
    height_fn: Callable[[Tensor], Tensor] | None = None,
) -> tuple[VehicleState, dict[str, Tensor]]:
    """Step ``steps`` control steps with ``controller(k, state) -> (N, 3)``.

    Returns:
        The final state and the history ``{field: (steps + 1, N, ...)}`` including the start.
    """
    history = [state]
    for k in range(steps):
        state = model.step(state, controller(k, state), friction, height_fn)
        history.append(state)
    names = VehicleState.field_names()
    return state, {name: torch.stack([getattr(s, name) for s in history]) for name in names}


def speed_hold(state: VehicleState, target: float | Tensor, gain: float = 0.5) -> Tensor:
    """Proportional throttle ``(N,)`` that holds the forward speed near ``target`` [m/s]."""
    return (0.05 + gain * (target - state.vx)).clamp(0.0, 1.0)


def controls(
    steer: Tensor | float, throttle: Tensor | float, brake: Tensor | float, n: int
) -> Tensor:
    """Stack ``(N, 3)`` controls from scalars or ``(N,)`` tensors (float64)."""
    cols = [torch.as_tensor(v, dtype=torch.float64).expand(n) for v in (steer, throttle, brake)]
    return torch.stack(cols, dim=-1)


def kinetic_energy(model: VehicleModel, state: VehicleState) -> Tensor:
    """Body translation + yaw + wheel-spin kinetic energy ``(N,)`` [J]."""
    p = model.params
    body = 0.5 * p.mass * (state.vx**2 + state.vy**2) + 0.5 * p.yaw_inertia * state.yaw_rate**2
    return body + 0.5 * p.wheel_inertia * (state.omega**2).sum(-1)


class HalfPlaneFriction:
    """``mu_left`` where world y > ``y0``, ``mu_right`` elsewhere (a real world-position field)."""

    def __init__(self, y0: float, mu_left: float, mu_right: float) -> None:
        self.y0, self.mu_left, self.mu_right = y0, mu_left, mu_right

    def friction_at(self, points: Tensor) -> Tensor:
        """``(N, Q)`` friction at world ``points`` ``(N, Q, 2)``."""
        left = points[..., 1] > self.y0
        kw = {"dtype": points.dtype, "device": points.device}
        return torch.where(
            left, torch.tensor(self.mu_left, **kw), torch.tensor(self.mu_right, **kw)
        )


class DiscPatch:
    """Dry ground with one circular low-friction patch per car that a test may move.

    Attributes:
        centre: ``(N, 2)`` world centre of each car's patch [m].
        radius: patch radius [m].
        mu_patch: friction on the patch [-].
        mu_ground: friction elsewhere [-].
    """

    def __init__(self, centre: Tensor, radius: float, mu_patch: float, mu_ground: float) -> None:
        self.centre, self.radius = centre, radius
        self.mu_patch, self.mu_ground = mu_patch, mu_ground

    def friction_at(self, points: Tensor) -> Tensor:
        """``(N, Q)`` friction at world ``points`` ``(N, Q, 2)``."""
        inside = (points - self.centre[:, None, :].to(points.dtype)).norm(dim=-1) < self.radius
        kw = {"dtype": points.dtype, "device": points.device}
        patch, ground = torch.tensor(self.mu_patch, **kw), torch.tensor(self.mu_ground, **kw)
        return torch.where(inside, patch, ground)
