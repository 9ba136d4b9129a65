"""Collective helpers in one process: they return the local statistics of the data."""

from __future__ import annotations

import json

import pytest
import torch

from gym_s3 import distributed
from gym_s3.distributed import DistContext

ONE = DistContext()


def test_global_moments_are_the_moments_of_the_finite_rows() -> None:
    """Count, mean and population variance over the finite rows of a ``(B, T, F)`` batch."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(4, 25, 3, generator=g) * torch.tensor([1.0, 10.0, 0.1]) + 5.0
    x[1, 3, 2] = float("inf")
    n, mean, var = distributed.global_moments(x, ONE)
    rows = x.reshape(-1, 3).double()
    rows = rows[torch.isfinite(rows).all(-1)]
    assert n == 99 and mean.dtype == torch.float64
    torch.testing.assert_close(mean, rows.mean(0))
    torch.testing.assert_close(var, rows.var(0, unbiased=False))


def test_global_moments_of_no_finite_rows_are_empty() -> None:
    """An all-NaN batch has count 0 (the normaliser then skips it)."""
    n, mean, var = distributed.global_moments(torch.full((5, 2), float("nan")), ONE)
    assert n == 0 and mean.tolist() == [0.0, 0.0] and var.tolist() == [0.0, 0.0]


def test_global_mean_std_matches_torch_mean_and_unbiased_std() -> None:
    """The advantage statistics equal ``Tensor.mean()`` and Bessel-corrected ``Tensor.std()``."""
    adv = torch.randn(64, 1, generator=torch.Generator().manual_seed(1)) * 3 - 1
    mean, std = distributed.global_mean_std(adv, ONE)
    torch.testing.assert_close(mean, adv.mean())
    torch.testing.assert_close(std, adv.std())


def test_weighted_means_skip_keys_without_weight() -> None:
    """``(value, weight)`` pairs give the value back; a key of weight 0 is left out."""
    out = distributed.weighted_means({"a": (2.5, 3.0), "b": (7.0, 0.0)}, ONE)
    assert out == {"a": 2.5}


def test_single_process_helpers_are_identities() -> None:
    """One process: the stop flag, the skip vote and the shard are the local ones."""
    assert distributed.agree(True, ONE) and not distributed.agree(False, ONE)
    assert distributed.all_true(True, ONE) and not distributed.all_true(False, ONE)
    idx = torch.arange(10)
    assert torch.equal(distributed.shard(idx, ONE), idx)
    module = torch.nn.Linear(2, 1)
    assert distributed.wrap(module, ONE) is module
    distributed.barrier(ONE)


def test_shards_of_ranks_are_disjoint_and_cover_the_order() -> None:
    """The strided shards of 3 ranks partition a shuffled order."""
    order = torch.randperm(100, generator=torch.Generator().manual_seed(2))
    parts = [distributed.shard(order, DistContext(r, r, 3, "gloo")) for r in range(3)]
    assert sorted(torch.cat(parts).tolist()) == list(range(100))
    assert [len(p) for p in parts] == [34, 33, 33]


@pytest.mark.timeout(300)
def test_collectives_combine_the_ranks_values(job):
    """Two ranks: the collectives combine both ranks' values.

    Weighted means pool both ranks (keys given in different orders), rank 0's flag wins
    ``agree``, and ``all_true`` is false when one rank says no.
    """
    for rank in (0, 1):
        out = json.loads((job.results / f"collectives_rank{rank}.json").read_text())
        assert out["means"] == pytest.approx({"a": 1.0, "b": (10.0 * 2 + 20.0) / 3})
        assert out["agree"] is True and out["all_true"] is False
