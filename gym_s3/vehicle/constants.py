"""Constants of the physics substep, derived once per model from :class:`VehicleParams`.

All per-wheel constants live in one packed ``(14, 4, 1)`` tensor (rows named by
:data:`WHEEL_ROWS`), so a compiled substep receives one constant tensor instead of a dozen and the
per-call overhead stays small; readable views are exposed as properties.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch import Tensor

from gym_s3.vehicle.params import GRAVITY, VehicleParams
from gym_s3.vehicle.tyre import TyreCoefficients

#: Rows of :attr:`PhysicsConstants.wheel`, each ``(4, 1)`` over the wheels FL, FR, RL, RR.
WHEEL_ROWS = (
    "wheel_x",  # body-frame x of the contact patch [m]
    "wheel_y",  # body-frame y of the contact patch [m]
    "front",  # 1 for steered (front) wheels, else 0
    "fz_static",  # static wheel load [N]
    "fz_per_ax",  # load change per unit forward specific force [N / (m/s^2)]
    "fz_per_ay",  # load change per unit leftward specific force [N / (m/s^2)]
    "drive_share",  # share of the drive torque (sums to 1)
    "brake_share",  # share of the brake torque (sums to 1)
    "b_x",  # longitudinal p_kx / C_x
    "b_y",  # lateral p_ky / C_y
    "shape_x",  # C_x
    "shape_y",  # C_y
    "curvature_x",  # E_x
    "curvature_y",  # E_y
)
_ROW = {name: i for i, name in enumerate(WHEEL_ROWS)}


class PhysicsConstants(NamedTuple):
    """Everything a substep needs besides the state: one packed tensor and SI floats."""

    wheel: Tensor  # (len(WHEEL_ROWS), 4, 1) packed per-wheel constants
    dt: float  # physics step [s]
    mass: float  # [kg]
    yaw_inertia: float  # [kg m^2]
    wheel_radius: float  # [m]
    wheel_inertia: float  # [kg m^2]
    max_drive_torque: float  # [N m]
    max_power: float  # [W]
    omega_limit: float  # rev limiter on the mean driven-wheel speed [rad/s]
    max_brake_torque: float  # [N m]
    abs_enabled: bool
    abs_target_slip: float  # [-]
    abs_min_speed: float  # [m/s]
    drag_coef: float  # 0.5 rho C_d A [kg/m]
    roll_force: float  # f_r m g [N]
    rolling_speed: float  # [m/s]
    steer_gain: float  # 1 - exp(-dt / tau_steer) [-]
    steer_step: float  # steering rate limit times dt [rad]
    throttle_gain: float  # 1 - exp(-dt / tau_throttle) [-]
    brake_gain: float  # 1 - exp(-dt / tau_brake) [-]
    fault_speed2: float  # squared runaway speed [m^2/s^2]
    fault_yaw_rate: float  # [rad/s]
    fault_wheel_speed: float  # [rad/s]
    p_kx: float  # longitudinal slip stiffness per unit load [-]
    mu_ref: float  # [-]
    stiffness_mu_exponent: float  # [-]
    load_sensitivity: float  # [-]
    fz_nominal: float  # [N]
    slip_speed_floor: float  # [m/s]

    @property
    def wheel_x(self) -> Tensor:
        """``(4, 1)`` body-frame x of the contact patches [m]."""
        return self.wheel[_ROW["wheel_x"]]

    @property
    def wheel_y(self) -> Tensor:
        """``(4, 1)`` body-frame y of the contact patches [m]."""
        return self.wheel[_ROW["wheel_y"]]

    @property
    def front(self) -> Tensor:
        """``(4, 1)`` 1 for steered wheels, else 0."""
        return self.wheel[_ROW["front"]]

    @property
    def fz_static(self) -> Tensor:
        """``(4, 1)`` static wheel loads [N]."""
        return self.wheel[_ROW["fz_static"]]

    @property
    def fz_per_ax(self) -> Tensor:
        """``(4, 1)`` load change per unit forward specific force [N / (m/s^2)]."""
        return self.wheel[_ROW["fz_per_ax"]]

    @property
    def fz_per_ay(self) -> Tensor:
        """``(4, 1)`` load change per unit leftward specific force [N / (m/s^2)]."""
        return self.wheel[_ROW["fz_per_ay"]]

    @property
    def drive_share(self) -> Tensor:
        """``(4, 1)`` share of the drive torque per wheel."""
        return self.wheel[_ROW["drive_share"]]

    @property
    def brake_share(self) -> Tensor:
        """``(4, 1)`` share of the brake torque per wheel."""
        return self.wheel[_ROW["brake_share"]]

    @property
    def tyre(self) -> TyreCoefficients:
        """Tyre constants as views into :attr:`wheel` (``(2, 4, 1)`` for x and y)."""
        b, shape, curv = _ROW["b_x"], _ROW["shape_x"], _ROW["curvature_x"]
        return TyreCoefficients(
            b_per_g=self.wheel[b : b + 2],
            shape=self.wheel[shape : shape + 2],
            curvature=self.wheel[curv : curv + 2],
            p_kx=self.p_kx,
            mu_ref=self.mu_ref,
            stiffness_mu_exponent=self.stiffness_mu_exponent,
            load_sensitivity=self.load_sensitivity,
            fz_nominal=self.fz_nominal,
            wheel_radius=self.wheel_radius,
            slip_speed_floor=self.slip_speed_floor,
        )


def _lag_gain(dt: float, tau: float) -> float:
    """Exact per-step gain of a first-order lag (1 for tau = 0, i.e. no lag)."""
    return 1.0 if tau <= 0 else 1.0 - math.exp(-dt / tau)


def build_constants(
    p: VehicleParams, dt: float, abs_enabled: bool, device: torch.device, dtype: torch.dtype
) -> PhysicsConstants:
    """Prepare the substep constants of ``p`` at physics step ``dt`` [s] on ``device``/``dtype``."""
    half = p.track_width / 2
    fz_front, fz_rear = p.static_axle_loads
    long_t = p.mass * p.h_cg / p.wheelbase / 2  # per wheel, per unit a_x
    lat_t = p.mass * p.h_cg / p.track_width  # per axle, per unit a_y
    chi = p.roll_stiffness_front
    rows = {
        "wheel_x": [p.l_f, p.l_f, -p.l_r, -p.l_r],
        "wheel_y": [half, -half, half, -half],
        "front": [1.0, 1.0, 0.0, 0.0],
        "fz_static": [fz_front / 2, fz_front / 2, fz_rear / 2, fz_rear / 2],
        "fz_per_ax": [-long_t, -long_t, long_t, long_t],
        "fz_per_ay": [-chi * lat_t, chi * lat_t, -(1 - chi) * lat_t, (1 - chi) * lat_t],
        "drive_share": list(p.drive_shares),
        "brake_share": list(p.brake_shares),
        "b_x": [p.p_kx / p.c_x] * 4,
        "b_y": [k / p.c_y for k in (p.p_ky_front, p.p_ky_front, p.p_ky_rear, p.p_ky_rear)],
        "shape_x": [p.c_x] * 4,
        "shape_y": [p.c_y] * 4,
        "curvature_x": [p.e_x] * 4,
        "curvature_y": [p.e_y] * 4,
    }
    wheel = torch.tensor([rows[name] for name in WHEEL_ROWS], device=device, dtype=dtype)
    return PhysicsConstants(
        wheel=wheel[..., None].contiguous(),
        dt=dt,
        mass=p.mass,
        yaw_inertia=p.yaw_inertia,
        wheel_radius=p.wheel_radius,
        wheel_inertia=p.wheel_inertia,
        max_drive_torque=p.max_drive_torque,
        max_power=p.max_power,
        omega_limit=p.max_speed / p.wheel_radius,
        max_brake_torque=p.max_brake_torque,
        abs_enabled=abs_enabled,
        abs_target_slip=p.abs_target_slip,
        abs_min_speed=p.abs_min_speed,
        drag_coef=0.5 * p.air_density * p.drag_area,
        roll_force=p.rolling_resistance * p.mass * GRAVITY,
        rolling_speed=p.rolling_speed,
        steer_gain=_lag_gain(dt, p.steer_time_constant),
        steer_step=p.max_steer_rate * dt,
        throttle_gain=_lag_gain(dt, p.throttle_time_constant),
        brake_gain=_lag_gain(dt, p.brake_time_constant),
        fault_speed2=p.fault_speed**2,
        fault_yaw_rate=p.fault_yaw_rate,
        fault_wheel_speed=p.fault_wheel_speed,
        p_kx=p.p_kx,
        mu_ref=p.mu_ref,
        stiffness_mu_exponent=p.stiffness_mu_exponent,
        load_sensitivity=p.load_sensitivity,
        fz_nominal=p.fz_nominal,
        slip_speed_floor=p.slip_speed_floor,
    )
