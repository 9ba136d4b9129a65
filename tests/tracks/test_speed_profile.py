"""Friction-aware speed profiles: friction limits, acceleration limits, ice patches, lap time."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from trackpaths import circle_path, straight_path

from gym_s3.errors import ConfigError
from gym_s3.tracks.geometry import Segment, integrate
from gym_s3.tracks.layouts import band_to_rects
from gym_s3.tracks.path import ReferencePath
from gym_s3.tracks.speed_profile import GRAVITY, SpeedProfileConfig, lap_time, speed_profile
from gym_s3.tracks.surfaces import PatchBand, SurfaceBatch, SurfaceLayout, friction_along

CFG = SpeedProfileConfig()
PATCH = PatchBand(s_start=650.0, length=30.0, d_min=-4.5, d_max=4.5, surface="ice", mu=0.1)


def _ice_mu(path: ReferencePath) -> torch.Tensor:
    """``(M,)`` friction along Putnam with PATCH on dry asphalt."""
    layout = SurfaceLayout(patches=tuple(band_to_rects(path, PATCH, 4.0)))
    return friction_along(path, SurfaceBatch.stack([layout], dtype=torch.float64))[0]


def _check_limits(path: ReferencePath, mu: torch.Tensor, v: torch.Tensor, cfg: SpeedProfileConfig):
    """Assert the friction circle at every sample and the ellipse/engine/brake limits per segment.

    Written from the physics, independently of the implementation: corner speed
    ``v^2 |k| <= f_lat mu g``; between samples ``|dv^2 / (2 ds)|`` within the friction ellipse
    left at the slower end (segment friction = lower end, curvature = higher end) and within the
    engine or brake limit.
    """
    v2, mu, k = (v**2).numpy(), mu.numpy(), path.curvature.abs().numpy()
    above_floor = v.numpy() > cfg.v_min + 1e-9
    lateral = v2 * k / (cfg.lateral_fraction * mu * GRAVITY)
    assert lateral[above_floor].max() <= 1.0 + 1e-9
    nxt = (lambda a: np.roll(a, -1)) if path.closed else (lambda a: np.append(a[1:], a[-1]))
    seg_mu, seg_k = np.minimum(mu, nxt(mu)), np.maximum(k, nxt(k))
    slow = np.minimum(v2, nxt(v2))
    usage = slow * seg_k / (cfg.lateral_fraction * seg_mu * GRAVITY)
    room = cfg.longitudinal_fraction * seg_mu * GRAVITY * np.sqrt(np.clip(1 - usage**2, 0, None))
    accel = (nxt(v2) - v2) / (2 * path.ds)
    valid = above_floor & nxt(above_floor)
    if not path.closed:
        valid[-1] = False
    # 1e-6 m/s^2: sqrt(1 - u^2) amplifies the round-off of v -> v^2 where the ellipse is full
    assert (accel - np.minimum(cfg.accel_max, room))[valid].max() <= 1e-6
    assert (-accel - np.minimum(cfg.brake_max, room))[valid].max() <= 1e-6


def test_profiles_never_exceed_friction_or_acceleration_limits(putnam):
    """On Putnam, for every surface and with an ice patch, all limits hold at every sample.

    Fails if a pass skips the friction ellipse, uses the wrong segment friction or the loop wrap.
    """
    mu = torch.stack(
        [torch.full((putnam.num_samples,), m, dtype=torch.float64) for m in (1.0, 0.7, 0.25, 0.1)]
        + [_ice_mu(putnam)]
    )
    v = speed_profile(putnam, mu)
    assert v.shape == mu.shape and v.dtype == torch.float64
    for row in range(mu.shape[0]):
        _check_limits(putnam, mu[row], v[row], CFG)
    assert v.max() <= CFG.v_max + 1e-12 and v.min() >= CFG.v_min


def test_ice_patch_slows_before_and_on_it_and_nowhere_far_away(putnam):
    """An ice patch in corner 1: slower on it and for 10 m before it, same speed > 300 m away.

    Fails if braking does not start before the patch, or the patch changes the whole lap.
    """
    mu_ice = _ice_mu(putnam)
    v_dry = speed_profile(putnam, torch.ones(putnam.num_samples, dtype=torch.float64))
    v_ice = speed_profile(putnam, mu_ice)
    s = putnam.s
    assert torch.all(v_ice <= v_dry + 1e-12)
    before = (s >= PATCH.s_start - 10) & (s < PATCH.s_start)
    on = mu_ice < 0.5
    assert on.sum() >= 28
    assert torch.all(v_ice[before | on] < v_dry[before | on] - 0.5)
    centre = PATCH.s_start + PATCH.length / 2
    dist = torch.remainder(s - centre + putnam.length / 2, putnam.length) - putnam.length / 2
    far = dist.abs() > 300.0
    assert torch.allclose(v_ice[far], v_dry[far], atol=1e-9, rtol=0)
    # on the ice the car corners at the ice limit: sqrt(f_lat * 0.1 * g * R) in the arc
    ice_limit = math.sqrt(CFG.lateral_fraction * 0.1 * GRAVITY * 69.0)
    assert float(v_ice[on].min()) == pytest.approx(ice_limit, rel=0.05)


def test_braking_into_a_corner_follows_constant_deceleration():
    """Before a sudden 20 m corner: v^2 = v_c^2 + 2 a (s_c - s) with a = min(brake, f_lon mu g).

    The segment that enters the corner uses the corner's curvature, so braking ends one sample
    early. Fails if the backward pass uses a wrong deceleration or discretisation.
    """
    line = integrate([Segment(200.0), Segment(100.0, 1 / 20, 1 / 20)], ds=1.0)
    m = len(line.x)
    zeros, half = np.zeros(m), np.full(m, 4.0)
    path = ReferencePath.from_arrays(
        "brake",
        np.stack([line.x, line.y, zeros], 1),
        line.heading,
        line.curvature,
        half,
        half,
        ds=line.ds,
        closed=False,
    )
    v = speed_profile(path, torch.ones(m, dtype=torch.float64))
    v_c2 = CFG.lateral_fraction * GRAVITY * 20.0
    decel = min(CFG.brake_max, CFG.longitudinal_fraction * GRAVITY)
    s = path.s[:200]
    expected = torch.clamp(v_c2 + 2 * decel * (199.0 - s), max=CFG.v_max**2)
    assert torch.allclose(v[:200] ** 2, expected, rtol=1e-9)
    assert torch.allclose(v[200:] ** 2, torch.full((m - 200,), v_c2, dtype=torch.float64))


def test_open_path_start_and_stop_speeds():
    """From rest on a straight v^2 = 2 a s; the stop at the end mirrors it with the brake limit.

    On dry asphalt the engine limit (3 m/s^2) and the friction-limited braking apply. Fails if
    the boundary speeds of open paths are ignored.
    """
    straight = straight_path(300.0)
    cfg = SpeedProfileConfig(v_start=0.0, v_end=0.0, v_min=0.1, reachable=False)  # analytic
    v = speed_profile(straight, torch.ones(straight.num_samples, dtype=torch.float64), cfg)
    s = straight.s
    decel = min(cfg.brake_max, cfg.longitudinal_fraction * GRAVITY)
    expected = torch.minimum(2 * cfg.accel_max * s, 2 * decel * (300.0 - s)).clamp(max=cfg.v_max**2)
    assert torch.allclose(v**2, expected.clamp(min=cfg.v_min**2), rtol=1e-9, atol=1e-9)


def test_uniform_circle_and_straight_give_analytic_speeds_and_lap_times():
    """A circle runs at sqrt(f_lat mu g R) and a straight at v_max; lap time = length / speed.

    Fails if the corner limit or the lap-time integral is wrong.
    """
    circle = circle_path(40.0)
    mu = torch.full((2, circle.num_samples), 0.5, dtype=torch.float64)
    v = speed_profile(circle, mu)
    expected = math.sqrt(CFG.lateral_fraction * 0.5 * GRAVITY * 40.0)
    assert torch.allclose(v, torch.full_like(v, expected))
    assert torch.allclose(
        lap_time(circle, v), torch.full((2,), circle.length / expected, dtype=torch.float64)
    )
    straight = straight_path(300.0)
    v = speed_profile(straight, torch.ones(straight.num_samples, dtype=torch.float64))
    assert float(lap_time(straight, v)) == pytest.approx(300.0 / CFG.v_max)


def test_bad_inputs_are_rejected(putnam):
    """Wrong friction shapes and inconsistent limits raise ConfigError.

    Fails if a mis-sized friction profile is broadcast silently.
    """
    with pytest.raises(ConfigError, match="mu must have shape"):
        speed_profile(putnam, torch.ones(10))
    with pytest.raises(ConfigError):
        SpeedProfileConfig(v_min=5.0, v_max=4.0)
    with pytest.raises(ConfigError):
        SpeedProfileConfig(lateral_fraction=1.5)
