"""``bicycle``: the kinematic bicycle baseline with parameters fitted to driving logs.

The car rolls without lateral slip: the yaw rate is ``v tan(delta) / L``. Steering passes through a
first-order lag; acceleration comes from a throttle map limited by a drive-power term, a brake
map, aerodynamic drag and rolling resistance; both the longitudinal and the lateral acceleration
are capped by the mean friction under the wheels. Every parameter is a positive trainable scalar
(softplus of a raw value), fitted by the distillation trainer like any other backend. The defaults
are read off the project's sedan so an unfitted model is already plausible.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import Tensor, nn

from gym_s3.dynamics.base import DynamicsBackend
from gym_s3.spec import CONTROL_DT_S

GRAVITY = 9.81  # [m/s^2]

#: Parameter name -> default value and unit.
BICYCLE_DEFAULTS: dict[str, tuple[float, str]] = {
    "wheelbase": (2.8, "m"),
    "steer_gain": (0.45, "rad of road-wheel angle per unit of steer"),
    "steer_tau": (0.12, "s, steering lag"),
    "accel_gain": (6.0, "m/s^2 at full throttle, low speed"),
    "power_per_mass": (90.0, "W/kg, drive power limit over mass"),
    "brake_gain": (11.0, "m/s^2 at full brake"),
    "drag": (2.6e-4, "1/m, aerodynamic drag over mass"),
    "rolling": (0.12, "m/s^2, rolling resistance"),
    "grip": (0.9, "share of mu g usable, longitudinal and lateral"),
}


def _inv_softplus(x: float) -> float:
    return x + math.log(-math.expm1(-x))


class BicycleBackend(DynamicsBackend):
    """Kinematic bicycle with fitted steering, acceleration and friction-limit parameters."""

    name = "bicycle"
    history_length = 1

    def __init__(self, dt: float = CONTROL_DT_S, **overrides: float) -> None:
        super().__init__(dt)
        unknown = set(overrides) - set(BICYCLE_DEFAULTS)
        if unknown:
            from gym_s3.errors import ConfigError

            raise ConfigError(f"unknown bicycle parameters {sorted(unknown)}")
        self.raw = nn.ParameterDict(
            {
                k: nn.Parameter(torch.tensor(_inv_softplus(overrides.get(k, v[0]))))
                for k, v in BICYCLE_DEFAULTS.items()
            }
        )

    def params(self) -> dict[str, Tensor]:
        """Positive physical parameters (see :data:`BICYCLE_DEFAULTS` for units)."""
        return {k: nn.functional.softplus(v) for k, v in self.raw.items()}

    def config(self) -> dict[str, Any]:
        """Constructor arguments including the fitted parameter values."""
        return {"dt": self.dt, **{k: float(v.detach()) for k, v in self.params().items()}}

    def initial_extra(self, n: int, device: torch.device, dtype: torch.dtype) -> dict[str, Tensor]:
        """The road-wheel angle state ``delta`` ``(N,)`` [rad]."""
        return {"delta": torch.zeros(n, device=device, dtype=dtype)}

    def predict(
        self, history: Tensor, extra: dict[str, Tensor]
    ) -> tuple[Tensor, dict[str, Tensor]]:
        """One kinematic-bicycle step from the newest history row (see module docstring)."""
        p = {k: v.to(history.dtype) for k, v in self.params().items()}
        row = history[:, -1]
        v, steer, accel = row[:, 0], row[:, 3], row[:, 4]
        mu = row[:, 5:9].mean(dim=-1)
        dt = self.dt
        delta_cmd = -p["steer_gain"] * steer  # +steer = right = negative road-wheel angle
        blend = 1.0 - torch.exp(-dt / p["steer_tau"])
        delta = extra["delta"] + blend * (delta_cmd - extra["delta"])
        speed = v.clamp(min=0.0)
        drive = accel.clamp(min=0.0) * torch.minimum(
            p["accel_gain"], p["power_per_mass"] / speed.clamp(min=1.0)
        )
        brake = (-accel).clamp(min=0.0) * p["brake_gain"] * torch.tanh(speed / 0.5)
        resist = p["drag"] * speed.square() + p["rolling"] * torch.tanh(speed / 0.5)
        limit = p["grip"] * mu * GRAVITY
        a = (drive - brake - resist).clamp(min=-limit, max=limit)
        v_next = (speed + a * dt).clamp(min=0.0)
        yaw_rate = v_next * torch.tan(delta) / p["wheelbase"]
        r_cap = limit / v_next.clamp(min=0.5)
        yaw_rate = torch.maximum(torch.minimum(yaw_rate, r_cap), -r_cap)
        vel = torch.stack([v_next, torch.zeros_like(v_next), yaw_rate], dim=-1)
        return vel, {"delta": delta}
