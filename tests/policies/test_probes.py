"""Stall probes (``policies.probes``): edits and where the stall is found.

The edits touch exactly the named features, and the stall is found after the car got going, not
at the standing start.
"""

from __future__ import annotations

import numpy as np
import pytest
from torch_helpers import one_torch_thread

from gym_s3.errors import ConfigError
from gym_s3.spec import LOOKAHEAD_M, feature_index, observation_bounds, observation_features
from policies.probes import PROBES, Stall, expert_action_at, find_stall, probe_stall

NAMES = tuple(f.name for f in observation_features("default"))


class Readout:
    """A 'policy' whose action reads two features: ``[obs[a], obs[b]]``."""

    obs_mode = "default"

    def __init__(self, a: str, b: str) -> None:
        self.a, self.b = feature_index(a), feature_index(b)

    def act(self, obs: np.ndarray) -> np.ndarray:
        """``[obs[a], obs[b]]``."""
        return np.array([obs[self.a], obs[self.b]], dtype=np.float32)


def _stall() -> Stall:
    low, high = observation_bounds("default")
    rng = np.random.default_rng(0)
    obs = rng.uniform(np.maximum(low, -5.0), np.minimum(high, 5.0)).astype(np.float32)
    obs[feature_index("v_long")] = 0.1
    return Stall(step=0, observation=obs, action=np.zeros(2, np.float32), names=NAMES)


def test_probes_edit_the_named_features_and_keep_the_stall():
    """Each probe changes its features (straight road, speed, target speeds, errors), no other."""
    stall = _stall()
    before = stall.observation.copy()
    v, serr = stall.feature("v_long"), stall.feature("speed_error")
    far = f"ref_y_{LOOKAHEAD_M[-1]:g}m"
    out = probe_stall(Readout(far, "speed_error"), stall)
    assert np.array_equal(stall.observation, before)  # probes edit copies
    assert out["as observed"][0] == pytest.approx(before[feature_index(far)])
    assert out["straight road ahead"][0] == 0.0
    assert out["speed 2 m/s"][1] == pytest.approx(serr + 2.0 - v)
    assert out["target speeds x3"][1] == pytest.approx(v - 3.0 * (v - serr))
    xs = probe_stall(Readout(f"ref_x_{LOOKAHEAD_M[3]:g}m", f"ref_v_{LOOKAHEAD_M[0]:g}m"), stall)
    assert xs["straight road ahead"][0] == pytest.approx(LOOKAHEAD_M[3])
    assert xs["target speeds x2"][1] == pytest.approx(2.0 * before[feature_index("ref_v_2m")])
    errs = probe_stall(Readout("cross_track_error", "heading_error"), stall)
    assert errs["no cross-track error"][0] == 0.0
    assert errs["no cross-track error"][1] == pytest.approx(before[feature_index("heading_error")])
    assert list(errs["no cross-track or heading error"]) == [0.0, 0.0]
    assert set(PROBES) == set(out)


class Scripted:
    """Throttle for ``go`` steps, then full brake for ever (straight wheel)."""

    obs_mode = "default"

    def __init__(self, go: int) -> None:
        self.go, self.t = go, 0

    def act(self, obs: np.ndarray) -> np.ndarray:
        """Throttle, then brake; straight wheel."""
        self.t += 1
        return np.array([0.0, 1.0 if self.t <= self.go else -1.0], dtype=np.float32)


def test_find_stall_starts_the_clock_only_after_the_car_got_going():
    """A car braked to rest is found 2 s later; one that never left the start is not.

    At the found state the scripted expert throttles (checked: with its pedal's sign flipped in
    :func:`expert_action_at`, it fails).
    """
    from gym_s3.tracks.lap_layouts import lap_layout
    from gym_s3.tracks.registry import cached_track
    from policies.evaluate_distilled import distilled_lap_env

    layout = lap_layout(cached_track("putnam"), "asphalt", 0, 0)
    with one_torch_thread():
        env = distilled_lap_env("putnam", layout, backend="bicycle", obs_mode="default")
        stall = find_stall(Scripted(go=40), env, standing_s=2.0)
        never_moved = find_stall(Scripted(go=0), env, standing_s=2.0, max_steps=300)
    assert stall is not None and never_moved is None
    assert stall.feature("v_long") < 0.5
    assert stall.step > 40 + 40  # 2 s of standing after braking from speed
    assert stall.action[1] == -1.0
    # the teacher, asked at the same state (at rest, below the target speed), drives on
    assert expert_action_at(env)[1] > 0.2
    with pytest.raises(ConfigError, match="standing_s"):
        find_stall(Scripted(go=40), env, standing_s=-1.0)


@pytest.mark.slow
def test_stall_probe_tool_drives_the_lap_on_the_stand_in():
    """``tools/stall_probe.py --simulator standin`` drives the lap through ``S3BeamNG-v0``.

    The shipped ``ddm`` stands before a 90-degree ice corner of town:71's transition lap in the
    stand-in (round 20); the probe names the stand-in and the standing step (or, for a policy
    that no longer stalls there, says it never stood).
    """
    import os
    import subprocess
    import sys
    from pathlib import Path

    tool = Path(__file__).resolve().parents[2] / "tools" / "stall_probe.py"
    out = subprocess.run(
        [sys.executable, str(tool), "ddm", "--track", "town:71", "--surface", "asphalt>ice",
         "--simulator", "standin"],
        capture_output=True, text=True, timeout=600, env={**os.environ, "COLUMNS": "200"},
    )  # fmt: skip
    assert out.returncode in (0, 1), out.stderr
    assert "S3BeamNG-v0 (open stand-in)" in out.stdout
    assert ("standing at step" in out.stdout) == (out.returncode == 0)
