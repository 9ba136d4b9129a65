"""Dynamics checkpoints: save/load of every backend and the refusal of mismatched files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from dynamics_helpers import BACKENDS, build, random_rows

from gym_s3.dynamics import backend_names, default_checkpoint, load, save, state_from_window
from gym_s3.errors import CheckpointError


def _predict(backend, rows: torch.Tensor) -> torch.Tensor:
    state = state_from_window(backend, rows, torch.zeros(rows.shape[0], 3))
    with torch.no_grad():
        return backend.step(state, rows[:, -1, 3:5], rows[:, -1, 5:9]).vel


@pytest.mark.parametrize("name", BACKENDS)
def test_round_trip_reproduces_predictions(name: str, tmp_path: Path) -> None:
    """A saved and reloaded backend predicts bit-identically and keeps its stats and config."""
    backend = build(name, seed=3)
    sidecar = save(backend, tmp_path / name, dataset_hash="abc", training={"epochs": 1})
    loaded = load(sidecar)
    assert loaded.name == name and not loaded.training
    assert loaded.config() == backend.config()
    assert loaded.checkpoint_meta["dataset_hash"] == "abc"
    rows = random_rows(7, 12, seed=4)
    assert torch.equal(_predict(loaded, rows), _predict(backend, rows))


def _edit_sidecar(stem: Path, **changes) -> None:
    path = stem.with_suffix(".json")
    data = json.loads(path.read_text())
    for key, value in changes.items():
        target = data
        *parents, leaf = key.split(".")
        for p in parents:
            target = target[p]
        target[leaf] = value
    path.write_text(json.dumps(data))


def test_config_that_changes_shapes_is_refused(tmp_path: Path) -> None:
    """Editing the config (another hidden width) no longer fits the weights: strict refusal."""
    save(build("ddm"), tmp_path / "m")
    _edit_sidecar(tmp_path / "m", **{"meta.config.hidden": 32})
    with pytest.raises(CheckpointError, match="does not fit the model.*shape mismatches"):
        load(tmp_path / "m")


def test_mismatches_are_refused(tmp_path: Path) -> None:
    """Another backend than asked for, an unknown backend, other history features, no stats."""
    save(build("trans"), tmp_path / "t")
    with pytest.raises(CheckpointError, match="holds a 'trans' backend, but 'ddm'"):
        load(tmp_path / "t", backend="ddm")
    _edit_sidecar(tmp_path / "t", **{"meta.backend": "warp_drive"})
    with pytest.raises(CheckpointError, match="'warp_drive', which is not registered"):
        load(tmp_path / "t")
    save(build("trans"), tmp_path / "t")
    _edit_sidecar(tmp_path / "t", **{"meta.history_features": ["v_long"]})
    with pytest.raises(CheckpointError, match="history features"):
        load(tmp_path / "t")
    save(build("trans"), tmp_path / "t")
    _edit_sidecar(tmp_path / "t", **{"meta.normalization": None})
    with pytest.raises(CheckpointError, match="normalisation statistics"):
        load(tmp_path / "t")
    _edit_sidecar(tmp_path / "t", **{"meta.config.d_model": "wide"})
    with pytest.raises(CheckpointError, match="d_model = 'wide' is str, expected a number"):
        load(tmp_path / "t")


def test_weights_edited_after_saving_are_refused(tmp_path: Path) -> None:
    """Weights swapped for another model's (valid safetensors) fail the hash check."""
    save(build("ddm", seed=0), tmp_path / "a")
    save(build("ddm", seed=1), tmp_path / "b")
    Path(f"{tmp_path / 'a'}.safetensors").write_bytes(
        Path(f"{tmp_path / 'b'}.safetensors").read_bytes()
    )
    with pytest.raises(CheckpointError, match="SHA-256"):
        load(tmp_path / "a")


@pytest.mark.parametrize("name", BACKENDS)
def test_shipped_default_loads(name: str) -> None:
    """``load(name)`` finds the checkpoint shipped in gym_s3/assets/dynamics (<= 5 MB each)."""
    stem = default_checkpoint(name)
    weights = Path(f"{stem}.safetensors")
    assert weights.is_file(), f"missing shipped checkpoint {weights}"
    assert weights.stat().st_size + stem.with_suffix(".json").stat().st_size <= 5 * 2**20
    backend = load(name)
    assert backend.name == name and name in backend_names()
    assert backend.checkpoint_meta["dataset_hash"]
