"""Fixtures of the distributed tests: a small dataset and the main two-process gloo job."""

from __future__ import annotations

from pathlib import Path

import pytest
from dist_harness import RankRun, run_ranks

from gym_s3.data.generate import generate_dataset, preset


@pytest.fixture(scope="session")
def dist_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``s3 data generate``'s ``tiny`` preset with 6 sessions of 6 s (seed 0)."""
    out = tmp_path_factory.mktemp("dist_data") / "data"
    generate_dataset(out, preset("tiny", cars=6, episode_s=6.0), seed=0, preset_name="tiny")
    return out


@pytest.fixture(scope="session")
def job(tmp_path_factory: pytest.TempPathFactory, dist_dataset: Path) -> RankRun:
    """Two gloo ranks running :func:`dist_workers.checks` (results in ``job.results``)."""
    pytest.importorskip("torchrl")
    run = run_ranks("checks", tmp_path_factory.mktemp("dist_job"), world=2,
                    args=(str(dist_dataset),), deadline_s=240.0)  # fmt: skip
    assert run.exitcodes == [0, 0], run.errors()
    return run
