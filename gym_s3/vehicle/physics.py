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

from gym_s3.vehicle.constants import PhysicsConstants
from gym_s3.vehicle.tyre import TyreOutput, tyre_forces

#: Width of the rev-limiter torque taper, as a fraction of the limit speed [-].
REV_LIMIT_BAND = 0.02
#: Drive-shaft speed floor of the power limit P / omega [rad/s].
POWER_OMEGA_FLOOR = 1.0


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


def pack_state(s: PhysicsState) -> Tensor:
    """Stack a state into one ``(17, N)`` tensor (``fault`` as 0.0 / 1.0).

    One tensor instead of thirteen keeps the per-call overhead of a compiled chunk small.
    """
    head = torch.stack((s.x, s.y, s.yaw, s.vx, s.vy, s.yaw_rate))
    tail = torch.stack((s.steer_angle, s.throttle, s.brake, s.ax, s.ay, s.fault.to(s.x.dtype)))
    return torch.cat((head, s.omega, tail))


def unpack_state(packed: Tensor) -> PhysicsState:
    """Views of a :func:`pack_state` tensor as a :class:`PhysicsState`."""
    x, y, yaw, vx, vy, yaw_rate = packed[:6]
    steer, throttle, brake, ax, ay, fault = packed[10:]
    return PhysicsState(
        x, y, yaw, vx, vy, yaw_rate, packed[6:10], steer, throttle, brake, ax, ay, fault > 0.5
    )


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
    # brake: Coulomb torque that removes spin without reversing it. It enters the same linearly
    # implicit update as the tyre torque (hence the 1 / (1 + damp)): applied after the implicit
    # solve instead, the tyre would settle at a slip where it transmits (1 + damp) times the
    # brake torque, an error that grows with the step (40 % at 1 ms for partial braking).
    brake_dw = (dt_over_i * c.max_brake_torque) * brake * c.brake_share / (1.0 + damp)
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
    packed: Tensor,
    cmd: Tensor,
    mu: Tensor,
    grade: Tensor | None,
    n: int,
) -> tuple[Tensor, Tensor]:
    """Run ``n`` substeps with friction held, then detect faults and freeze faulted cars.

    A car is faulted when any speed is non-finite or beyond the runaway limits of the params, or
    when it was faulted already; its state is reset to the (finite) state at the chunk start.

    Args:
        c: constants from :func:`~gym_s3.vehicle.constants.build_constants`.
        packed: ``(17, N)`` state from :func:`pack_state`.
        cmd: ``(3, N)`` actuator targets (rows of :class:`Commands`).
        mu: ``(4, N)`` peak friction under each wheel [-].
        grade: optional ``(2, N)`` gravity along body x and y [m/s^2].
        n: number of substeps.

    Returns:
        The new packed state, with yaw wrapped to [-pi, pi), and the world contact points
        ``(N, 4, 2)`` [m] at which friction is read next.
    """
    start = unpack_state(packed)
    commands = Commands(cmd[0], cmd[1], cmd[2])
    grade_xy = None if grade is None else (grade[0], grade[1])
    new = start
    for _ in range(n):
        new = substep(c, new, commands, mu, grade_xy)
    ok = (
        (new.vx * new.vx + new.vy * new.vy < c.fault_speed2)
        & (new.yaw_rate.abs() < c.fault_yaw_rate)
        & (new.omega.abs().amax(0) < c.fault_wheel_speed)
    )
    fault = start.fault | ~ok
    new = new._replace(yaw=torch.remainder(new.yaw + math.pi, 2 * math.pi) - math.pi, fault=fault)
    kept = torch.nan_to_num(packed[:-1], nan=0.0, posinf=0.0, neginf=0.0)
    out = torch.cat((torch.where(fault, kept, pack_state(new)[:-1]), fault.to(packed.dtype)[None]))
    frozen = unpack_state(out)
    return out, contact_points(c, frozen.x, frozen.y, frozen.yaw)
