"""Carried keys/values: a cached step equals recomputing the whole window."""

from __future__ import annotations

import pytest
import torch
from dynamics_helpers import build, random_rows, typical_stats

from gym_s3.dynamics import make, state_from_window
from gym_s3.dynamics.attention import SlidingWindowTransformer


@pytest.mark.parametrize("layers", [1, 2])
def test_transformer_step_equals_window_recomputation(layers: int) -> None:
    """Feeding tokens one by one with caches equals forward_window on the last R tokens."""
    torch.manual_seed(0)
    net = SlidingWindowTransformer(9, 3, d_model=16, heads=2, layers=layers, window=4).eval()
    r = net.receptive_field
    assert r == layers * 3 + 1
    tokens = torch.randn(5, r + 12, 9)
    with torch.no_grad():
        _, caches = net.forward_window(tokens[:, : r - 1])
        for t in range(r - 1, tokens.shape[1]):
            out, caches = net.forward_step(tokens[:, t], caches)
            ref, _ = net.forward_window(tokens[:, t - r + 1 : t + 1])
            torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)


def test_cache_is_needed() -> None:
    """The check above can fail: stale caches (not shifted) give a different output."""
    torch.manual_seed(0)
    net = SlidingWindowTransformer(9, 3, d_model=16, heads=2, window=4).eval()
    tokens = torch.randn(3, 8, 9)
    with torch.no_grad():
        _, caches = net.forward_window(tokens[:, :3])
        out, _ = net.forward_step(tokens[:, 3], caches)
        zeroed = {k: torch.zeros_like(v) for k, v in caches.items()}
        stale, _ = net.forward_step(tokens[:, 3], zeroed)
    assert not torch.allclose(out, stale, atol=1e-4)


@pytest.mark.parametrize("name", ["trans", "dytr"])
def test_backend_cached_step_equals_full_window(name: str) -> None:
    """Teacher-forced through a log: every cached step equals ``predict_window`` on the window."""
    backend = build(name)
    h = backend.history_length
    rows = random_rows(6, h + 15, seed=2)
    state = state_from_window(backend, rows[:, :h], torch.zeros(6, 3))
    with torch.no_grad():
        for k in range(h - 1, rows.shape[1] - 1):
            state = backend.step(state, rows[:, k, 3:5], rows[:, k, 5:9])
            ref = backend.predict_window(rows[:, k - h + 1 : k + 1])
            torch.testing.assert_close(state.vel, ref, atol=1e-5, rtol=1e-5)
            state.vel = rows[:, k + 1, :3]  # teacher forcing: continue from the logged state


def test_learned_initial_state_matches_its_history(learned) -> None:
    """A fresh car's carried state equals the state rebuilt from its (steady) history."""
    st = learned.initial_state(torch.zeros(3, 3), torch.tensor([5.0, 15.0, 30.0]), torch.ones(3, 4))
    rebuilt = learned.extra_from_history(st.history)
    assert set(rebuilt) == set(st.extra)
    for key, value in rebuilt.items():
        torch.testing.assert_close(st.extra[key], value)


@pytest.mark.parametrize("layers", [1, 2])
def test_steady_caches_equal_window_of_copies(layers: int) -> None:
    """One token's pass gives the caches that forward_window leaves after copies of it."""
    torch.manual_seed(0)
    net = SlidingWindowTransformer(9, 3, d_model=16, heads=2, layers=layers, window=4).eval()
    token = torch.randn(5, 9)
    with torch.no_grad():
        _, ref = net.forward_window(token[:, None].expand(-1, net.receptive_field - 1, -1))
        steady = net.steady_caches(token)
    assert set(steady) == set(ref)
    for key, value in ref.items():
        torch.testing.assert_close(steady[key], value, atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("layers", [1, 2])
@pytest.mark.parametrize("name", ["trans", "dytr"])
def test_backend_steady_extra_equals_history_of_copies(name: str, layers: int) -> None:
    """``steady_extra`` of any row (turning, braking, mixed friction) equals the full rebuild."""
    torch.manual_seed(1)
    backend = (
        make("trans", layers=layers)
        if name == "trans"
        else make("dytr", residual={"layers": layers})
    )
    backend.set_norm_stats(typical_stats())
    if name == "dytr":
        with torch.no_grad():
            torch.nn.init.normal_(backend.residual.head[-1].weight, std=0.3)
    backend.eval()
    row = random_rows(6, 1, seed=3)[:, 0]
    with torch.no_grad():
        steady = backend.steady_extra(row)
        full = backend.extra_from_history(row[:, None].expand(-1, backend.history_length, -1))
    assert set(steady) == set(full)
    for key, value in full.items():
        torch.testing.assert_close(steady[key], value, atol=1e-6, rtol=1e-6)
