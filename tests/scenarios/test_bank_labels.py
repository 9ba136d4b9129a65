"""Path bank (per-car paths) and scenario labels."""

from __future__ import annotations

import math

import pytest
import torch
from path_helpers import make_circle, make_straight

from gym_s3.errors import ConfigError
from gym_s3.scenarios import LABELS, PathBank, label_mask, label_names, label_windows


def test_bank_projection_is_exact_on_circle_and_straight():
    """Rows on a circle and a straight project with < 1 mm error against the analytic answer."""
    circle, straight = make_circle(40.0), make_straight(200.0)
    bank = PathBank.from_paths([circle, straight], dtype=torch.float64)
    # circle centred (0, 40): a point at angle phi, radius 40 - d lies at s = 40 phi, offset +d
    phi = torch.linspace(0.1, 6.0, 50, dtype=torch.float64)
    d = torch.linspace(-3.0, 3.0, 50, dtype=torch.float64)
    pts_c = torch.stack([(40 - d) * torch.sin(phi), 40 - (40 - d) * torch.cos(phi)], -1)
    pts_s = torch.stack([torch.linspace(5, 150, 50, dtype=torch.float64), d], -1)
    pid = torch.cat([torch.zeros(50, dtype=torch.long), torch.ones(50, dtype=torch.long)])
    fr = bank.project(pid, torch.cat([pts_c, pts_s]))
    expected_s = torch.cat([40 * phi, pts_s[:, 0]])
    assert (fr.s - expected_s).abs().max().item() < 1e-3
    assert (fr.d - torch.cat([d, d])).abs().max().item() < 1e-3


def test_windowed_search_follows_and_matches_global():
    """With a hint, the windowed projection equals the global one for nearby points."""
    bank = PathBank.from_paths([make_circle(30.0)], dtype=torch.float64)
    pid = torch.zeros(20, dtype=torch.long)
    phi = torch.linspace(0.0, 6.0, 20, dtype=torch.float64)
    pts = torch.stack([31 * torch.sin(phi), 30 - 31 * torch.cos(phi)], -1)
    fr0 = bank.project(pid, pts)
    moved = torch.stack([31 * torch.sin(phi + 0.1), 30 - 31 * torch.cos(phi + 0.1)], -1)
    fr_w = bank.project(pid, moved, fr0.index)
    fr_g = bank.project(pid, moved)
    assert torch.allclose(fr_w.s, fr_g.s) and torch.allclose(fr_w.d, fr_g.d)


def test_sample_wraps_closed_and_extrapolates_open():
    """Closed paths wrap s; open paths extrapolate along the end tangent."""
    bank = PathBank.from_paths([make_circle(30.0), make_straight(100.0)], dtype=torch.float64)
    pid = torch.tensor([0, 1])
    length = 2 * math.pi * 30
    smp = bank.sample(pid, torch.tensor([length + 1.0, 110.0], dtype=torch.float64))
    ref = bank.sample(pid[:1], torch.tensor([1.0], dtype=torch.float64))
    assert smp.x[0].item() == pytest.approx(ref.x[0].item(), abs=1e-9)
    assert smp.x[1].item() == pytest.approx(110.0) and smp.y[1].item() == pytest.approx(0.0)


def test_label_windows_flags_each_label():
    """Hand-built windows get exactly the labels their motion implies."""
    t = 20
    ones = torch.ones(5, t)
    speed = ones * 10.0
    accel = ones * 0.0
    kappa = ones * 0.0
    mu = ones * 1.0
    accel[0, 5] = -6.0  # hard braking
    kappa[1] = 0.1  # sharp turn
    speed[2], kappa[2] = 25.0, 0.01  # 6.25 m/s^2 at 25 m/s: high-speed corner
    mu[3] = 0.1  # low friction
    mu[4, 10:] = 0.1  # friction transition
    masks = label_windows(speed, accel, kappa, mu).tolist()
    names = [set(label_names(m)) for m in masks]
    assert names[0] == {"hard_braking", "straight_cruising"} - {"straight_cruising"}
    assert names[1] == {"sharp_turn"}
    assert names[2] == {"high_speed_corner"}
    assert names[3] == {"low_friction", "straight_cruising"}
    assert names[4] == {"friction_transition", "straight_cruising"}


def test_label_mask_validates_names():
    """Unknown labels raise with the list of valid labels."""
    assert label_names(label_mask(["sharp_turn", "low_friction"])) == ("sharp_turn", "low_friction")
    with pytest.raises(ConfigError, match="valid labels"):
        label_mask(["drifting"])
    assert len(LABELS) == 11


@pytest.mark.parametrize(
    ("decel", "lat", "expected"),
    [(2.1, 2.1, True), (1.9, 2.1, False), (2.1, 1.9, False)],
)
def test_trail_braking_needs_braking_and_cornering_in_one_sample(
    decel: float, lat: float, expected: bool
) -> None:
    """Just above both thresholds in one sample labels ``trail_braking``; just below does not."""
    speed = torch.full((1, 4), 10.0)
    accel = torch.tensor([[0.0, -decel, 0.0, -3.0]])
    curvature = torch.tensor([[0.0, lat / 100.0, 0.0, 0.0]])
    mask = label_windows(speed, accel, curvature, torch.ones(1, 4))
    assert ("trail_braking" in label_names(int(mask[0]))) is expected
