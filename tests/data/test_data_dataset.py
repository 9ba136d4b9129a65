"""The dataset layer: windows per the data contract, splits by session, statistics, hashes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from data_helpers import meta_for, straight_columns, write_straight

from gym_s3.data.dataset import MANIFEST_FORMAT, MANIFEST_NAME, DrivingDataset, episode_digest
from gym_s3.data.files import read_episode, write_episode
from gym_s3.dynamics.base import HISTORY_FEATURES
from gym_s3.errors import ConfigError, DataFormatError
from gym_s3.scenarios.labels import LABELS


def tag(rows: torch.Tensor) -> torch.Tensor:
    """The row tag ``data_helpers.straight_columns`` stores in ``yaw_rate`` (global row * 1e-4)."""
    return torch.from_numpy(rows.numpy().astype(np.float32) * 1e-4)


def test_window_contents_follow_the_contract(tmp_path: Path) -> None:
    """Window rows: history k-H+1..k, actions/mu k..k+K-1, target_vel k+1..k+K, pose k..k+K."""
    write_straight(tmp_path, "s0", "e0", 40)
    ds = DrivingDataset.load(tmp_path)
    h, k = 4, 3
    w = ds.windows(history=h, horizon=k)
    rows = w["row"]
    assert rows.tolist() == list(range(h - 1, 40 - k))
    assert w["history"].shape == (len(rows), h, len(HISTORY_FEATURES))
    yr = HISTORY_FEATURES.index("yaw_rate")
    assert torch.equal(w["history"][:, :, yr], tag(rows[:, None] + torch.arange(-h + 1, 1)))
    assert torch.equal(w["future_action"][:, 0], w["history"][:, -1, 3:5])
    cols = straight_columns(40)
    act = torch.tensor(np.stack([cols["steer"], cols["accel"]], -1))
    assert torch.equal(w["future_action"], act[rows[:, None] + torch.arange(k)])
    assert torch.equal(w["target_vel"][:, :, 2], tag(rows[:, None] + torch.arange(1, k + 1)))
    assert w["future_mu"].shape == (len(rows), k, 4) and w["pose"].shape == (len(rows), k + 1, 3)
    assert torch.equal(
        w["pose"][:, :, 0], torch.tensor(cols["x"])[rows[:, None] + torch.arange(k + 1)]
    )


def test_windows_never_cross_episodes(tmp_path: Path) -> None:
    """Two episodes of 30 and 25 rows give (30-H-K+1) + (25-H-K+1) windows, each in one episode."""
    write_straight(tmp_path, "a", "e0", 30)
    write_straight(tmp_path, "b", "e0", 25)
    ds = DrivingDataset.load(tmp_path)
    h, k = 10, 5
    rows = ds.windows(h, k)["row"]
    assert len(rows) == (30 - h - k + 1) + (25 - h - k + 1)
    bounds = [(e.start, e.stop) for e in ds.episodes]
    for r in rows.tolist():
        assert any(a <= r - h + 1 and r + k < b for a, b in bounds)


def test_time_gap_splits_windows(tmp_path: Path) -> None:
    """A jump in t inside a file (a pause) is a boundary windows do not cross."""
    cols = straight_columns(30)
    cols["t"][15:] += 2.0
    write_episode(tmp_path / "g.parquet", cols, meta_for())
    rows = DrivingDataset.load(tmp_path).windows(history=5, horizon=2)["row"]
    assert not any(r - 4 < 15 <= r + 2 for r in rows.tolist())
    assert len(rows) == 2 * (15 - 5 - 2 + 1)


def test_faulted_rows_are_excluded(tmp_path: Path) -> None:
    """No window contains a row flagged as faulted."""
    cols = straight_columns(30)
    cols["fault"][12] = True
    write_episode(tmp_path / "f.parquet", cols, meta_for())
    rows = DrivingDataset.load(tmp_path).windows(history=3, horizon=2)["row"]
    assert not any(r - 2 <= 12 <= r + 2 for r in rows.tolist())
    assert len(rows) == (12 - 3 - 2 + 1) + (30 - 13 - 3 - 2 + 1)


def test_split_is_by_session_and_deterministic(tmp_path: Path) -> None:
    """Train/val share no session, cover every episode, and adding sessions moves none."""
    for i in range(12):
        write_straight(tmp_path, f"sess{i:02d}", "e0", 12)
        write_straight(tmp_path, f"sess{i:02d}", "e1", 12)
    ds = DrivingDataset.load(tmp_path, val_fraction=0.25)
    train, val = ds.split("train"), ds.split("val")
    t_sessions = {e.meta.session_id for e in train.episodes}
    v_sessions = {e.meta.session_id for e in val.episodes}
    assert not t_sessions & v_sessions and 1 <= len(v_sessions) <= 11
    assert len(train.episodes) + len(val.episodes) == 24
    assert train.num_samples + val.num_samples == ds.num_samples
    for i in range(12, 20):
        write_straight(tmp_path, f"sess{i:02d}", "e0", 12)
    bigger = DrivingDataset.load(tmp_path, val_fraction=0.25)
    assert {s for s in v_sessions if bigger.session_split(s) == "val"} == v_sessions
    assert all(bigger.session_split(s) == "train" for s in t_sessions)
    w = val.windows(3, 1)
    assert {ds.sessions[i] for i in w["session"].tolist()} == v_sessions


def test_normalization_comes_from_train_only(tmp_path: Path) -> None:
    """The statistics equal those of the train sessions' rows, not of the validation ones."""
    for i in range(8):
        write_straight(tmp_path, f"s{i}", "e0", 20, speed=5.0 + i)
    ds = DrivingDataset.load(tmp_path, val_fraction=0.25)
    stats = ds.normalization()
    speeds = [5.0 + int(s[1:]) for s in ds.sessions if ds.session_split(s) == "train"]
    # one-step anchors: rows 0..18 of every train episode, each at its constant speed
    assert stats.history_mean[0].item() == pytest.approx(np.mean(speeds), rel=1e-6)
    assert stats.history_std[0].item() == pytest.approx(np.std(speeds), rel=1e-5)
    assert stats.count == 19 * len(speeds)
    assert stats.delta_std[0].item() == pytest.approx(1e-3)  # constant speed: floored


def test_label_filter(tmp_path: Path) -> None:
    """Windows can be filtered by label; unknown labels and empty results raise ConfigError."""
    braking = straight_columns(40)
    braking["ax"][20:30] = -6.0
    write_episode(tmp_path / "brake.parquet", braking, meta_for("brake"))
    write_straight(tmp_path, "cruise", "e0", 40)
    ds = DrivingDataset.load(tmp_path, val_fraction=0.0)
    w = ds.windows(5, 1, labels=["hard_braking"])
    sessions = {ds.sessions[i] for i in w["session"].tolist()}
    assert sessions == {"brake"}
    bit = 1 << LABELS.index("hard_braking")
    assert bool(((w["labels"] & bit) != 0).all())
    with pytest.raises(ConfigError, match="unknown scenario label"):
        ds.windows(5, 1, labels=["drifting"])
    with pytest.raises(ConfigError, match="no window has"):
        ds.windows(5, 1, labels=["intersection"])


def test_low_friction_and_surface_per_window(tmp_path: Path) -> None:
    """A snow episode's windows carry the low_friction label and the snow surface id."""
    write_straight(tmp_path, "snow", "e0", 30, mu=0.25, surface="snow")
    ds = DrivingDataset.load(tmp_path)
    w = ds.windows(3, 1)
    assert bool(((w["labels"] >> LABELS.index("low_friction")) & 1).all())
    assert set(w["surface"].tolist()) == {4}


def test_content_hash_tracks_content_not_write_time(tmp_path: Path) -> None:
    """Rewriting the same data later keeps the hash; changing one value changes it."""
    a, b = tmp_path / "a", tmp_path / "b"
    write_straight(a, "s", "e", 20)
    first = DrivingDataset.load(a).content_hash
    cols, meta = read_episode(next(a.glob("*.parquet")))
    write_episode(b / "s__e.parquet", cols, meta.replace(created="2030-01-01T00:00:00+00:00"))
    assert DrivingDataset.load(b).content_hash == first
    cols["x"][3] += 0.5
    write_episode(b / "s__e.parquet", cols, meta)
    assert DrivingDataset.load(b).content_hash != first


def test_manifest_mismatch_names_the_file(tmp_path: Path) -> None:
    """A file whose content differs from manifest.json is refused by name."""
    path = write_straight(tmp_path, "s", "e", 20)
    cols, meta = read_episode(path)
    entry = {"path": path.name, "digest": episode_digest(cols, meta)}
    (tmp_path / MANIFEST_NAME).write_text(json.dumps({"format": MANIFEST_FORMAT, "files": [entry]}))
    DrivingDataset.load(tmp_path)  # consistent: loads
    cols["v_long"][0] = 3.0
    write_episode(path, cols, meta)
    with pytest.raises(DataFormatError, match="content differs") as err:
        DrivingDataset.load(tmp_path)
    assert path.name in str(err.value)
    write_straight(tmp_path, "other", "e", 5)
    (tmp_path / path.name).unlink()
    with pytest.raises(DataFormatError, match="not listed"):
        DrivingDataset.load(tmp_path)


def test_bad_file_in_folder_is_named(tmp_path: Path) -> None:
    """Loading a folder with one corrupted file names that file."""
    write_straight(tmp_path, "good", "e", 20)
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"PAR1 not really")
    with pytest.raises(DataFormatError) as err:
        DrivingDataset.load(tmp_path)
    assert "bad.parquet" in str(err.value)


def test_empty_folder(tmp_path: Path) -> None:
    """A folder without episodes gives a DataFormatError that says how to get data."""
    with pytest.raises(DataFormatError, match="s3 data generate"):
        DrivingDataset.load(tmp_path)


def test_gather_matches_windows(tmp_path: Path) -> None:
    """Lazy mini-batches (anchors + gather) equal the corresponding full windows."""
    write_straight(tmp_path, "s", "e", 50)
    ds = DrivingDataset.load(tmp_path)
    full = ds.windows(6, 4, stride=2)
    anchors = ds.anchors(6, 4, stride=2)
    batch = ds.gather(anchors[[3, 0, 5]], 6, 4)
    for key, value in batch.items():
        assert torch.equal(value, full[key][[3, 0, 5]]), key
