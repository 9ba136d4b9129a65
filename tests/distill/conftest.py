"""Fixtures of the distillation tests: single-threaded runs and a small generated dataset."""

from __future__ import annotations

from pathlib import Path

import pytest
from torch_helpers import one_torch_thread

from gym_s3.data.dataset import DrivingDataset
from gym_s3.data.generate import generate_dataset, preset


@pytest.fixture(autouse=True)
def _one_thread():
    """Run single-threaded (small tensors; OpenMP hand-offs dominate on a shared CPU)."""
    with one_torch_thread():
        yield


@pytest.fixture(scope="session")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``s3 data generate``'s ``tiny`` preset with 24 sessions of 8 s (every surface), seed 0."""
    out = tmp_path_factory.mktemp("tiny") / "data"
    generate_dataset(out, preset("tiny", cars=24, episode_s=8.0), seed=0, preset_name="tiny")
    return out


@pytest.fixture(scope="session")
def tiny(tiny_dir: Path) -> DrivingDataset:
    """The tiny dataset, loaded (split by session)."""
    return DrivingDataset.load(tiny_dir)
