"""One physics substep of the double-track reference vehicle, batched over N cars.

This is the only implementation of the vehicle physics. :class:`gym_s3.vehicle.VehicleModel`
runs it eagerly or through ``torch.compile``; both execute these functions.

Substep (``vehicle-dynamics.md`` §2.4), for every car at once:

1. actuators: steering angle follows its command through a first-order lag and a rate limit;
   throttle and brake follow first-order lags (exact exponential discretisation);
2. quasi-static wheel loads from the previous substep's specific forces ``ax, ay``;
3. contact-point velocities in each wheel's frame (front wheels steered, parallel steering);
4. combined-slip Magic-Formula tyre forces with per-wheel friction (:mod:`.tyre`);
5. body forces: tyre forces in the body frame, aerodynamic drag, rolling resistance, road grade;
   body velocities by semi-implicit Euler;
6. wheel spin: drive torque through open differentials with torque, power and speed limits, a
   tyre-torque update linearly implicit in the slip (stable at any step; it sees the body's new
   velocity), then brake torque as a Coulomb torque that can stop but not reverse a wheel, with
   an optional slip-regulating ABS;
7. pose from the new velocities at mid-yaw.

No Python branch depends on tensor data and nothing synchronises with the host, so the same code
runs on CPU and GPU and compiles to a single graph.

Layout: per-car quantities are ``(N,)``; per-wheel quantities are wheel-major ``(4, N)`` (rows FL,
FR, RL, RR) so that the car dimension is the contiguous one and compiled kernels vectorise over
cars. :class:`~gym_s3.vehicle.VehicleState` exposes ``(N, 4)`` views of the same memory.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch import Tensor

from gym_s3.vehicle.params import GRAVITY, VehicleParams
from gym_s3.vehicle.tyre import TyreCoefficients, TyreOutput, tyre_forces

#: Width of the rev-limiter torque taper, as a fraction of the limit speed [-].
REV_LIMIT_BAND = 0.02
#: Drive-shaft speed floor of the power limit P / omega [rad/s].
POWER_OMEGA_FLOOR = 1.0


class PhysicsConstants(NamedTuple):
    """Everything a substep needs besides the state, prepared once per model.

    ``(4, 1)`` tensors are per wheel (FL, FR, RL, RR), shaped to broadcast against wheel-major
    ``(4, N)`` tensors; floats are SI constants.
    """

    dt: float  # physics step [s]
    tyre: TyreCoefficients
    wheel_x: Tensor  # (4, 1) body-frame x of the contact patches [m]
    wheel_y: Tensor  # (4, 1) body-frame y of the contact patches [m]
    front: Tensor  # (4, 1) 1 for steered (front) wheels, else 0
    fz_static: Tensor  # (4, 1) static wheel loads [N]
    fz_per_ax: Tensor  # (4, 1) load change per unit forward specific force [N / (m/s^2)]
    fz_per_ay: Tensor  # (4, 1) load change per unit leftward specific force [N / (m/s^2)]
    drive_share: Tensor  # (4, 1) share of drive torque per wheel (sums to 1)
    brake_share: Tensor  # (4, 1) share of brake torque per wheel (sums to 1)
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


class PhysicsState(NamedTuple):
    """The integrated part of :class:`~gym_s3.vehicle.VehicleState`.

    Every field is ``(N,)`` except ``omega``, which is wheel-major ``(4, N)`` [rad/s].
    """

    x: Tensor
    y: Tensor
    yaw: Tensor
    vx: Tensor
    vy: Tensor
    yaw_rate: Tensor
    omega: Tensor
    steer_angle: Tensor
    throttle: Tensor
    brake: Tensor
    ax: Tensor
    ay: Tensor
    fault: Tensor


class Commands(NamedTuple):
    """Actuator targets held over a control step, each ``(N,)``.

    Attributes:
        steer: road-wheel angle target, + = left [rad] (already clipped to the steering range).
        throttle: throttle target in [0, 1].
        brake: brake target in [0, 1].
    """

    steer: Tensor
    throttle: Tensor
    brake: Tensor


def _lag_gain(dt: float, tau: float) -> float:
    """Exact per-step gain of a first-order lag (1 for tau = 0, i.e. no lag)."""
    return 1.0 if tau <= 0 else 1.0 - math.exp(-dt / tau)


def build_constants(
    p: VehicleParams, dt: float, abs_enabled: bool, device: torch.device, dtype: torch.dtype
) -> PhysicsConstants:
    """Prepare the substep constants of ``p`` at physics step ``dt`` [s] on ``device``/``dtype``."""

    def vec(values: tuple[float, ...] | list[float]) -> Tensor:
        """Per-wheel constants as a ``(4, 1)`` column."""
        return torch.tensor(values, device=device, dtype=dtype)[:, None]

    pos = p.wheel_positions(device=device, dtype=dtype)
    fz_front, fz_rear = p.static_axle_loads
    long_t = p.mass * p.h_cg / p.wheelbase / 2  # per wheel, per unit a_x
    lat_t = p.mass * p.h_cg / p.track_width  # per axle pair, per unit a_y
    chi = p.roll_stiffness_front
    ky = (p.p_ky_front, p.p_ky_front, p.p_ky_rear, p.p_ky_rear)
    b_per_g = [[p.p_kx / p.c_x] * 4, [k / p.c_y for k in ky]]
    tyre = TyreCoefficients(
        b_per_g=torch.tensor(b_per_g, device=device, dtype=dtype)[..., None],
        shape=torch.tensor([p.c_x, p.c_y], device=device, dtype=dtype)[:, None, None],
        curvature=torch.tensor([p.e_x, p.e_y], device=device, dtype=dtype)[:, None, None],
        p_kx=p.p_kx,
        mu_ref=p.mu_ref,
        stiffness_mu_exponent=p.stiffness_mu_exponent,
        load_sensitivity=p.load_sensitivity,
        fz_nominal=p.fz_nominal,
        wheel_radius=p.wheel_radius,
        slip_speed_floor=p.slip_speed_floor,
    )
    return PhysicsConstants(
        dt=dt,
        tyre=tyre,
        wheel_x=pos[:, :1].contiguous(),
        wheel_y=pos[:, 1:].contiguous(),
        front=vec([1.0, 1.0, 0.0, 0.0]),
        fz_static=vec([fz_front / 2, fz_front / 2, fz_rear / 2, fz_rear / 2]),
        fz_per_ax=vec([-long_t, -long_t, long_t, long_t]),
        fz_per_ay=vec([-chi * lat_t, chi * lat_t, -(1 - chi) * lat_t, (1 - chi) * lat_t]),
        drive_share=vec(p.drive_shares),
        brake_share=vec(p.brake_shares),
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
    )


def wheel_loads(c: PhysicsConstants, ax: Tensor, ay: Tensor) -> Tensor:
    """Quasi-static normal loads ``(4, N)`` [N] from specific forces ``ax, ay`` ``(N,)`` [m/s^2]."""
    return (c.fz_static + ax * c.fz_per_ax + ay * c.fz_per_ay).clamp_min(0.0)


def contact_points(c: PhysicsConstants, x: Tensor, y: Tensor, yaw: Tensor) -> Tensor:
    """World contact-patch positions ``(N, 4, 2)`` [m] of cars at ``x, y, yaw`` ``(N,)``."""
    cos_y, sin_y = torch.cos(yaw), torch.sin(yaw)
    px = x + cos_y * c.wheel_x - sin_y * c.wheel_y
    py = y + sin_y * c.wheel_x + cos_y * c.wheel_y
    return torch.stack((px.t(), py.t()), dim=-1).contiguous()


class WheelKinematics(NamedTuple):
    """Contact-point velocities in each wheel's frame and the wheel headings, all ``(4, N)``."""

    v_long: Tensor  # along the wheel heading [m/s]
    v_lat: Tensor  # across the wheel heading, left + [m/s]
    cos_w: Tensor  # cos of the wheel steer angle
    sin_w: Tensor  # sin of the wheel steer angle


def wheel_kinematics(
    c: PhysicsConstants, vx: Tensor, vy: Tensor, yaw_rate: Tensor, steer: Tensor
) -> WheelKinematics:
    """Contact-point velocities of a rigid body with steered front wheels (all inputs ``(N,)``)."""
    vxw = vx - yaw_rate * c.wheel_y
    vyw = vy + yaw_rate * c.wheel_x
    angle = steer * c.front
    cos_w, sin_w = torch.cos(angle), torch.sin(angle)
    return WheelKinematics(vxw * cos_w + vyw * sin_w, vyw * cos_w - vxw * sin_w, cos_w, sin_w)


def body_frame(force: Tensor, kin: WheelKinematics) -> Tensor:
    """Rotate wheel-frame tyre forces ``(2, 4, N)`` into the body frame ``(2, 4, N)`` [N]."""
    fx, fy = force[0], force[1]
    return torch.stack((fx * kin.cos_w - fy * kin.sin_w, fx * kin.sin_w + fy * kin.cos_w))


def tyre_state(
    c: PhysicsConstants, s: PhysicsState, steer: Tensor, mu: Tensor
) -> tuple[WheelKinematics, Tensor, TyreOutput]:
    """Wheel kinematics, normal loads ``(4, N)`` [N] and tyre forces of state ``s``."""
    kin = wheel_kinematics(c, s.vx, s.vy, s.yaw_rate, steer)
    fz = wheel_loads(c, s.ax, s.ay)
    return kin, fz, tyre_forces(c.tyre, kin.v_long, kin.v_lat, s.omega, fz, mu)


def _wheel_spin(
    c: PhysicsConstants,
    s: PhysicsState,
    throttle: Tensor,
    brake: Tensor,
    v_long_next: Tensor,
    kin: WheelKinematics,
    tyre: TyreOutput,
) -> Tensor:
    """Advance the wheel speeds ``(4, N)`` [rad/s] by one step (drive, tyre, brake, ABS).

    The tyre torque is linearly implicit in the slip ``R omega - v_long``: its slope
    ``K_x / v_den`` is applied to the change of wheel speed and to the known change of the
    contact-point speed ``v_long_next - v_long`` (the body is updated first), so a wheel follows
    an accelerating body without the one-step lag an update in ``omega`` alone would leave.
    """
    radius = c.wheel_radius
    shaft = (s.omega * c.drive_share).sum(0)  # open differential: mean driven-wheel speed
    torque_cap = torch.clamp(
        c.max_power / shaft.clamp_min(POWER_OMEGA_FLOOR), max=c.max_drive_torque
    )
    rev_taper = ((c.omega_limit - shaft) / (REV_LIMIT_BAND * c.omega_limit)).clamp(0.0, 1.0)
    drive = (throttle * torque_cap * rev_taper) * c.drive_share
    dt_over_i = c.dt / c.wheel_inertia
    damp = (dt_over_i * radius * radius) * tyre.slip_stiffness / tyre.v_den
    follow = damp * (v_long_next - kin.v_long) / radius
    free = s.omega + (dt_over_i * (drive - radius * tyre.force[0]) + follow) / (1.0 + damp)
    # brake: Coulomb torque that removes spin without reversing it
    brake_dw = (dt_over_i * c.max_brake_torque) * brake * c.brake_share
    braked = torch.copysign((free.abs() - brake_dw).clamp_min(0.0), free)
    if c.abs_enabled:
        # ideal slip-regulating ABS: brake pressure is released so that the wheel is not braked
        # below the speed of slip -abs_target_slip (never adds torque: min with the free wheel)
        target = (v_long_next - c.abs_target_slip * tyre.v_den) / radius
        regulated = torch.maximum(braked, torch.minimum(free, target))
        braked = torch.where(v_long_next > c.abs_min_speed, regulated, braked)
    return braked


def substep(
    c: PhysicsConstants,
    s: PhysicsState,
    cmd: Commands,
    mu: Tensor,
    grade: tuple[Tensor, Tensor] | None,
) -> PhysicsState:
    """Advance every car by one physics step ``c.dt``.

    Args:
        c: constants from :func:`build_constants`.
        s: current state.
        cmd: actuator targets.
        mu: ``(4, N)`` peak friction under each wheel [-].
        grade: optional ``(N,)`` gravity components along body x and y [m/s^2].

    Returns:
        The next state (``fault`` passed through; see :func:`chunk`).
    """
    steer = s.steer_angle + ((cmd.steer - s.steer_angle) * c.steer_gain).clamp(
        -c.steer_step, c.steer_step
    )
    throttle = s.throttle + (cmd.throttle - s.throttle) * c.throttle_gain
    brake = s.brake + (cmd.brake - s.brake) * c.brake_gain

    kin, _, tyre = tyre_state(c, s, steer, mu)
    fb = body_frame(tyre.force, kin)
    fbx, fby = fb[0], fb[1]
    resist = c.drag_coef * s.vx * s.vx.abs() + c.roll_force * torch.tanh(s.vx / c.rolling_speed)
    ax = (fbx.sum(0) - resist) / c.mass
    ay = fby.sum(0) / c.mass
    yaw_acc = (c.wheel_x * fby - c.wheel_y * fbx).sum(0) / c.yaw_inertia

    gx, gy = (ax, ay) if grade is None else (ax + grade[0], ay + grade[1])
    dt = c.dt
    vx = s.vx + dt * (gx + s.yaw_rate * s.vy)
    vy = s.vy + dt * (gy - s.yaw_rate * vx)
    yaw_rate = s.yaw_rate + dt * yaw_acc
    v_long_next = (vx - yaw_rate * c.wheel_y) * kin.cos_w + (vy + yaw_rate * c.wheel_x) * kin.sin_w
    omega = _wheel_spin(c, s, throttle, brake, v_long_next, kin, tyre)
    yaw_mid = s.yaw + (0.5 * dt) * yaw_rate
    cos_y, sin_y = torch.cos(yaw_mid), torch.sin(yaw_mid)
    return PhysicsState(
        x=s.x + dt * (vx * cos_y - vy * sin_y),
        y=s.y + dt * (vx * sin_y + vy * cos_y),
        yaw=s.yaw + dt * yaw_rate,
        vx=vx,
        vy=vy,
        yaw_rate=yaw_rate,
        omega=omega,
        steer_angle=steer,
        throttle=throttle,
        brake=brake,
        ax=ax,
        ay=ay,
        fault=s.fault,
    )


def chunk(
    c: PhysicsConstants,
    s: PhysicsState,
    cmd: Commands,
    mu: Tensor,
    grade: tuple[Tensor, Tensor] | None,
    n: int,
) -> tuple[PhysicsState, Tensor]:
    """Run ``n`` substeps with friction held, then detect faults and freeze faulted cars.

    A car is faulted when any speed is non-finite or beyond the runaway limits of the params, or
    when it was faulted already; its state is reset to the (finite) state at the chunk start.

    Returns:
        The new state, with yaw wrapped to [-pi, pi), and the world contact points
        ``(N, 4, 2)`` [m] at which friction is read next.
    """
    new = s
    for _ in range(n):
        new = substep(c, new, cmd, mu, grade)
    ok = (
        (new.vx * new.vx + new.vy * new.vy < c.fault_speed2)
        & (new.yaw_rate.abs() < c.fault_yaw_rate)
        & (new.omega.abs().amax(0) < c.fault_wheel_speed)
    )
    fault = s.fault | ~ok
    new = new._replace(yaw=torch.remainder(new.yaw + math.pi, 2 * math.pi) - math.pi)

    def keep(old: Tensor, value: Tensor) -> Tensor:
        return torch.where(fault, torch.nan_to_num(old, nan=0.0, posinf=0.0, neginf=0.0), value)

    frozen = PhysicsState(*(keep(o, v) for o, v in zip(s[:-1], new[:-1], strict=True)), fault)
    return frozen, contact_points(c, frozen.x, frozen.y, frozen.yaw)
