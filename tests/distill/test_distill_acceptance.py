"""Acceptance of the shipped checkpoints on the held-out sessions of the default dataset (slow).

The default dataset is regenerated deterministically (``s3 data generate --seed 0``, about two
minutes) unless ``S3_DEFAULT_DATASET`` points at a copy.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch

from gym_s3.data.dataset import DrivingDataset
from gym_s3.data.generate import generate_dataset, preset
from gym_s3.distill.evaluate import evaluate
from gym_s3.distill.windows import TensorWindows
from gym_s3.dynamics import load
from gym_s3.tracks.surfaces import SURFACE_NAMES

LEARNED = ("ddm", "trans", "dytr")
#: What ``s3 data generate --seed 0`` (default preset) gave: content hashes on the CPUs it was made
#: on, and the hash of its session ids (the same on every CPU).
REFERENCE: dict = json.loads(
    (Path(__file__).parents[1] / "data" / "default_dataset_reference.json").read_text()
)
DEFAULT_HASHES: set[str] = {*REFERENCE["content_hash"].values(), *REFERENCE["other_content_hashes"]}


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """20-step open-loop errors of the four shipped backends on the held-out sessions."""
    root = os.environ.get("S3_DEFAULT_DATASET")
    if root is None:
        root = tmp_path_factory.mktemp("default") / "data"
        generate_dataset(root, preset("default"), seed=0, preset_name="default")
    dataset = DrivingDataset.load(Path(root))
    windows = TensorWindows(dataset.split("val").windows(10, 20, stride=5))
    models = {name: load(name) for name in ("bicycle", *LEARNED)}
    with torch.inference_mode():
        rep = evaluate(models, windows, (1, 5, 20))
    rep["dataset_hash"] = dataset.content_hash
    rep["sessions_hash"] = dataset.sessions_hash
    rep["trained_on"] = {n: _trained_on(m.checkpoint_meta) for n, m in models.items()}
    print({n: {g: round(r[g]["position"]["20"], 4) for g in r if g == "all" or "surface" in g}
           for n, r in rep["results"].items()})  # fmt: skip
    return rep


@pytest.mark.slow
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("name", LEARNED)
def test_learned_backends_beat_the_bicycle_on_every_surface(report: dict, name: str) -> None:
    """20-step (1 s) position error of every learned backend < the fitted bicycle's, per surface."""
    res, base = report["results"][name], report["results"]["bicycle"]
    surfaces = [f"surface:{s}" for s in SURFACE_NAMES if f"surface:{s}" in base]
    assert len(surfaces) == len(SURFACE_NAMES)
    for group in surfaces:
        assert res[group]["position"]["20"] < base[group]["position"]["20"], group


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_dytr_is_at_least_as_accurate_as_ddm(report: dict) -> None:
    """The 20-step position error of dytr over the held-out windows is <= that of ddm."""
    res = report["results"]
    assert res["dytr"]["all"]["position"]["20"] <= res["ddm"]["all"]["position"]["20"]


def _trained_on(meta: dict) -> set[str]:
    """Content hashes of the data a checkpoint was trained on: the whole set, and each folder.

    A policy-in-the-loop checkpoint is trained on the default dataset plus policy rollouts
    (``training.data_sources``); the split by session hash keeps the default dataset's held-out
    sessions held out in the union.
    """
    parts = meta.get("training", {}).get("data_sources", [])
    return {meta["dataset_hash"], *(p["content_hash"] for p in parts)}


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_shipped_checkpoints_were_trained_on_this_dataset(report: dict) -> None:
    """Every shipped learned checkpoint was trained on the default dataset, held out the same way.

    The dataset here has the recorded sessions (so the same split), and each checkpoint's data
    (its ``dataset_hash``, or one of its ``training.data_sources`` when policy rollouts were
    added) includes the default dataset as made here or on another CPU: the floats, hence the
    content hash, differ between CPUs, the sessions do not. Otherwise the "held-out" split above
    could overlap the sessions a model was trained on (a drift of ``s3 data generate`` in its
    sessions shows up here first).
    """
    assert report["sessions_hash"] == REFERENCE["sessions_hash"]
    for name in LEARNED:
        assert report["trained_on"][name] & {report["dataset_hash"], *DEFAULT_HASHES}, name
        # the same split: a smaller validation share would have trained on held-out sessions
        assert "--val-fraction=0.15" in load(name).checkpoint_meta["training"]["command"], name
