"""Interruptions (issue 23): full disks, interrupted generation and distillation, reused outputs.

* ``s3 data generate`` on a disk that fills up after two episodes exits 2 naming the file it
  could not write, and ``s3 data validate`` calls the folder a partial dataset;
* ``s3 distill train`` interrupted after epoch 3 leaves a loadable best-so-far checkpoint, and
  the same command run again continues at epoch 4 and ends with exactly the weights and log of
  an uninterrupted run;
* ``s3 train`` into a folder holding a run is refused (nothing changed) unless ``--overwrite``;
* ``s3 collect`` stopped with SIGTERM (a service stop) exits 143 and saves its episode, leaving
  no journal (slow: the stand-in starts in a child process).
"""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from badinput_support import REPO, CliExit, run_cli

from gym_s3 import checkpoints, dynamics
from gym_s3.data.dataset import INCOMPLETE_NAME
from gym_s3.data.files import read_episode
from gym_s3.data.generate import generate_dataset, preset
from gym_s3.data.journal import JOURNAL_SUFFIX
from gym_s3.distill import train as train_module

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def small_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny generated dataset of 8 sessions of 4 s."""
    out = tmp_path_factory.mktemp("small") / "data"
    generate_dataset(out, preset("tiny", cars=8, episode_s=4.0), seed=0, preset_name="tiny")
    return out


def test_full_disk_during_generate_names_the_file_and_marks_the_dataset_partial(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The third episode cannot be written: exit 2 naming it; validate reports a partial set."""
    import pyarrow.parquet as pq

    real_write, calls = pq.write_table, []

    def fill_up(table, where, **kwargs):  # noqa: ANN001, ANN003
        calls.append(where)
        if len(calls) > 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(table, where, **kwargs)

    monkeypatch.setattr(pq, "write_table", fill_up)
    out = tmp_path / "data"
    with pytest.raises(CliExit) as info:
        run_cli(["data", "generate", "--out", str(out), "--preset", "tiny", "--no-progress"])
    assert info.value.code == 2
    assert "No space left on device" in info.value.stderr
    assert str(Path(calls[2]).with_suffix("")) in info.value.stderr  # the episode file's path
    monkeypatch.undo()
    assert (out / INCOMPLETE_NAME).exists() and len(list(out.glob("*.parquet"))) == 2
    with pytest.raises(CliExit) as info:
        run_cli(["data", "validate", str(out)])
    assert "partial dataset" in info.value.stderr and "generate it again" in info.value.stderr


def _distill(dataset: Path, out: Path) -> None:
    """``s3 distill train --backend ddm`` for 5 epochs of 4 batches."""
    run_cli(["distill", "train", "--backend", "ddm", "--dataset", str(dataset), "--out", str(out),
             "--epochs", "5", "--batches-per-epoch", "4", "--batch-size", "16", "--patience",
             "100", "--no-progress"])  # fmt: skip


def test_interrupted_distillation_keeps_the_best_and_resumes_exactly(
    small_dataset: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C after epoch 3, rerun: same weights and log as without the interruption."""
    _distill(small_dataset, tmp_path / "straight")
    reference = checkpoints.load(tmp_path / "straight" / "ddm")

    real_save = train_module.save_state

    def interrupt_after_epoch_3(stem, fingerprint, state, *args):  # noqa: ANN001, ANN002
        real_save(stem, fingerprint, state, *args)
        if state.epoch == 3:
            raise KeyboardInterrupt

    monkeypatch.setattr(train_module, "save_state", interrupt_after_epoch_3)
    out = tmp_path / "interrupted"
    with pytest.raises(CliExit) as info:
        _distill(small_dataset, out)
    assert info.value.code == 130
    assert not (out / "ddm.json").exists()
    best = dynamics.load(out / "ddm.best")  # loadable best-so-far weights
    assert 1 <= best.checkpoint_meta["training"]["best_epoch"] <= 3
    monkeypatch.undo()

    trained_again: list[int] = []

    def record(stem, fingerprint, state, *args):  # noqa: ANN001, ANN002
        trained_again.append(state.epoch)
        real_save(stem, fingerprint, state, *args)

    monkeypatch.setattr(train_module, "save_state", record)
    _distill(small_dataset, out)
    assert trained_again == [4, 5]  # continued, not restarted
    resumed = checkpoints.load(out / "ddm")
    assert resumed.tensors.keys() == reference.tensors.keys()
    for name, tensor in reference.tensors.items():
        assert torch.equal(resumed.tensors[name], tensor), name
    epochs = [row["epoch"] for row in resumed.meta["training"]["epochs"]]
    assert epochs == [0, 1, 2, 3, 4, 5]
    assert not list(out.glob("ddm.best.*")) and not list(out.glob("ddm.resume.*"))


def test_train_refuses_an_out_folder_holding_a_run(tmp_path: Path) -> None:
    """A second ``s3 train`` into the same --out is refused unless --overwrite."""
    out = tmp_path / "run"
    (out / "logs").mkdir(parents=True)
    (out / "train_summary.json").write_text("{}")
    (out / "notes.txt").write_text("mine\n")
    with pytest.raises(CliExit) as info:
        run_cli(["train", "--preset", "tiny", "--out", str(out), "--no-progress",
                 "--total-frames", "1"])  # fmt: skip
    assert info.value.code == 2 and "already holds a training run" in info.value.stderr
    assert "--overwrite" in info.value.stderr
    assert (out / "train_summary.json").read_text() == "{}"
    from policies.cli import _claim_out

    _claim_out(out, overwrite=True)
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]


@pytest.mark.slow
def test_sigterm_stops_collect_like_ctrl_c(tmp_path: Path) -> None:
    """``s3 collect`` stopped with SIGTERM saves its episode: exit 143, no journal left."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "gym_s3.cli", "collect", "--device", "expert", "--standin",
         "--out", str(tmp_path), "--duration", "600", "--no-hud"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not any(p.stat().st_size > 4096 for p in tmp_path.glob("*" + JOURNAL_SUFFIX)):
            assert proc.poll() is None and time.monotonic() < deadline, "no journal appeared"
            time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "interrupted (SIGTERM)" in err
    assert not list(tmp_path.glob("*" + JOURNAL_SUFFIX))
    (episode,) = tmp_path.glob("*.parquet")
    columns, meta = read_episode(episode)
    assert len(columns["t"]) > 0 and "recovered" not in meta.extra
