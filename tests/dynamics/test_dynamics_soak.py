"""The acceptance soak: 10^6 batched steps from random valid states and actions, no non-finite."""

from __future__ import annotations

import pytest
import torch
from dynamics_helpers import BACKENDS, random_rows

from gym_s3.dynamics import load, state_from_window


@pytest.mark.slow
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("name", BACKENDS)
def test_million_random_steps_stay_finite(name: str) -> None:
    """The shipped backend stepped 4096 cars x 245 steps (> 10^6) stays finite everywhere.

    Random valid start windows, actions in [-1, 1] and friction in [0.05, 1.2]; cars that run away
    are frozen and flagged by the guard (reported, not failed).
    """
    backend = load(name)
    n, steps = 4096, 245
    g = torch.Generator().manual_seed(11)
    rows = random_rows(n, backend.history_length + 1, 12)
    state = state_from_window(backend, rows, torch.zeros(n, 3))
    flagged = torch.zeros(n, dtype=torch.bool)
    with torch.inference_mode():
        for _ in range(steps):
            action = 2.0 * torch.rand(n, 2, generator=g) - 1.0
            mu = 0.05 + 1.15 * torch.rand(n, 4, generator=g)
            state = backend.step(state, action, mu)
            assert torch.isfinite(state.pose).all() and torch.isfinite(state.vel).all()
            assert all(torch.isfinite(v).all() for v in state.extra.values())
            flagged |= state.fault
    assert n * steps >= 1_000_000
    print(f"{name}: {int(flagged.sum())} of {n} cars flagged at least once")
