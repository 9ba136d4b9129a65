"""Fast sibling of ``test_distill_acceptance.py``: the shipped learned backends beat the bicycle.

The slow test regenerates the default dataset (about two minutes) and judges its held-out
sessions. This one uses the small dataset the other distillation tests generate anyway (``tiny``
preset, 24 sessions of 8 s on every surface, none of them in the default dataset the shipped
checkpoints were trained on) and checks the same claim: the 20-step (1 s) open-loop position
error of every shipped learned backend is below the fitted bicycle's, on every surface.
Measured (2026-12-03): bicycle 0.03-0.34 m per surface, the learned backends 0.007-0.044 m.
"""

from __future__ import annotations

import pytest
import torch

from gym_s3.data.dataset import DrivingDataset
from gym_s3.distill.evaluate import evaluate
from gym_s3.distill.windows import TensorWindows
from gym_s3.dynamics import load
from gym_s3.tracks.surfaces import SURFACE_NAMES

LEARNED = ("ddm", "trans", "dytr")


@pytest.fixture(scope="module")
def results(tiny: DrivingDataset) -> dict:
    """20-step open-loop errors of the four shipped backends on every window of the dataset."""
    windows = TensorWindows(tiny.windows(10, 20, stride=5))
    models = {name: load(name) for name in ("bicycle", *LEARNED)}
    with torch.inference_mode():
        return evaluate(models, windows, (20,))["results"]


@pytest.mark.parametrize("name", LEARNED)
def test_shipped_learned_backends_beat_the_bicycle_on_fresh_driving(results: dict, name: str):
    """Per surface, the learned backend's 1 s position error is below the bicycle's."""
    res, base = results[name], results["bicycle"]
    surfaces = [f"surface:{s}" for s in SURFACE_NAMES if f"surface:{s}" in base]
    assert len(surfaces) == len(SURFACE_NAMES)
    errors = {g: (round(res[g]["position"]["20"], 4), round(base[g]["position"]["20"], 4))
              for g in surfaces}  # fmt: skip
    for group, (learned, bicycle) in errors.items():
        assert learned < bicycle, (group, errors)
