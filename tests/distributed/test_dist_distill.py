"""Data-parallel distillation on two gloo processes: shards, identical weights, rank-0 files."""

from __future__ import annotations

import json

import pytest
import torch
from dist_workers import DISTILL_SETTINGS, windows
from safetensors.torch import load_file

from gym_s3.distill.train import TrainConfig, train
from gym_s3.dynamics import make

pytestmark = pytest.mark.timeout(300)


def _info(job, rank: int) -> dict:
    """What rank ``rank`` recorded of its distillation run."""
    return json.loads((job.results / f"distill_rank{rank}.json").read_text())


def test_ranks_hold_identical_weights_and_losses_after_distillation(job):
    """Two ranks end a ``ddm`` distillation with bit-identical weights and per-epoch losses."""
    s0, s1 = (load_file(job.results / f"distill_rank{r}.safetensors") for r in (0, 1))
    assert s0.keys() == s1.keys()
    for key in s0:
        assert torch.equal(s0[key], s1[key]), key
    e0, e1 = _info(job, 0)["epochs"], _info(job, 1)["epochs"]
    assert len(e0) == 3
    for r0, r1 in zip(e0, e1, strict=True):
        assert r0["val_loss"] == r1["val_loss"] and r0["train_loss"] == r1["train_loss"]


def test_two_ranks_of_batch_32_train_like_one_process_of_batch_64(job, dist_dataset):
    """Data-parallel distillation equals single-process distillation on the concatenated batches.

    The ranks' shards of each update together are the windows of the same update of one process
    with twice the batch, and DDP averages the two half-batch gradients; so after 16 Adam steps
    the weights and every epoch's validation loss match that run to float rounding.
    """
    tr, va, stats = windows(dist_dataset, horizon=2)
    torch.manual_seed(0)
    model = make("ddm")
    ref = train(model, tr, va, stats, TrainConfig(**DISTILL_SETTINGS, batch_size=64))
    weights = load_file(job.results / "distill_rank0.safetensors")
    for key, value in model.state_dict().items():
        torch.testing.assert_close(weights[f"m0.{key}"], value, rtol=1e-4, atol=1e-6, msg=key)
    job_rows = _info(job, 0)["epochs"]
    assert [r["val_loss"] for r in job_rows] == pytest.approx(
        [r["val_loss"] for r in ref.epochs], rel=1e-4
    )
    assert job_rows[1]["val_loss"] != pytest.approx(job_rows[0]["val_loss"], rel=1e-3)  # moved


def test_every_epoch_shards_the_windows_disjointly_across_ranks(job):
    """Within an epoch the ranks draw disjoint windows (the DistributedSampler split).

    Together they make one pass over the training windows, ``batch_size x 2`` per update.
    """
    i0, i1 = _info(job, 0), _info(job, 1)
    per_epoch = i0["len"] // (32 * 2)
    assert len(i0["drawn"]) == len(i1["drawn"]) == 2 * per_epoch
    for epoch in range(2):
        part = slice(epoch * per_epoch, (epoch + 1) * per_epoch)
        a = {i for batch in i0["drawn"][part] for i in batch}
        b = {i for batch in i1["drawn"][part] for i in batch}
        assert len(a) == len(b) == per_epoch * 32
        assert not a & b
        assert max(a | b) < i0["len"]


def test_recipes_write_checkpoints_once_and_every_rank_sees_them(job):
    """``recipes.run`` under two ranks: one checkpoint, visible to every rank on return.

    The CSV log has one row per epoch, the checkpoint records the job (2 ranks, effective batch
    512), and when ``run`` returns the file rank 0 wrote exists for both ranks (they waited).
    """
    for rank in (0, 1):
        exists = json.loads((job.results / f"recipes_rank{rank}.json").read_text())
        assert exists == {"bicycle": True}
    meta = json.loads((job.results / "recipes" / "bicycle.json").read_text())
    text = json.dumps(meta)
    assert '"world_size": 2' in text and '"effective_batch_size": 512' in text
    rows = (job.results / "distill.csv").read_text().strip().splitlines()
    assert len(rows) == 1 + 3
