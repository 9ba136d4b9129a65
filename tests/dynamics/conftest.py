"""Fixtures of the dynamics tests: single-threaded runs, every backend."""

from __future__ import annotations

import pytest
import torch
from dynamics_helpers import BACKENDS, LEARNED, build

from gym_s3.dynamics import DynamicsBackend


@pytest.fixture(autouse=True)
def _one_thread():
    """Run single-threaded (restored afterwards).

    These tensors are small, and on a shared CPU the OpenMP hand-offs between threads cost far more
    than the arithmetic: this suite took 5x longer with 2 threads on the loaded 2-core machine.
    """
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> DynamicsBackend:
    """Each registered backend (seeded, eval mode)."""
    return build(request.param)


@pytest.fixture(params=LEARNED)
def learned(request: pytest.FixtureRequest) -> DynamicsBackend:
    """Each learned backend (seeded, eval mode)."""
    return build(request.param)
