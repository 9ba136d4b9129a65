"""The speed profile asks only for accelerations the high-fidelity car reaches on each surface."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from gym_s3.errors import DataFormatError
from gym_s3.tracks.lap_layouts import lap_layout
from gym_s3.tracks.reachable import TABLE_PATH, ReachableAccelerations
from gym_s3.tracks.speed_profile import SpeedProfileConfig, speed_profile
from gym_s3.tracks.surface_table import SURFACES
from gym_s3.tracks.surfaces import SurfaceBatch, friction_along

TABLE = ReachableAccelerations.load()


def _segment_rates(v: np.ndarray, ds: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(accel [m/s^2], speed at the start, speed at the end)`` of every segment of a loop."""
    nxt = np.roll(v, -1)
    return (nxt**2 - v**2) / (2 * ds), v, nxt


def _friction(putnam, surface: str) -> torch.Tensor:
    """``(M,)`` friction along Putnam: a uniform surface, or ``"<base>+6"`` with 6 ice patches."""
    base, _, patches = surface.partition("+")
    layout = lap_layout(putnam, base, int(patches or 0), seed=1)
    return friction_along(putnam, SurfaceBatch.stack([layout], dtype=torch.float64))[0]


@pytest.mark.parametrize("surface", [*SURFACES, "asphalt+6", "snow+6"])
def test_profile_accelerations_never_exceed_the_measured_ones(putnam, surface):
    """On a Putnam lap of each surface, every speed-up and slow-down is within the table.

    Acceleration of a segment is checked at its start speed, braking at its end speed (the
    speeds the forward and backward passes read), both at the segment's lower friction. Fails if
    the table is ignored or read at the wrong friction, speed or place along the loop.
    """
    mu = _friction(putnam, surface).numpy()
    v = speed_profile(putnam, torch.from_numpy(mu))
    cfg = SpeedProfileConfig()
    rate, v_start, v_end = _segment_rates(v.numpy(), putnam.ds)
    seg_mu = np.minimum(mu, np.roll(mu, -1))
    free = (v_start > cfg.v_min + 1e-9) & (v_end > cfg.v_min + 1e-9)  # the floor is not a pass
    accel_cap = TABLE.at("accel", seg_mu, v_start)
    brake_cap = TABLE.at("brake", seg_mu, v_end)
    assert (rate - accel_cap)[free].max() <= 1e-6
    assert (-rate - brake_cap)[free].max() <= 1e-6


def test_ice_profile_uses_the_measured_acceleration_not_the_friction_ellipse(putnam):
    """On ice the ellipse alone allows 0.59 m/s^2; the profile accelerates at the car's ~0.2.

    The ice lap therefore takes longer with the table than without it.
    """
    ice = torch.full((putnam.num_samples,), SURFACES["ice"].mu, dtype=torch.float64)
    with_table = speed_profile(putnam, ice).numpy()
    ellipse_only = speed_profile(putnam, ice, SpeedProfileConfig(reachable=False)).numpy()
    measured = TABLE.at("accel", np.array([0.1]), np.array([10.0]))[0]
    assert 0.15 < measured < 0.35
    assert _segment_rates(with_table, putnam.ds)[0].max() <= measured * 1.35  # speed-dependent
    assert _segment_rates(ellipse_only, putnam.ds)[0].max() > 0.5
    assert with_table.sum() < ellipse_only.sum()


def test_table_is_the_measured_file_and_interpolates_between_surfaces(tmp_path):
    """Surface rows match the JSON; friction between two surfaces lies between their rows."""
    raw = json.loads(TABLE_PATH.read_text())
    for name, row in raw["accel"].items():  # rows as measured (never lowered by smoothing)
        got = TABLE.at("accel", np.full(len(row), raw["mu"][name]), np.array(raw["speeds"]))
        assert np.all(got >= np.array(row) - 1e-12)
    ice_row = TABLE.at("brake", np.full(5, 0.1), np.array(raw["brake_speeds"]))
    assert ice_row == pytest.approx(raw["brake"]["ice"])
    snow, ice = raw["accel"]["snow"][0], raw["accel"]["ice"][0]
    mid = TABLE.at("accel", np.array([0.175]), np.array([0.0]))[0]
    assert min(snow, ice) <= mid <= max(snow, ice)
    half_ice = TABLE.at("accel", np.array([0.05]), np.array([0.0]))[0]
    assert half_ice == pytest.approx(ice / 2)
    bad = tmp_path / "acc.json"
    bad.write_text("{}")
    with pytest.raises(DataFormatError, match="measure_accelerations"):
        ReachableAccelerations.load(bad)
