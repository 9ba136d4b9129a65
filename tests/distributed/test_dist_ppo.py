"""Data-parallel PPO on two gloo processes: gradients, normaliser, parameters, checkpoints."""

from __future__ import annotations

import json
import math

import pytest
import torch
from safetensors.torch import load_file

pytest.importorskip("torchrl")

from policies.checkpoint import load_policy  # noqa: E402
from policies.config import preset  # noqa: E402
from policies.evaluate_distilled import evaluate_distilled  # noqa: E402
from policies.networks import RunningNorm  # noqa: E402

pytestmark = pytest.mark.timeout(300)


def _split(tensors: dict[str, torch.Tensor], prefix: str) -> dict[str, torch.Tensor]:
    """The tensors whose name starts with ``prefix``, without it."""
    return {k[len(prefix) :]: v for k, v in tensors.items() if k.startswith(prefix)}


def test_averaged_gradient_equals_single_process_gradient_on_the_concatenated_minibatch(job):
    """DDP's gradient from half a minibatch per rank equals one process's on the whole minibatch.

    The job standardises the advantage with job-wide statistics and DDP averages the gradients;
    the reference is the single-process ``ClipPPOLoss`` (its own per-minibatch standardisation)
    on the concatenation of both halves. Both ranks must hold the same averaged gradient. The
    entropy bonus is off: its Monte-Carlo estimate draws different samples per split.
    """
    grads = [load_file(job.results / f"grads_rank{r}.safetensors") for r in (0, 1)]
    for g in grads:
        dist, ref = _split(g, "dist."), _split(g, "ref.")
        assert dist.keys() == ref.keys() and len(dist) >= 6
        assert max(float(v.abs().max()) for v in ref.values()) > 1e-3  # a real gradient
        for key in ref:
            torch.testing.assert_close(dist[key], ref[key], rtol=1e-4, atol=1e-6, msg=key)
    for key in _split(grads[0], "dist."):
        assert torch.equal(grads[0][f"dist.{key}"], grads[1][f"dist.{key}"]), key


def test_normaliser_merges_the_moments_of_every_rank(job):
    """Each rank's normaliser equals one updated in one process with both ranks' observations.

    Both start from the same statistics; rank 0 and rank 1 then merge differently distributed
    batches (a few rows non-finite, which are skipped) through the job-wide moments.
    """
    n0, n1 = (load_file(job.results / f"norm_rank{r}.safetensors") for r in (0, 1))
    assert not torch.equal(n0["mine"], n1["mine"])
    ref = RunningNorm(38)
    ref.update(n0["common"])
    ref.update(torch.cat([n0["mine"], n1["mine"]]))
    assert ref.count.item() == 50 + 2 * 4 * 64 - 2 * 3  # 3 non-finite rows per rank
    for n in (n0, n1):
        assert n["m0.count"].item() == ref.count.item()
        torch.testing.assert_close(n["m0.mean"], ref.mean, rtol=1e-10, atol=1e-12)
        torch.testing.assert_close(n["m0.var"], ref.var, rtol=1e-10, atol=1e-12)


def test_ranks_hold_identical_parameters_after_several_ppo_updates(job):
    """Both ranks end the two-process ``tiny`` run with identical networks.

    After 8 Adam steps per rank, actor, critic and normaliser are bit-identical on both ranks,
    the weights moved, and the normaliser saw every frame of the job.
    """
    s0, s1 = (load_file(job.results / f"ppo_rank{r}.safetensors") for r in (0, 1))
    assert s0.keys() == s1.keys()
    for key in s0:
        assert torch.equal(s0[key], s1[key]), key
    init = preset("tiny").init_log_std
    assert not torch.allclose(s0["m0.log_std"], torch.full_like(s0["m0.log_std"], init))
    info = json.loads((job.results / "ppo_rank0.json").read_text())
    assert s0["m0.norm.count"].item() == info["frames"]


def test_a_privileged_critic_keeps_both_normalisers_identical_across_ranks(job):
    """``privileged_critic``: both normalisers merge every rank's frames, ranks end identical.

    The critic's own normaliser has the 4 friction features more than the actor's.
    """
    s0, s1 = (load_file(job.results / f"ppo_privileged_rank{r}.safetensors") for r in (0, 1))
    assert s0.keys() == s1.keys()
    for key in s0:
        assert torch.equal(s0[key], s1[key]), key
    frames = preset("tiny").total_frames
    assert s0["m0.norm.count"].item() == frames and s0["m1.norm.count"].item() == frames
    assert s0["m1.norm.mean"].shape[0] == s0["m0.norm.mean"].shape[0] + 4


def test_run_counts_the_frames_of_all_ranks_and_reports_the_effective_batch(job):
    """``total_frames`` counts the job; the effective batch is reported.

    2 ranks x 2 iterations x 1024 frames; the effective batch (2048) is in the result, the
    summary and the log rows, and both ranks log the same job-wide means.
    """
    cfg = preset("tiny")
    i0, i1 = (json.loads((job.results / f"ppo_rank{r}.json").read_text()) for r in (0, 1))
    assert i0["frames"] == cfg.total_frames and i0["iterations"] == 2
    assert i0["world_size"] == 2 and i0["effective_batch"] == 2 * cfg.frames_per_batch
    summary = json.loads((job.results / "ppo" / "train_summary.json").read_text())
    assert summary["effective_batch"] == 2048 and summary["world_size"] == 2
    for r0, r1 in zip(i0["history"], i1["history"], strict=True):
        assert r0["effective_batch"] == 2048
        for key in ("reward_mean", "loss_objective", "loss_critic", "done_rate"):
            assert r0[key] == pytest.approx(r1[key], rel=1e-12), key


def test_checkpoint_of_the_two_process_run_loads_and_drives_in_one_process(job):
    """The two-process run's checkpoint loads and drives in a single process.

    Rank 0's final checkpoint loads with ``load_policy`` into rank 0's weights, records the job,
    and runs a single-process evaluation in ``S3Distilled-v0`` with finite metrics.
    """
    info = json.loads((job.results / "ppo_rank0.json").read_text())
    policy = load_policy(info["checkpoint"])
    weights = _split(load_file(job.results / "ppo_rank0.safetensors"), "m0.")
    for key, value in policy.actor.state_dict().items():
        assert torch.equal(value, weights[key]), key
    assert policy.meta["training"]["distributed"] == {"world_size": 2, "backend": "gloo",
                                                      "effective_batch": 2048}  # fmt: skip
    metrics = evaluate_distilled(policy.act, num_envs=4, backend="bicycle", tracks=("putnam",),
                                 max_episode_steps=20)  # fmt: skip
    assert metrics["steps"] > 0 and all(math.isfinite(v) for v in metrics.values())


def test_time_budget_stops_every_rank_after_the_same_iteration(job):
    """A spent time budget (rank 0's decision, broadcast) ends both ranks after iteration 1."""
    for rank in (0, 1):
        info = json.loads((job.results / f"ppo_rank{rank}.json").read_text())
        assert info["budget_iterations"] == 1
