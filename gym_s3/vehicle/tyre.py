"""Combined-slip Magic-Formula tyre: per-wheel friction, load sensitivity, mu-scaled stiffness.

Pure batched functions on wheel-major ``(4, N)`` tensors (one row per wheel FL, FR, RL, RR, cars
along the contiguous last dimension so that compiled kernels vectorise over cars); no state, no
Python branches on data.

Model (``vehicle-dynamics.md`` §2.4, step 5):

* slip ratio ``kappa = (R omega - v_long) / v_den`` and ``tan(alpha) = -v_lat / v_den`` with
  ``v_den = max(|v_long|, slip_speed_floor)``;
* peak force ``D = mu (1 - eps (F_z / F_z0 - 1)) F_z`` (load sensitivity eps);
* slip stiffnesses ``K = p_k lambda_K F_z`` with ``lambda_K = (mu / mu_ref) ** k``, so that
  stiffness falls (less than friction) on slippery surfaces; ``B = K / (C D)``;
* combination by the normalised slip vector: ``sigma = (kappa, tan alpha) / (1 + |kappa|)``,
  ``F = sigma / |sigma| * F0(|sigma|)`` with the pure-slip curve
  ``F0(s) = D sin(C atan(B s - E (B s - atan(B s))))`` evaluated per direction. The force never
  leaves the friction ellipse with semi-axes ``D`` and the small-slip slopes equal ``K``.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor

#: Friction values are clamped to at least this before use [-] (keeps B finite on mu = 0).
MU_MIN = 1e-3
#: Lower bound of the load-sensitivity factor (reached only at absurd wheel loads) [-].
LOAD_FACTOR_MIN = 0.2
#: Smooths |sigma| through zero; F / |sigma| tends to the slip stiffness below this [-].
SIGMA_EPS2 = 1e-12


class TyreCoefficients(NamedTuple):
    """Tyre constants prepared for broadcasting against ``(2, 4, N)`` tensors.

    Attributes:
        b_per_g: ``(2, 4, 1)`` stiffness over shape factor ``p_k / C`` for (x, y) per wheel.
        shape: ``(2, 1, 1)`` Magic-Formula shape factors ``(C_x, C_y)``.
        curvature: ``(2, 1, 1)`` Magic-Formula curvature factors ``(E_x, E_y)``.
        p_kx: longitudinal slip stiffness per unit load [1/unit slip].
        mu_ref: friction at which the stiffnesses hold [-].
        stiffness_mu_exponent: exponent k of the stiffness scale [-].
        load_sensitivity: eps of the peak-force load law [-].
        fz_nominal: nominal wheel load F_z0 [N].
        wheel_radius: rolling radius [m].
        slip_speed_floor: lower bound of the slip denominator [m/s].
    """

    b_per_g: Tensor
    shape: Tensor
    curvature: Tensor
    p_kx: float
    mu_ref: float
    stiffness_mu_exponent: float
    load_sensitivity: float
    fz_nominal: float
    wheel_radius: float
    slip_speed_floor: float


class TyreOutput(NamedTuple):
    """Per-wheel tyre forces in the wheel frame and the slip quantities behind them (wheel-major).

    Attributes:
        force: ``(2, 4, N)`` longitudinal and lateral tyre force in the wheel frame [N].
        slip_ratio: ``(4, N)`` kappa, positive when driving [-].
        tan_slip_angle: ``(4, N)`` tan(alpha), positive when the force points left [-].
        v_den: ``(4, N)`` slip denominator max(|v_long|, floor) [m/s].
        slip_stiffness: ``(4, N)`` longitudinal slip stiffness K_x at zero slip [N].
    """

    force: Tensor
    slip_ratio: Tensor
    tan_slip_angle: Tensor
    v_den: Tensor
    slip_stiffness: Tensor


def tyre_forces(
    coef: TyreCoefficients, v_long: Tensor, v_lat: Tensor, omega: Tensor, fz: Tensor, mu: Tensor
) -> TyreOutput:
    """Evaluate the combined-slip tyre model for every wheel of every car.

    Args:
        coef: tyre constants (see :class:`TyreCoefficients`).
        v_long: ``(4, N)`` contact-point velocity along the wheel heading [m/s].
        v_lat: ``(4, N)`` contact-point velocity across the wheel heading (left +) [m/s].
        omega: ``(4, N)`` wheel spin [rad/s].
        fz: ``(4, N)`` normal load, already clamped at >= 0 [N].
        mu: ``(4, N)`` peak surface friction under each wheel [-].

    Returns:
        The forces and slips as a :class:`TyreOutput`.
    """
    v_den = v_long.abs().clamp_min(coef.slip_speed_floor)
    kappa = (coef.wheel_radius * omega - v_long) / v_den
    tan_alpha = -v_lat / v_den
    mu_c = mu.clamp_min(MU_MIN)
    load_factor = (1.0 - coef.load_sensitivity * (fz / coef.fz_nominal - 1.0)).clamp_min(
        LOAD_FACTOR_MIN
    )
    peak = mu_c * load_factor * fz
    stiff_scale = (mu_c / coef.mu_ref) ** coef.stiffness_mu_exponent
    # B = p_k * lambda_K * F_z / (C * D) = (p_k / C) * lambda_K / (mu * load_factor)
    g = stiff_scale / (mu_c * load_factor)
    shrink = 1.0 / (1.0 + kappa.abs())
    sigma_x, sigma_y = kappa * shrink, tan_alpha * shrink
    sigma_n = (sigma_x * sigma_x + sigma_y * sigma_y + SIGMA_EPS2).sqrt()
    bs = (g * sigma_n) * coef.b_per_g
    curve = torch.sin(coef.shape * torch.atan(bs - coef.curvature * (bs - torch.atan(bs))))
    force = torch.stack((sigma_x, sigma_y)) * (peak / sigma_n) * curve
    slip_stiffness = coef.p_kx * stiff_scale * fz
    return TyreOutput(force, kappa, tan_alpha, v_den, slip_stiffness)
