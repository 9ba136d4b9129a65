"""``s3 collect`` / ``python -m wheel_collector``: help, an expert run, errors, and SIGKILL."""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import torch

from gym_s3.data.dataset import DrivingDataset
from gym_s3.data.recorder import JOURNAL_SUFFIX, read_journal, recover
from wheel_collector import cli

pytestmark = pytest.mark.timeout(180)
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _restore_torch_threads() -> Iterator[None]:
    """Undo ``torch.set_num_threads`` calls of the code under test (process-global state)."""
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def test_module_help_lists_options_with_units() -> None:
    """`python -m wheel_collector --help` works and documents devices and units."""
    out = subprocess.run([sys.executable, "-m", "wheel_collector", "--help"], cwd=REPO,
                         capture_output=True, text=True, check=True).stdout  # fmt: skip
    for text in ("--device", "--calibrate", "--standin", "--ice-patches", "[s]", "[m]"):
        assert text in out


def test_registered_as_s3_collect(capsys: pytest.CaptureFixture[str]) -> None:
    """`register` adds `collect` to an `s3`-style parser with the same options."""
    parser = argparse.ArgumentParser(prog="s3")
    cli.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["collect", "--device", "expert", "--standin"])
    assert args.func is cli.run_collect and args.device == "expert" and args.standin
    with pytest.raises(SystemExit):
        parser.parse_args(["collect", "--device", "joystick"])
    assert "invalid choice" in capsys.readouterr().err


def test_expert_run_writes_episodes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An expert session on the stand-in writes valid episodes and reports them."""
    argv = ["--standin", "--device", "expert", "--duration", "1.5", "--episode-length", "1",
            "--surface", "snow", "--out", str(tmp_path), "--no-hud"]  # fmt: skip
    assert cli.main(argv) == 0
    assert "30 steps, 30 rows recorded in 2 episodes" in capsys.readouterr().out
    ds = DrivingDataset.load(tmp_path)
    assert [e.num_rows for e in ds.episodes] == [20, 10]
    assert {e.meta.base_surface for e in ds.episodes} == {"snow"}


def test_bad_input_exits_with_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An unknown surface ends with exit code 2 and the list of valid surfaces."""
    assert cli.main(["--standin", "--device", "expert", "--surface", "lava",
                     "--out", str(tmp_path)]) == 2  # fmt: skip
    err = capsys.readouterr().err
    assert "unknown surface 'lava'" in err and "asphalt" in err


@pytest.mark.slow
def test_sigkill_during_a_session(tmp_path: Path) -> None:
    """A collecting process killed with SIGKILL leaves a journal that recovers every durable row.

    The journal is watched until at least 40 rows are durable, the process is killed, and the
    recovered episode holds at least those rows, as one continuous 20 Hz drive.
    """
    cmd = [sys.executable, "-m", "wheel_collector", "--standin", "--device", "expert",
           "--duration", "600", "--episode-length", "600", "--out", str(tmp_path), "--no-hud",
           "--session-id", "killed"]  # fmt: skip
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env={**os.environ, "OMP_NUM_THREADS": "1"})  # fmt: skip
    journal = tmp_path / ("killed__e000" + JOURNAL_SUFFIX)
    durable = 0
    deadline = time.monotonic() + 120
    try:
        while durable < 40 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
            if journal.exists():
                durable = len(read_journal(journal)[0]["t"])
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert durable >= 40, proc.stderr.read().decode() if proc.stderr else ""
    (result,) = recover(tmp_path)
    ds = DrivingDataset.load(tmp_path)
    assert result.rows == ds.num_samples >= durable
    np.testing.assert_allclose(np.diff(ds.columns["t"].numpy()), 0.05, atol=1e-6)
    assert ds.episodes[0].meta.extra["recovered"] is True


def test_wheel_without_a_wheel_fails_at_once(
    pg, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--device wheel` with no wheel: exit 2 within seconds, naming the fix, nothing recorded."""
    argv = ["--standin", "--device", "wheel", "--duration", "300", "--out", str(tmp_path),
            "--no-hud"]  # fmt: skip
    start = time.monotonic()
    assert cli.main(argv) == 2
    assert time.monotonic() - start < 10.0, "it must not drive 300 s on safe controls"
    err = capsys.readouterr().err
    assert "SDL sees no joysticks" in err and "--device keyboard" in err
    assert not any(tmp_path.iterdir())


def test_wheel_filter_lists_the_joysticks_sdl_sees(
    g29, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A `--wheel` filter that matches nothing lists the devices that are there."""
    argv = ["--standin", "--device", "wheel", "--wheel", "Fanatec", "--out", str(tmp_path),
            "--no-hud"]  # fmt: skip
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert "matching 'Fanatec'" in err and "SDL sees 1 joystick(s)" in err
    assert "Logitech G29" in err and "--device keyboard" in err
