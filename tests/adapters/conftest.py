"""Shared settings of the RL-library adapter tests."""

from __future__ import annotations

import pytest
import torch

#: Putnam Park with two surface layouts (the pool is cached in-process).
SMALL: dict = {"tracks": ("putnam",), "layouts_per_track": 2}


@pytest.fixture(autouse=True)
def _one_torch_thread():
    """Run on one intra-op thread (small batches; a busy 2-core box slows OpenMP's peer)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def small_kwargs() -> dict:
    """Keyword arguments of a small env (one track, two layouts)."""
    return dict(SMALL)
