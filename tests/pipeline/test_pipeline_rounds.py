"""``s3 pipeline --rounds 1`` on the tiny preset end to end (policy-in-the-loop round)."""

from __future__ import annotations

import json

import pytest

from gym_s3.data.dataset import DrivingDataset


@pytest.mark.slow
def test_tiny_pipeline_one_round_end_to_end(tmp_path):
    """A round drives the policy, re-distils on the rollouts, retrains and reports the gap."""
    from gym_s3.cli import main

    assert main(["pipeline", "--preset", "tiny", "--rounds", "1", "--out", str(tmp_path)]) == 0
    rollouts = DrivingDataset.load(tmp_path / "round1" / "rollouts" / "bicycle")
    assert {e.meta.device for e in rollouts.episodes} == {"policy:bicycle"}
    distill = json.loads((tmp_path / "round1" / "distill" / "stage.json").read_text())
    base = json.loads((tmp_path / "distill" / "stage.json").read_text())
    # the round trained on the expert data plus the rollouts
    assert distill["result"]["samples"] == base["result"]["samples"] + rollouts.num_samples
    open_loop = json.loads((tmp_path / "round1/distill/open_loop/evaluation.json").read_text())
    assert open_loop["rollouts"]["meta"]["drivers"] == ["policy:bicycle"]
    assert "bicycle (before)" in open_loop["rollouts"]["results"]
    for r in (0, 1):
        gap = json.loads((tmp_path / f"round{r}" / "gap" / "bicycle" / "gap.json").read_text())
        assert gap["runs"]
    report = (tmp_path / "report.md").read_text()
    assert "## 7. Policy-in-the-loop rounds" in report
    assert "| round1/gap |" in report
    assert (
        "round1/train/bicycle"
        in json.loads((tmp_path / "round1" / "train" / "stage.json").read_text())["result"][
            "policies"
        ]["bicycle"]
    )
