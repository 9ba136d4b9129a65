"""Open-loop evaluation, checked on logs of a known model and on the generated dataset."""

from __future__ import annotations

import json

import pytest
import torch
from distill_helpers import model_log

from gym_s3.distill.evaluate import HORIZONS, evaluate, print_tables, window_errors, write_report
from gym_s3.distill.windows import TensorWindows
from gym_s3.dynamics import make
from gym_s3.errors import ConfigError


def _ddm(seed: int):
    torch.manual_seed(seed)
    return make("ddm").eval()


def test_the_model_that_made_the_log_has_zero_error() -> None:
    """The model that produced a log has (float-)zero error; another model's error grows.

    Evaluating the DDM that generated the windows reproduces them at every horizon; a DDM with other
    weights has positive position errors that grow from 1 to 5 to 20 steps.
    """
    truth = _ddm(0)
    windows = TensorWindows(model_log(truth, n=6, steps=40, history=10, horizon=20))
    same = window_errors(truth, windows, (1, 5, 20))
    for metric, values in same.errors.items():
        assert float(values.abs().max()) < 1e-3, metric
    other = window_errors(_ddm(1), windows, (1, 5, 20))
    pos = other.errors["position"].mean(0)
    assert 0 < pos[0] < pos[1] < pos[2]


def test_summary_groups_by_surface_and_label() -> None:
    """Counts per surface/label group match the windows; the report is JSON with all horizons."""
    windows = model_log(_ddm(0), n=6, steps=30, history=10, horizon=5)
    report = evaluate({"a": _ddm(0), "b": _ddm(2)}, TensorWindows(windows), (1, 5))
    res = report["results"]["b"]
    assert res["all"]["count"] == len(windows["history"])
    assert res["surface:asphalt"]["count"] == int((windows["surface"] == 0).sum())
    assert res["label:sharp_turn"]["count"] == int(((windows["labels"] >> 1) & 1).sum())
    assert set(res["all"]["position"]) == {"1", "5"}
    json.dumps(report, allow_nan=False)


def test_bad_horizons_are_refused() -> None:
    """Horizons beyond the windows' horizon raise a ConfigError naming the limit."""
    windows = TensorWindows(model_log(_ddm(0), n=2, steps=20, history=10, horizon=5))
    with pytest.raises(ConfigError, match="1..5"):
        window_errors(_ddm(0), windows, (1, 20))


def test_report_files_on_the_generated_dataset(tiny, tmp_path) -> None:
    """On held-out sessions of real logs: JSON and per-surface plots are written, tables print."""
    val = tiny.split("val")
    windows = TensorWindows(val.windows(10, 60, stride=20))
    report = evaluate({"bicycle": make("bicycle")}, windows, HORIZONS)
    path = write_report(report, tmp_path)
    data = json.loads(path.read_text())
    assert data["horizons"] == list(HORIZONS)
    assert any(g.startswith("surface:") for g in data["results"]["bicycle"])
    for name in ("error_vs_horizon.png", "position_error_per_surface.png"):
        assert (tmp_path / name).stat().st_size > 1000
    print_tables(report)
