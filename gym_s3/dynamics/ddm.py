"""``ddm``: the Deep Dynamics Model, an encoder of the history window feeding a guarded bicycle.

An MLP encodes the normalised history window ``(N, H, 9)`` (flattened) and a linear layer
produces one raw value per physical coefficient; the physics guard
(:func:`~gym_s3.dynamics.ddm_physics.apply_guard`) squashes each into its bounds and the dynamic
bicycle (:func:`~gym_s3.dynamics.ddm_physics.bicycle_step`) integrates the raw (unnormalised)
velocities over one control period. See :mod:`gym_s3.dynamics.ddm_physics` for the equations and
:func:`~gym_s3.dynamics.ddm_physics.bounds_table` for the bounds.

Encoder choice: the paper uses a GRU over the window. A GRU restarted on each window has to be
recomputed over all H rows every step (the architecture notes measure 23 ms per step at
N = 4096), and one carried across steps would see a longer past than the windows it was trained
on. The MLP over the flattened window is an exact function of the window, needs no carried state
(``extra`` is empty) and costs one ``(H*9) x hidden`` matrix product per car and step.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from gym_s3.dynamics.base import HISTORY_FEATURES, NUM_HISTORY_FEATURES
from gym_s3.dynamics.ddm_physics import (
    DDMVehicle,
    apply_guard,
    bicycle_step,
    guard_bounds,
    guard_init_bias,
    pedals_between_commands,
)
from gym_s3.dynamics.learned import LearnedBackend, check_positive_int
from gym_s3.errors import ConfigError
from gym_s3.spec import CONTROL_DT_S

#: Column of the accel command in a history row.
ACCEL_COLUMN = HISTORY_FEATURES.index("accel")


def mlp(sizes: list[int], out: int) -> nn.Sequential:
    """GELU MLP with hidden ``sizes`` (first = input size) and a final linear layer to ``out``."""
    layers: list[nn.Module] = []
    for a, b in zip(sizes[:-1], sizes[1:], strict=True):
        layers += [nn.Linear(a, b), nn.GELU()]
    layers.append(nn.Linear(sizes[-1], out))
    return nn.Sequential(*layers)


class DDMBackend(LearnedBackend):
    """Deep Dynamics Model: MLP window encoder -> physics guard -> dynamic bicycle.

    Args:
        dt: control period [s].
        history: window length H [steps].
        hidden: width of the encoder layers.
        layers: number of hidden encoder layers.
        substeps: Euler sub-steps of the bicycle per control period.
        slip_speed_floor: lower bound of the slip-angle denominator [m/s].
        mass: vehicle mass [kg].
        l_f: centre of gravity to front axle [m].
        l_r: centre of gravity to rear axle [m].
        yaw_inertia: nominal yaw inertia [kg m^2].
        pedals_from_commands: hold the effective throttle and brake between the last two
            commanded pedals (:func:`~gym_s3.dynamics.ddm_physics.pedals_between_commands`);
            off in the shipped checkpoint (trained without it).
    """

    name = "ddm"

    def __init__(
        self,
        dt: float = CONTROL_DT_S,
        history: int = 10,
        hidden: int = 64,
        layers: int = 2,
        substeps: int = 5,
        slip_speed_floor: float = 3.0,
        mass: float = 1500.0,
        l_f: float = 1.20,
        l_r: float = 1.60,
        yaw_inertia: float = 2500.0,
        pedals_from_commands: bool = False,
    ) -> None:
        super().__init__(dt)
        self.history_length = check_positive_int("ddm history", history)
        self.hidden = check_positive_int("ddm hidden", hidden)
        self.layers = check_positive_int("ddm layers", layers)
        self.substeps = check_positive_int("ddm substeps", substeps)
        if not slip_speed_floor > 0:
            raise ConfigError(f"ddm slip_speed_floor must be > 0 m/s, got {slip_speed_floor!r}")
        self.slip_speed_floor = float(slip_speed_floor)
        self.vehicle = DDMVehicle(mass=mass, l_f=l_f, l_r=l_r, yaw_inertia=yaw_inertia)
        self.pedals_from_commands = bool(pedals_from_commands)
        self.bounds = guard_bounds(self.vehicle)
        self.net = mlp([history * NUM_HISTORY_FEATURES] + [hidden] * layers, len(self.bounds))
        with torch.no_grad():
            head = self.net[-1]
            head.weight.mul_(0.1)
            head.bias.copy_(guard_init_bias(self.bounds))
        self.register_buffer("low", torch.tensor([b.low for b in self.bounds]), persistent=False)
        self.register_buffer("high", torch.tensor([b.high for b in self.bounds]), persistent=False)

    def config(self) -> dict[str, Any]:
        """Constructor arguments (stored in checkpoints)."""
        v = self.vehicle
        return {
            "dt": self.dt,
            "history": self.history_length,
            "hidden": self.hidden,
            "layers": self.layers,
            "substeps": self.substeps,
            "slip_speed_floor": self.slip_speed_floor,
            "mass": v.mass,
            "l_f": v.l_f,
            "l_r": v.l_r,
            "yaw_inertia": v.yaw_inertia,
            "pedals_from_commands": self.pedals_from_commands,
        }

    def coefficients(self, history: Tensor) -> Tensor:
        """Guarded coefficients ``(N, C)`` (order and units: :func:`guard_bounds`).

        Args:
            history: ``(N, H, 9)`` raw history window, newest row last.
        """
        x = self.norm.history(history[:, -self.history_length :].to(self.low.dtype))
        raw = self.net(x.flatten(1))
        coef = apply_guard(raw, self.low, self.high)
        if self.pedals_from_commands:
            coef = pedals_between_commands(coef, history[:, -2:, ACCEL_COLUMN].to(coef.dtype))
        return coef

    def predict(
        self, history: Tensor, extra: dict[str, Tensor]
    ) -> tuple[Tensor, dict[str, Tensor]]:
        """Next velocities ``(N, 3)`` from the guarded bicycle; no carried state."""
        coef = self.coefficients(history)
        row = history[:, -1].to(coef.dtype)
        mu_axle = torch.stack([row[:, 5:7].mean(-1), row[:, 7:9].mean(-1)], -1)
        vel = bicycle_step(
            row[:, :3], coef, mu_axle, self.vehicle, self.dt, self.substeps, self.slip_speed_floor
        )
        return vel.to(history.dtype), {}

    def extra_from_history(self, past: Tensor) -> dict[str, Tensor]:
        """The DDM carries no state between steps."""
        return {}
