"""The whole pipeline end to end with tiny budgets, and its resumption."""

from __future__ import annotations

import contextlib
import json
from dataclasses import replace

import pytest

pytest.importorskip("torchrl")
pytest.importorskip("beamngpy")

from policies.pipeline.run import preset, run_pipeline  # noqa: E402

pytestmark = pytest.mark.timeout(600)


def test_tiny_pipeline_end_to_end_and_resume(tmp_path):
    """Every stage runs and the report names the stand-in; a second run reuses every stage.

    Fails if a stage breaks, the report lacks a section, or unchanged inputs re-run a stage.
    """
    from gym_s3.cli import main

    assert main(["pipeline", "--preset", "tiny", "--out", str(tmp_path)]) == 0  # the command
    report = tmp_path / "report.md"
    text = report.read_text()
    for heading in ("Driving data", "open-loop error", "Validation in S3BeamNG-v0",
                    "Backend scorecard", "Speed-up"):  # fmt: skip
        assert heading in text
    assert "open stand-in" in text and "not BeamNG.tech" in text
    assert (tmp_path / "report.html").read_text().startswith("<!doctype html>")
    summary = json.loads((tmp_path / "report.json").read_text())
    assert summary["speedup"]["backends"]["bicycle"]["speedup"] > 1.0
    # both denominators of the speed-up: one car through beamngpy, the batched vehicle model
    assert (
        summary["speedup"]["vehicle_model_steps_per_s"] > summary["speedup"]["standin_steps_per_s"]
    )
    assert "batched in-process" in text
    runs = json.loads((tmp_path / "evaluate" / "bicycle" / "results.json").read_text())["runs"]
    assert runs and runs[0]["condition"]["surface"] == "asphalt"
    assert list((tmp_path / "evaluate" / "bicycle").glob("*.gif"))
    logs: list[str] = []
    run_pipeline(preset("tiny"), tmp_path, log=logs.append)
    assert sum("unchanged" in line for line in logs) == 5
    # the same laps in the batched vehicle model: only the evaluation re-runs, with equal rows
    logs.clear()
    run_pipeline(replace(preset("tiny"), eval_simulator="model"), tmp_path, log=logs.append)
    assert sum("unchanged" in line for line in logs) == 4
    batched = json.loads((tmp_path / "evaluate" / "bicycle" / "results.json").read_text())
    assert "batched in-process" in batched["title"]
    assert [(r["driver"], r["condition"]) for r in batched["runs"]] == [
        (r["driver"], r["condition"]) for r in runs]  # fmt: skip
    for a, b in zip(runs, batched["runs"], strict=True):
        assert b["metrics"] == pytest.approx(a["metrics"], rel=1e-5, abs=1e-6)


@pytest.mark.parametrize(
    "extra, match",
    [
        (["--device", "gpu"], "unknown torch device 'gpu'"),
        (["--policies", "ddm,ppo"], "unknown policy 'ppo'"),
        (["--distill", "bicycle,gru"], "unknown backend 'gru'"),
        (["--preset", "huge"], "invalid choice"),
    ],
)
def test_pipeline_options_are_checked_before_any_stage_runs(tmp_path, capsys, extra, match):
    """Bad devices, policy or backend names stop ``s3 pipeline`` at once, naming the value."""
    from gym_s3.cli import main

    with pytest.raises(SystemExit) if "--preset" in extra else contextlib.nullcontext():
        rc = main(["pipeline", "--out", str(tmp_path / "p"), *extra])
        assert rc == 2
    captured = capsys.readouterr()
    assert match in captured.err
    assert not (tmp_path / "p" / "data").exists()


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="a GPU is present")
def test_pipeline_refuses_cuda_without_a_gpu(tmp_path, capsys):
    """``--device cuda`` on a CPU-only torch stops before the data stage, saying what to do."""
    from gym_s3.cli import main

    assert main(["pipeline", "--out", str(tmp_path / "p"), "--device", "cuda"]) == 2
    assert "sees no CUDA GPU" in capsys.readouterr().err
    assert not (tmp_path / "p" / "data").exists()
