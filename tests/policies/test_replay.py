"""Replaying a lap's actions open loop (policies/replay.py, tools/replay_lap.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gym_s3.errors import CheckpointError, ConfigError
from gym_s3.tracks.lap_layouts import lap_layout
from gym_s3.tracks.registry import cached_track
from policies.checkpoint import load_policy, shipped_policy
from policies.evaluate import RunResult, run_episode
from policies.evaluate_distilled import distilled_lap_env
from policies.replay import ActionReplay, LapReplay, ModelReplay, replay_lap, replay_rows

TRACK = "procedural:201"


def _lap_env(surface: str = "asphalt"):
    layout = lap_layout(cached_track(TRACK), surface, 0, 0)
    return distilled_lap_env(TRACK, layout, backend="ddm", obs_mode="default", seed=0)


def test_replaying_a_lap_in_the_same_env_drives_it_again_step_for_step():
    """The replay applies action k at step k: in the env that recorded them, the same lap."""
    policy = load_policy(shipped_policy("ddm"))
    env = _lap_env()
    driven = run_episode(env, policy, env_name="d", condition={}, seed=0, max_steps=80)
    # the policy's pedal and steering change from step to step, so a shifted replay would show
    assert np.abs(np.diff(driven.actions, axis=0)).max() > 1e-3
    replayed = run_episode(env, ActionReplay(driven.actions), env_name="r", condition={}, seed=0,
                           max_steps=80)  # fmt: skip
    env.close()
    np.testing.assert_allclose(replayed.actions, driven.actions, atol=1e-6)
    np.testing.assert_allclose(replayed.speed, driven.speed, atol=1e-5)
    np.testing.assert_allclose(replayed.trajectory, driven.trajectory, atol=1e-4)
    np.testing.assert_allclose(replayed.cte, driven.cte, atol=1e-5)


def test_a_replay_holds_its_last_action_and_rewinds_at_each_start():
    """Past the recording the last action is held; ``start`` goes back to the first one."""
    replay = ActionReplay(np.array([[0.1, 0.5], [-0.2, -0.4]]))
    obs = np.zeros((3, 38), dtype=np.float32)
    first, second, third = (replay.act(obs) for _ in range(3))
    assert first.shape == (3, 2) and np.allclose(first, [0.1, 0.5])
    assert np.allclose(second, [-0.2, -0.4]) and np.allclose(third, [-0.2, -0.4])
    replay.start(None)
    assert np.allclose(replay.act(obs), [0.1, 0.5])


@pytest.mark.parametrize("actions", [np.zeros((0, 2)), np.zeros((4, 3)), np.zeros(4)])
def test_a_replay_refuses_a_sequence_that_is_not_t_by_2(actions):
    """A replay needs ``(T, 2)`` actions with ``T >= 1``; the error says which shape it got."""
    with pytest.raises(ConfigError, match=r"\(T, 2\) action sequence"):
        ActionReplay(actions)


def test_the_ddm_model_replays_a_dry_standing_start_of_the_high_fidelity_car():
    """The ddm model, given the stand-in lap's actions, accelerates the car from rest as it did.

    On dry asphalt, within 15 % after 3 s; and the policy's first closed-loop action there is the
    one it took in the high-fidelity lap.
    """
    policy = load_policy(shipped_policy("ddm"))
    lap = replay_lap(policy, track=TRACK, surface="asphalt", models=["ddm"], max_steps=60,
                     extra_s=0.0, fast=False)  # fmt: skip
    (drive,) = lap.models
    assert len(lap.highfi.actions) == 60 and len(drive.replay.actions) == 60
    np.testing.assert_allclose(drive.replay.actions, lap.highfi.actions, atol=1e-6)
    assert lap.highfi.speed[-1] > 3.0  # the car got going: a real standing start
    assert drive.replay.speed[-1] == pytest.approx(lap.highfi.speed[-1], rel=0.15)
    np.testing.assert_allclose(drive.closed_loop.actions[0], lap.highfi.actions[0], atol=0.05)
    with pytest.raises(ConfigError, match="every_s"):
        replay_rows(lap, drive, every_s=0.0)


def _run(speed: list[float]) -> RunResult:
    """A drive whose step ``k`` ends at speed ``speed[k]`` (action ``[k / 10, -k / 10]``)."""
    k = np.arange(len(speed), dtype=float)
    n = len(speed)
    return RunResult(env="e", condition={}, metrics={}, terminated_by="off_track",
                     trajectory=np.zeros((n, 2)), cte=k / 100, s=k, speed=np.array(speed),
                     target=np.zeros(n), actions=np.stack([k / 10, -k / 10], axis=1))  # fmt: skip


def test_replay_rows_line_up_by_step_and_leave_ended_drives_blank():
    """Row k pairs step k of every drive at t = (k + 1) 50 ms; ended drives give None."""
    highfi, replay, closed = _run([1.0, 2.0, 3.0, 4.0]), _run([1.5, 2.5]), _run([0.5] * 6)
    lap = LapReplay(highfi, (ModelReplay("m", replay, closed),))
    rows = replay_rows(lap, lap.models[0], every_s=0.1)  # every second step
    assert [r["t"] for r in rows] == pytest.approx([0.05, 0.15, 0.25])
    assert [r["v_highfi"] for r in rows] == [1.0, 3.0, None]
    assert [r["v_replay"] for r in rows] == [1.5, None, None]
    assert [r["v_closed"] for r in rows] == [0.5, 0.5, 0.5]
    assert rows[1]["accel_highfi"] == pytest.approx(-0.2) and rows[1]["steer_highfi"] == 0.2
    assert rows[2]["s_closed"] == 4.0 and rows[2]["cte_replay"] is None


def test_replay_lap_refuses_bad_input_before_driving_and_names_shipped_models():
    """Bad input is refused before any lap is driven; shipped sets keep their names.

    A step cap below 1 and another backend's model are refused first; a shipped set is expanded
    and its models are named by their shipped names.
    """
    policy = load_policy(shipped_policy("ddm"))
    with pytest.raises(ConfigError, match="max_steps"):
        replay_lap(policy, track=TRACK, surface="asphalt", max_steps=0)
    with pytest.raises(CheckpointError, match="holds a 'trans' backend"):
        replay_lap(policy, track=TRACK, surface="asphalt", models=["trans"], max_steps=5)
    lap = replay_lap(policy, track=TRACK, surface="asphalt", models=["ddm:ice"], max_steps=5,
                     extra_s=0.0, fast=False)  # fmt: skip
    assert [m.model for m in lap.models] == ["ddm:ice/s0", "ddm:ice/s1", "ddm:ice/s2"]


def test_replay_lap_tool_prints_the_traces_and_writes_json(tmp_path):
    """``tools/replay_lap.py`` prints a table per model and writes the same rows with ``--out``."""
    tool = Path(__file__).resolve().parents[2] / "tools" / "replay_lap.py"
    out = tmp_path / "replay.json"
    run = subprocess.run(
        [sys.executable, str(tool), "ddm", "--track", TRACK, "--surface", "asphalt",
         "--models", "ddm", "--max-steps", "30", "--out", str(out)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "S3Distilled-v0 model ddm" in run.stdout and "wrote" in run.stdout
    report = json.loads(out.read_text())
    assert report["models"][0]["model"] == "ddm" and len(report["models"][0]["rows"]) >= 2
    bad = subprocess.run([sys.executable, str(tool), "ddm", "--track", "nowhere:1"],
                         capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
    assert bad.returncode == 2 and "nowhere" in bad.stderr
