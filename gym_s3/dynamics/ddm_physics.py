"""Physics of the Deep Dynamics Model: guarded coefficients and the dynamic bicycle step.

The network of :class:`~gym_s3.dynamics.ddm.DDMBackend` outputs one raw value per coefficient;
the **physics guard** squashes each into its physical range, ``low + (high - low) *
sigmoid(raw)``, and a dynamic single-track (bicycle) model with Magic-Formula lateral tyre forces
is integrated over one control period with explicit Euler sub-steps. Equations follow the Deep
Dynamics paper (Chrosniak et al., RA-L 2024, arXiv 2312.04374), re-derived for our front-driven
sedan:

* slip angles ``a = -atan2(v_lat, max(|u|, slip_speed_floor))`` from each axle's velocity
  ``(u, v_lat)`` in its wheel frame (front: rotated by the wheel angle ``delta``); for forward
  motion and small angles this is the paper's ``a_f = delta - atan2(v_y + l_f r, v_x)``,
  ``a_r = -atan2(v_y - l_r r, v_x)``, and it keeps the tyre force dissipative when reversing;
* lateral force ``F_y = D sin(C atan(B a - E (B a - atan(B a))))`` per axle, where the peak
  ``D = d * mu_axle * F_z`` scales with the friction under the axle's wheels (``mu`` is an input)
  and ``B = k F_z / (C D)`` comes from the guarded cornering stiffness ``k`` per unit load (so the
  stiffness, and with it the stable Euler step, stays bounded);
* front drive ``throttle * min(C_m1, P / u_f)`` along the front wheel (``u_f`` its speed along
  its heading), brakes ``brake * C_b * tanh(u / 0.5 m/s)`` split front/rear against each axle's
  wheel speed ``u``, resistance ``C_r0 tanh(v_x / 0.5) + C_r2 v_x |v_x|``; each axle's force is
  capped by a friction ellipse of radius ``D`` (wheel spin and lock-up on ice);
* ``dv_x = (F_x,body)/m + v_y r``, ``dv_y = F_y,body/m - v_x r``, ``dr = M_z / I_z``; the
  ``v r`` terms (the body frame turning) are integrated as an exact rotation of the velocity, the
  forces with explicit Euler.

Differences from the paper, because our logs hold commands, not measured actuator states: the
effective road-wheel angle, throttle and brake over the step are guarded outputs too (they
absorb the actuator lags), the drivetrain uses a power limit instead of the linear ``C_m2`` loss,
the brake is its own channel, and the Magic-Formula shifts ``S_h, S_v`` are left out (they push
a car that stands still; the sedan's tyres are symmetric). Every force but the drive opposes the
motion of its contact point, so only the engine adds energy, and the rotation of the body frame
is integrated exactly: the step cannot spin a car up on its own.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from gym_s3.errors import ConfigError

GRAVITY = 9.81  # [m/s^2]
_ROLL_SPEED = 0.5  # speed scale of the tanh smoothing the sign of v_x [m/s]


@dataclass(frozen=True)
class Bound:
    """Physical range of one guarded coefficient.

    Attributes:
        name: coefficient name.
        low: lower bound.
        high: upper bound.
        nominal: value the untrained guard starts at (our sedan).
        unit: SI unit.
        meaning: what it is.
    """

    name: str
    low: float
    high: float
    nominal: float
    unit: str
    meaning: str


@dataclass(frozen=True)
class DDMVehicle:
    """Fixed vehicle constants of the physics layer (not learned, as in the paper).

    Attributes:
        mass: vehicle mass [kg].
        l_f: centre of gravity to front axle [m].
        l_r: centre of gravity to rear axle [m].
        yaw_inertia: nominal yaw inertia [kg m^2]; the guard learns 0.5-2x of it.
    """

    mass: float = 1500.0
    l_f: float = 1.20
    l_r: float = 1.60
    yaw_inertia: float = 2500.0

    def __post_init__(self) -> None:
        for name in ("mass", "l_f", "l_r", "yaw_inertia"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ConfigError(f"DDM vehicle {name} must be a finite number > 0, got {value!r}")

    @property
    def axle_loads(self) -> tuple[float, float]:
        """Static normal loads (front, rear) [N]."""
        w = self.mass * GRAVITY
        wb = self.l_f + self.l_r
        return w * self.l_r / wb, w * self.l_f / wb


def guard_bounds(vehicle: DDMVehicle) -> tuple[Bound, ...]:
    """The bounds table of the physics guard for ``vehicle`` (order = network outputs)."""
    iz = vehicle.yaw_inertia
    return (
        Bound("delta", -0.7, 0.7, 0.0, "rad", "effective road-wheel angle over the step, + left"),
        Bound("throttle", 0.0, 1.0, 0.05, "1", "effective throttle over the step"),
        Bound("brake", 0.0, 1.0, 0.05, "1", "effective brake over the step"),
        Bound("k_f", 2.0, 25.0, 10.0, "1/rad", "front cornering stiffness B*C*D per unit load"),
        Bound("k_r", 2.0, 25.0, 16.0, "1/rad", "rear cornering stiffness B*C*D per unit load"),
        Bound("c_f", 0.8, 2.0, 1.35, "1", "front Magic-Formula shape factor C"),
        Bound("c_r", 0.8, 2.0, 1.35, "1", "rear Magic-Formula shape factor C"),
        Bound("d_f", 0.5, 1.3, 0.95, "1", "front peak force D / (mu F_z): D in [0.05, 1.3] F_z"),
        Bound("d_r", 0.5, 1.3, 0.95, "1", "rear peak force D / (mu F_z)"),
        Bound("e_f", -2.0, 0.5, -0.5, "1", "front Magic-Formula curvature factor E"),
        Bound("e_r", -2.0, 0.5, -0.5, "1", "rear Magic-Formula curvature factor E"),
        Bound("cm1", 1000.0, 15000.0, 9000.0, "N", "drive force at full throttle, low speed"),
        Bound("power", 20e3, 300e3, 120e3, "W", "drive power limit at full throttle"),
        Bound("cb", 2000.0, 30000.0, 15000.0, "N", "brake force at full brake"),
        Bound("brake_front", 0.4, 0.9, 0.66, "1", "front share of the brake force"),
        Bound("cr0", 0.0, 600.0, 150.0, "N", "rolling resistance"),
        Bound("cr2", 0.0, 1.5, 0.4, "N s^2/m^2", "aerodynamic drag coefficient"),
        Bound("iz", 0.5 * iz, 2.0 * iz, iz, "kg m^2", "yaw inertia"),
    )


def bounds_table(vehicle: DDMVehicle | None = None) -> str:
    """The guard bounds as a Markdown table (for docs and the CLI)."""
    rows = ["| coefficient | low | high | unit | meaning |", "|---|---|---|---|---|"]
    for b in guard_bounds(vehicle or DDMVehicle()):
        rows.append(f"| {b.name} | {b.low:g} | {b.high:g} | {b.unit} | {b.meaning} |")
    return "\n".join(rows)


def guard_init_bias(bounds: tuple[Bound, ...]) -> Tensor:
    """Raw values whose guarded images are the nominal coefficients ``(C,)``."""
    frac = torch.tensor([(b.nominal - b.low) / (b.high - b.low) for b in bounds])
    frac = frac.clamp(1e-3, 1 - 1e-3)
    return torch.log(frac / (1 - frac))


def pedals_between_commands(coef: Tensor, accel: Tensor) -> Tensor:
    """Effective throttle and brake held between the last two commanded pedals.

    The guard's throttle and brake lie in ``[0, 1]``; read as a position between the previous
    and the current command of each pedal (``throttle = max(accel, 0)``, ``brake =
    max(-accel, 0)``), an effective pedal can follow a first-order actuator lag but never press
    a pedal that was not commanded: without it, the network was free to output a throttle of
    0.14 and a brake of 0.05 under a commanded brake of 0.25 at full lock on ice (states the
    expert's logs never visit), and the car crept on under the brake.

    Args:
        coef: ``(N, C)`` guarded coefficients (order: :func:`guard_bounds`; 1: throttle, 2: brake).
        accel: ``(N, 2)`` accel commands of the previous and the current step [1].

    Returns:
        ``(N, C)`` coefficients with the throttle and brake so bounded.
    """
    out = coef.clone()
    for column, pedal in ((1, accel.clamp(min=0.0)), (2, (-accel).clamp(min=0.0))):
        low, high = pedal.min(-1).values, pedal.max(-1).values
        out[:, column] = low + (high - low) * coef[:, column]
    return out


def apply_guard(raw: Tensor, low: Tensor, high: Tensor) -> Tensor:
    """Squash raw outputs ``(N, C)`` into ``[low, high]`` ``(C,)`` with a sigmoid."""
    return low + (high - low) * torch.sigmoid(raw)


def bicycle_step(
    vel: Tensor,
    coef: Tensor,
    mu_axle: Tensor,
    vehicle: DDMVehicle,
    dt: float,
    substeps: int,
    slip_speed_floor: float,
) -> Tensor:
    """Integrate the dynamic bicycle over ``dt`` with ``substeps`` explicit Euler steps.

    Args:
        vel: ``(N, 3)`` ``[v_x, v_y, r]`` at the start [m/s, m/s, rad/s].
        coef: ``(N, C)`` guarded coefficients in the order of :func:`guard_bounds`.
        mu_axle: ``(N, 2)`` friction under the front and rear axle (wheel means) [-].
        vehicle: fixed constants.
        dt: control period [s].
        substeps: Euler sub-steps (coefficients held).
        slip_speed_floor: lower bound of the slip-angle denominator [m/s].

    Returns:
        ``(N, 3)`` velocities after ``dt``.
    """
    (delta, thr, brk, k_f, k_r, c_f, c_r, d_f, d_r, e_f, e_r, cm1, power, cb, bfront, cr0, cr2,
     iz) = coef.unbind(-1)  # fmt: skip
    # Axle quantities are (N, 2) [front, rear]; everything loop-invariant is computed once (the
    # loop is overhead-bound at N ~ 4096 on a CPU, so fewer, fused tensor ops matter).
    m, lf, lr = vehicle.mass, vehicle.l_f, vehicle.l_r
    # (Python-float constants: no host-to-device copies on a GPU)
    fz_f, fz_r = vehicle.axle_loads
    peak = torch.stack([d_f * fz_f, d_r * fz_r], -1) * mu_axle  # D [N]
    shape = torch.stack([c_f, c_r], -1)  # C
    stiff_b = torch.stack([k_f * fz_f, k_r * fz_r], -1) / (shape * peak)  # B
    curv = torch.stack([e_f, e_r], -1)  # E
    neg_brake = -(brk * cb)[:, None] * torch.stack([bfront, 1.0 - bfront], -1)  # [N]
    cos_d, sin_d = torch.cos(delta), torch.sin(delta)
    no_drive = torch.zeros_like(delta)  # the rear axle is not driven
    h = dt / substeps
    h_m, h_iz = h / m, h / iz
    vx, vy, r = vel.unbind(-1)
    for _ in range(substeps):
        # slip angles from each axle's velocity in its wheel frame; |u| makes the tyre force
        # oppose lateral sliding whatever the direction of travel (dissipative when reversing)
        w_f = vy + lf * r
        u_f = vx * cos_d + w_f * sin_d  # front wheel speed along its heading [m/s]
        u_axle = torch.stack([u_f, vx], -1)  # wheel speeds along the wheel headings [m/s]
        lat = torch.stack([w_f * cos_d - vx * sin_d, vy - lr * r], -1)
        ba = stiff_b * -torch.atan2(lat, u_axle.abs().clamp(min=slip_speed_floor))
        fy = peak * torch.sin(shape * torch.atan(ba - curv * (ba - torch.atan(ba))))
        roll = torch.tanh(vx / _ROLL_SPEED)
        drive = thr * torch.minimum(cm1, power / u_f.clamp(min=1.0))  # power = force x speed
        fx = neg_brake * torch.tanh(u_axle / _ROLL_SPEED) + torch.stack([drive, no_drive], -1)
        # friction ellipse of radius D per axle: wheel spin and lock-up
        scale = (peak * torch.rsqrt(fx.square() + fy.square() + 1e-6)).clamp(max=1.0)
        fx, fy = fx * scale, fy * scale
        fx_f, fx_r = fx.unbind(-1)
        fy_f, fy_r = fy.unbind(-1)
        front_lat = fx_f * sin_d + fy_f * cos_d
        force_x = fx_f * cos_d - fy_f * sin_d + fx_r - cr0 * roll - cr2 * vx * vx.abs()
        yaw_moment = lf * front_lat - lr * fy_r
        # the body frame turns by r h: rotate the velocity exactly (explicit Euler would add
        # energy to a spinning car), then add the force impulse
        c_rot, s_rot = torch.cos(r * h), torch.sin(r * h)
        vx, vy, r = (
            vx * c_rot + vy * s_rot + h_m * force_x,
            vy * c_rot - vx * s_rot + h_m * (front_lat + fy_r),
            r + h_iz * yaw_moment,
        )
    return torch.stack([vx, vy, r], -1)
