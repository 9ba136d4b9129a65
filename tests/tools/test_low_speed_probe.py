"""``tools/low_speed_probe.py``: open-loop low-speed manoeuvres, distilled backends vs stand-in."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from gym_s3.errors import ConfigError

pytest.importorskip("beamngpy")
_PATH = Path(__file__).resolve().parents[2] / "tools" / "low_speed_probe.py"
_SPEC = importlib.util.spec_from_file_location("low_speed_probe", _PATH)
probe_tool = importlib.util.module_from_spec(_SPEC)
sys.modules["low_speed_probe"] = probe_tool  # dataclasses look their module up
_SPEC.loader.exec_module(probe_tool)


def test_manoeuvre_commands_run_up_then_hold():
    """Run-up throttle straight ahead, then the held command; bad commands name their option."""
    acts, start = probe_tool.Manoeuvre(0.3, 1.0, -0.5, -0.2, 0.5).actions()
    assert start == 20 and acts.shape == (30, 2)
    assert np.allclose(acts[:20], (0.0, 0.3)) and np.allclose(acts[20:], (-0.5, -0.2))
    with pytest.raises(ConfigError, match="--steer"):
        probe_tool.Manoeuvre(steer=1.5)
    with pytest.raises(ConfigError, match="--hold-s"):
        probe_tool.Manoeuvre(hold_s=0.0)


def test_summary_reads_the_held_phase_only():
    """Time to rest counts from the first held step; the lowest speed shows rolling backwards."""
    speed = np.array([0.0, 1.0, 2.0, 1.0, 0.5, 0.01, -0.2, -0.1])
    out = probe_tool.summarise(speed, 2)
    assert out == {"v_start": 2.0, "v_end": -0.1, "time_to_rest_s": pytest.approx(0.15),
                   "v_min": -0.2}  # fmt: skip
    assert probe_tool.summarise(np.array([3.0, 2.0, 1.0]), 0)["time_to_rest_s"] is None
    with pytest.raises(ConfigError, match="--accel-s"):
        probe_tool.summarise(np.array([0.0, 1.0, 2.0]), 5)  # ended during the run-up


def test_full_brake_on_asphalt_stops_the_stand_in_and_ddm_alike():
    """From a 2 s full-throttle run-up, full braking straight: both come to rest, none reverses."""
    rows = probe_tool.probe(probe_tool.Manoeuvre(1.0, 2.0, 0.0, -1.0, 3.0), track="putnam",
                            surface="asphalt", backends=["ddm"])  # fmt: skip
    standin, ddm = rows["S3BeamNG-v0 (open stand-in)"], rows["S3Distilled-v0/ddm"]
    assert standin["v_start"] > 4.0 and ddm["v_start"] == pytest.approx(standin["v_start"], rel=0.2)
    for r in (standin, ddm):
        assert r["time_to_rest_s"] is not None and r["time_to_rest_s"] < 2.0
        assert r["v_min"] > -0.05
