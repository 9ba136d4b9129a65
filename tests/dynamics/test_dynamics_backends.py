"""Contract tests run on every backend: batching, determinism, finiteness, partial reset."""

from __future__ import annotations

import pytest
import torch
from dynamics_helpers import BACKENDS, build, random_rows

from gym_s3.dynamics import backend_names, make, state_from_window
from gym_s3.dynamics.base import BackendState
from gym_s3.errors import ConfigError


def _start(backend, n: int, seed: int = 0) -> BackendState:
    rows = random_rows(n, backend.history_length + 1, seed)
    pose = torch.zeros(n, 3)
    return state_from_window(backend, rows, pose)


def _rollout(backend, state: BackendState, steps: int, seed: int = 1) -> list[BackendState]:
    g = torch.Generator().manual_seed(seed)
    out = []
    with torch.no_grad():
        for _ in range(steps):
            action = 2.0 * torch.rand(state.n, 2, generator=g) - 1.0
            mu = 0.05 + 1.15 * torch.rand(state.n, 4, generator=g)
            state = backend.step(state, action, mu)
            out.append(state)
    return out


def test_registry_lists_the_four_backends() -> None:
    """The registry knows bicycle, ddm, trans and dytr, and rejects unknown names clearly."""
    assert set(BACKENDS) <= set(backend_names())
    with pytest.raises(ConfigError, match="valid backends"):
        make("nope")


def test_identical_rows_equal_one_car(backend) -> None:
    """N identical cars produce exactly the N = 1 result in every row."""
    one = _start(backend, 1)
    many = BackendState(
        pose=one.pose.expand(6, 3).clone(),
        vel=one.vel.expand(6, 3).clone(),
        history=one.history.expand(6, -1, -1).clone(),
        extra={k: v.expand(6, *v.shape[1:]).clone() for k, v in one.extra.items()},
        fault=one.fault.expand(6).clone(),
    )
    action, mu = torch.tensor([[0.3, -0.4]]), torch.tensor([[0.9, 0.8, 0.3, 0.2]])
    with torch.no_grad():
        a = backend.step(one, action, mu)
        b = backend.step(many, action.expand(6, 2), mu.expand(6, 4))
    torch.testing.assert_close(b.vel, a.vel.expand(6, 3), atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(b.pose, a.pose.expand(6, 3), atol=1e-6, rtol=1e-6)


def test_batch_equals_per_car(backend) -> None:
    """Stepping 5 different cars together equals stepping each alone (no cross-talk)."""
    state = _start(backend, 5, seed=3)
    action = 2.0 * torch.rand(5, 2) - 1.0
    mu = 0.05 + torch.rand(5, 4)
    with torch.no_grad():
        batched = backend.step(state, action, mu)
        for i in range(5):
            single = BackendState(
                pose=state.pose[i : i + 1], vel=state.vel[i : i + 1],
                history=state.history[i : i + 1],
                extra={k: v[i : i + 1] for k, v in state.extra.items()},
                fault=state.fault[i : i + 1],
            )  # fmt: skip
            alone = backend.step(single, action[i : i + 1], mu[i : i + 1])
            torch.testing.assert_close(batched.vel[i : i + 1], alone.vel, atol=1e-5, rtol=1e-5)


def test_cpu_float32_determinism(backend) -> None:
    """Two builds with the same seed give bit-identical weights and rollouts on CPU float32."""
    other = build(backend.name)
    mine, theirs = backend.state_dict(), other.state_dict()
    assert all(torch.equal(mine[k], theirs[k]) for k in mine)
    ra = _rollout(backend, _start(backend, 32), 20)
    rb = _rollout(other, _start(other, 32), 20)
    assert torch.equal(ra[-1].vel, rb[-1].vel)
    assert torch.equal(ra[-1].pose, rb[-1].pose)


def test_random_valid_inputs_stay_finite(backend) -> None:
    """1024 cars x 30 steps from random valid states/actions: every state finite (fast soak)."""
    state = _start(backend, 1024, seed=5)
    for st in _rollout(backend, state, 30, seed=6):
        assert torch.isfinite(st.vel).all() and torch.isfinite(st.pose).all()
        assert all(torch.isfinite(v).all() for v in st.extra.values())
        assert st.fault.dtype == torch.bool


def test_partial_reset_with_where(backend) -> None:
    """``where`` replaces the masked cars by fresh ones, whose next step equals a fresh step."""
    n = 8
    running = _rollout(backend, _start(backend, n), 3)[-1]
    fresh = backend.initial_state(torch.zeros(n, 3), torch.full((n,), 12.0), torch.ones(n, 4))
    mask = torch.tensor([True, False] * 4)
    mixed = running.where(mask, fresh)
    action, mu = torch.zeros(n, 2), torch.ones(n, 4)
    with torch.no_grad():
        stepped = backend.step(mixed, action, mu)
        ref_fresh = backend.step(fresh, action, mu)
        ref_run = backend.step(running, action, mu)
    torch.testing.assert_close(stepped.vel[mask], ref_fresh.vel[mask])
    torch.testing.assert_close(stepped.vel[~mask], ref_run.vel[~mask])


def test_initial_state_is_steady_and_consistent(backend) -> None:
    """A fresh car coasting straight on asphalt stays straight and near its speed for a step."""
    st = backend.initial_state(torch.zeros(2, 3), torch.tensor([10.0, 20.0]), torch.ones(2, 4))
    assert st.history.shape == (2, backend.history_length, 9)
    with torch.no_grad():
        nxt = backend.step(st, torch.zeros(2, 2), torch.ones(2, 4))
    assert torch.isfinite(nxt.vel).all()
    assert (nxt.pose[:, 0] > 0.3).all()  # moved forward (>= 6 m/s * 0.05 s)
