"""Shared settings of the RL-library adapter tests."""

from __future__ import annotations

import pytest
from torch_helpers import SMALL, one_torch_thread


@pytest.fixture(autouse=True)
def _one_torch_thread():
    """Run on one intra-op thread (small batches; a busy 2-core box slows OpenMP's peer)."""
    with one_torch_thread():
        yield


@pytest.fixture
def small_kwargs() -> dict:
    """Keyword arguments of a small env (one track, two layouts)."""
    return dict(SMALL)
