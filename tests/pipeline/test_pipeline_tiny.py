"""The whole pipeline end to end with tiny budgets, and its resumption."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torchrl")
pytest.importorskip("beamngpy")

from policies.pipeline.run import preset, run_pipeline  # noqa: E402

pytestmark = pytest.mark.timeout(600)


def test_tiny_pipeline_end_to_end_and_resume(tmp_path):
    """Every stage runs and the report names the stand-in; a second run reuses every stage.

    Fails if a stage breaks, the report lacks a section, or unchanged inputs re-run a stage.
    """
    logs: list[str] = []
    report = run_pipeline(preset("tiny"), tmp_path, log=logs.append)
    text = report.read_text()
    for heading in ("Driving data", "open-loop error", "Validation in S3BeamNG-v0",
                    "Backend scorecard", "Speed-up"):  # fmt: skip
        assert heading in text
    assert "open stand-in" in text and "not BeamNG.tech" in text
    assert (tmp_path / "report.html").read_text().startswith("<!doctype html>")
    summary = json.loads((tmp_path / "report.json").read_text())
    assert summary["speedup"]["backends"]["bicycle"]["speedup"] > 1.0
    runs = json.loads((tmp_path / "evaluate" / "bicycle" / "results.json").read_text())["runs"]
    assert runs and runs[0]["condition"]["surface"] == "asphalt"
    assert list((tmp_path / "evaluate" / "bicycle").glob("*.gif"))
    logs.clear()
    run_pipeline(preset("tiny"), tmp_path, log=logs.append)
    assert sum("unchanged" in line for line in logs) == 5
