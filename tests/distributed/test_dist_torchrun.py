"""``s3 train`` and ``s3 distill train`` run unchanged under ``torchrun`` (two CPU processes)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torchrl")


def _torchrun(*args: str, timeout_s: float = 240.0) -> subprocess.CompletedProcess:
    """``torchrun --standalone --nproc-per-node 2 <args>`` with one thread per process."""
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node",
           "2", *args]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
    return proc


@pytest.mark.slow  # ~13 s; the two-rank gloo job of the other distributed tests stays
@pytest.mark.timeout(300)
def test_s3_train_under_torchrun_makes_a_policy_that_evaluates_in_one_process(tmp_path: Path):
    """``torchrun -m gym_s3.cli train --preset tiny``: one report, one job-wide checkpoint.

    Only rank 0 prints; it reports the effective batch of 2 x 1024 frames; the checkpoint
    records the two-process job and drives a single-process evaluation with finite metrics.
    """
    from policies.checkpoint import load_policy
    from policies.evaluate_distilled import evaluate_distilled

    out = tmp_path / "run"
    proc = _torchrun("-m", "gym_s3.cli", "train", "--preset", "tiny", "--out", str(out),
                     "--no-progress", "--dist-timeout", "120")  # fmt: skip
    assert proc.stdout.count("policy: ") == 1
    assert "2 processes, effective batch 2048 frames (1024 per process)" in proc.stdout
    summary = json.loads((out / "train_summary.json").read_text())
    assert summary["frames"] == 4096 and summary["effective_batch"] == 2048
    policy = load_policy(out / "policy_final")
    assert policy.meta["training"]["distributed"]["world_size"] == 2
    metrics = evaluate_distilled(policy.act, num_envs=4, backend="bicycle", tracks=("putnam",),
                                 max_episode_steps=20)  # fmt: skip
    assert metrics["steps"] > 0 and all(math.isfinite(v) for v in metrics.values())


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_s3_distill_train_under_torchrun_writes_a_loadable_backend(tmp_path, dist_dataset):
    """``torchrun -m gym_s3.distill train --backend bicycle``: one checkpoint that loads.

    The checkpoint records the two-process job (effective batch 2 x 64 windows) and the
    loaded backend steps a batch of cars to finite states.
    """
    import torch

    from gym_s3.dynamics import load

    out = tmp_path / "ckpt"
    proc = _torchrun("-m", "gym_s3.distill", "train", "--backend", "bicycle", "--dataset",
                     str(dist_dataset), "--out", str(out), "--epochs", "2", "--batch-size", "64",
                     "--batches-per-epoch", "5", "--no-progress")  # fmt: skip
    assert proc.stdout.count("bicycle: ") == 1
    model = load(out / "bicycle")
    dist = model.checkpoint_meta["training"]["distributed"]
    assert dist == {"world_size": 2, "backend": "gloo", "effective_batch_size": 128}
    state = model.initial_state(torch.zeros(3, 3), torch.full((3,), 10.0), torch.ones(3, 4))
    nxt = model.step(state, torch.tensor([[0.1, 0.3]] * 3), torch.ones(3, 4))
    assert torch.isfinite(nxt.vel).all()
