"""``s3 data generate``: deterministic, covering, and consistent with the physics it logs."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from gym_s3.data.dataset import MANIFEST_NAME, DrivingDataset
from gym_s3.data.generate import generate_dataset, preset
from gym_s3.data.manifest import cpu_signature
from gym_s3.errors import ConfigError
from gym_s3.tracks.surfaces import SURFACE_NAMES
from gym_s3.vehicle import SEDAN

pytestmark = pytest.mark.timeout(240)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """The tiny preset generated once for this module."""
    out = tmp_path_factory.mktemp("tiny")
    return out, generate_dataset(out, preset("tiny"), seed=0, preset_name="tiny")


def test_same_seed_same_content(tmp_path: Path) -> None:
    """Two runs with one seed give the same content hash; another seed gives another."""
    cfg = preset("tiny", cars=4, episode_s=1.0, procedural_tracks=1, town_routes=0)
    a = generate_dataset(tmp_path / "a", cfg, seed=5)
    b = generate_dataset(tmp_path / "b", cfg, seed=5)
    c = generate_dataset(tmp_path / "c", cfg, seed=6)
    assert a["content_hash"] == b["content_hash"]
    assert a["content_hash"] != c["content_hash"]
    assert DrivingDataset.load(tmp_path / "a").content_hash == a["content_hash"]


def test_covers_every_surface_track_kind_and_patches(tiny: tuple[Path, dict]) -> None:
    """The tiny dataset has every base surface, Putnam + procedural + town, and ice patches."""
    out, manifest = tiny
    ds = DrivingDataset.load(out)
    assert len(ds.episodes) == 12 and manifest["samples"] == ds.num_samples
    assert manifest["cpu"] == cpu_signature() and "/" in manifest["cpu"]  # the hash depends on it
    assert {e.meta.base_surface for e in ds.episodes} == set(SURFACE_NAMES)
    kinds = {e.meta.track.split(":")[0] for e in ds.episodes}
    assert kinds <= {"putnam", "procedural", "town"} and len(kinds) >= 2
    assert all(e.meta.source == "standin-batched" for e in ds.episodes)
    assert all(e.meta.device == "scripted-expert" and e.meta.seed == 0 for e in ds.episodes)
    patches = sum(len(e.meta.layout["patches"]) for e in ds.episodes)
    assert patches > 0
    assert all(set(e.meta.extra["events"]) >= {"late_braking", "hard_brake"} for e in ds.episodes)
    entries = json.loads((out / MANIFEST_NAME).read_text())["files"]
    assert sorted(e["path"] for e in entries) == sorted(p.name for p in out.glob("*.parquet"))


def test_logged_motion_is_consistent(tiny: tuple[Path, dict]) -> None:
    """Positions advance by the logged body velocities rotated by the logged (unwrapped) yaw.

    Trapezoidal integration of the logged velocities over one 50 ms step matches the logged
    displacement to within a few centimetres, and the yaw changes by the mean yaw rate times dt.
    """
    ds = DrivingDataset.load(tiny[0])
    c = {k: v.double() for k, v in ds.columns.items() if v.is_floating_point()}
    for e in ds.episodes:
        sl = slice(e.start, e.stop)
        x, y, yaw = c["x"][sl], c["y"][sl], c["yaw"][sl]
        vx, vy, r = c["v_long"][sl], c["v_lat"][sl], c["yaw_rate"][sl]
        wx = vx * torch.cos(yaw) - vy * torch.sin(yaw)
        wy = vx * torch.sin(yaw) + vy * torch.cos(yaw)
        dt = 0.05
        ex = x[1:] - x[:-1] - 0.5 * dt * (wx[1:] + wx[:-1])
        ey = y[1:] - y[:-1] - 0.5 * dt * (wy[1:] + wy[:-1])
        assert float(torch.hypot(ex, ey).max()) < 0.05, e.meta.session_id
        eyaw = yaw[1:] - yaw[:-1] - 0.5 * dt * (r[1:] + r[:-1])
        assert float(eyaw.abs().max()) < 0.01
        assert float((yaw[1:] - yaw[:-1]).abs().max()) < math.pi  # unwrapped: no 2 pi jumps


def test_wheel_friction_matches_the_layout(tiny: tuple[Path, dict]) -> None:
    """mu_* columns equal the episode layout's friction at the logged wheel positions."""
    ds = DrivingDataset.load(tiny[0])
    offsets = SEDAN.wheel_positions(dtype=torch.float64)
    for e in ds.episodes:
        sl = slice(e.start, e.stop)
        x, y, yaw = (ds.columns[k][sl].double() for k in ("x", "y", "yaw"))
        c, s = torch.cos(yaw)[:, None], torch.sin(yaw)[:, None]
        px = x[:, None] + offsets[:, 0] * c - offsets[:, 1] * s
        py = y[:, None] + offsets[:, 0] * s + offsets[:, 1] * c
        mu, ids = e.meta.surface_layout.batch(dtype=torch.float64).lookup(
            torch.stack([px, py], -1).reshape(1, -1, 2)
        )
        logged = torch.stack([ds.columns[f"mu_{w}"][sl] for w in ("fl", "fr", "rl", "rr")], -1)
        logged_ids = torch.stack(
            [ds.columns[f"surface_{w}"][sl] for w in ("fl", "fr", "rl", "rr")], -1
        )
        # float32 logs: points within a few mm of a patch edge may round across it
        agree = (logged.double() - mu.reshape(-1, 4)).abs() < 1e-5
        assert float(agree.double().mean()) > 0.995
        assert float((logged_ids.long() == ids.reshape(-1, 4)).double().mean()) > 0.995


def test_actions_and_sent_controls_agree(tiny: tuple[Path, dict]) -> None:
    """throttle_cmd - brake_cmd equals accel, the sent steering equals the action's."""
    c = DrivingDataset.load(tiny[0]).columns
    np.testing.assert_allclose(c["throttle_cmd"] - c["brake_cmd"], c["accel"], atol=1e-6)
    np.testing.assert_array_equal(c["steer_cmd_raw"], c["steer"])
    assert float(c["steer"].abs().max()) <= 1.0 and float(c["accel"].abs().max()) <= 1.0
    assert not torch.isnan(c["omega_fl"]).any() and not torch.isnan(c["steer_applied"]).any()


def test_refuses_non_empty_folder(tmp_path: Path) -> None:
    """Generating into a folder with files raises instead of mixing datasets."""
    (tmp_path / "x.txt").write_text("x")
    with pytest.raises(ConfigError, match="not empty"):
        generate_dataset(tmp_path, preset("tiny"), seed=0)


def test_preset_validation() -> None:
    """Unknown presets and bad sizes are refused with ConfigError."""
    with pytest.raises(ConfigError, match="unknown preset"):
        preset("huge")
    with pytest.raises(ConfigError, match="cars"):
        preset("tiny", cars=0)
    with pytest.raises(ConfigError, match="repeat"):
        preset("tiny", surfaces=("asphalt", "dry"))
