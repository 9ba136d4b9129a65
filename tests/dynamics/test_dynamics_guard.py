"""The bounds of every backend step.

The runaway guard (which cars it freezes, its two equal paths) and brakes that never drive a car
backwards.
"""

from __future__ import annotations

import math

import pytest
import torch
from dynamics_helpers import BACKENDS, build, random_rows

from gym_s3.dynamics import state_from_window
from gym_s3.dynamics.base import MAX_SPEED, MAX_YAW_RATE, BackendState, DynamicsBackend, guard


def _state(n: int, seed: int) -> BackendState:
    """N cars with a history and a strided attention-like cache (as ``trans`` keeps one)."""
    g = torch.Generator().manual_seed(seed)
    cache = torch.randn(n, 4, 6, generator=g)
    return BackendState(
        pose=torch.randn(n, 3, generator=g),
        vel=torch.rand(n, 3, generator=g) * torch.tensor([30.0, 1.0, 1.0]),
        history=torch.randn(n, 5, 9, generator=g),
        extra={"k0": cache[..., :3], "v0": cache[..., 3:], "step": torch.arange(n)},
        fault=torch.zeros(n, dtype=torch.bool),
    )


def _broken(n: int) -> tuple[BackendState, BackendState, torch.Tensor]:
    """Before / after states of N cars where cars 1, 4, 6 and 7 ran away; their fault mask."""
    before, after = _state(n, 0), _state(n, 1)
    before.history[4, 2, 3] = math.nan  # a damaged history row is cleaned when frozen
    before.extra["k0"][6, 0, 0] = math.inf
    after.pose[1, 0] = math.nan
    after.vel[4, 0] = MAX_SPEED + 1.0
    after.vel[6, 2] = -(MAX_YAW_RATE + 0.5)
    after.vel[7, 1] = math.inf
    bad = torch.zeros(n, dtype=torch.bool)
    bad[[1, 4, 6, 7]] = True
    return before, after, bad


@pytest.mark.parametrize("sync_free", [True, False])
def test_guard_freezes_exactly_the_runaway_cars(sync_free: bool) -> None:
    """Bad cars keep their previous pose at rest, cleaned and flagged; the others are untouched."""
    n = 9
    before, after, bad = _broken(n)
    expected = _state(n, 1)
    out = guard(before, after, sync_free=sync_free)
    assert torch.equal(out.fault, bad)
    good = ~bad
    assert torch.equal(out.pose[good], expected.pose[good])
    assert torch.equal(out.vel[good], expected.vel[good])
    assert torch.equal(out.extra["k0"][good], expected.extra["k0"][good])
    assert torch.equal(out.pose[bad], torch.nan_to_num(before.pose[bad]))
    assert torch.equal(out.vel[bad], torch.zeros(4, 3))
    assert torch.equal(out.history[bad], torch.nan_to_num(before.history[bad]))
    assert torch.equal(out.extra["k0"][bad], torch.nan_to_num(before.extra["k0"][bad]))
    assert torch.equal(out.extra["step"], torch.arange(n))
    for t in out.tensors().values():
        if t.is_floating_point():
            assert torch.isfinite(t).all()


def test_both_paths_give_the_same_state() -> None:
    """The eager-CPU path (bad rows only) and the row-wise ``where`` path agree bit for bit."""
    a = guard(*_broken(9)[:2], sync_free=True).tensors()
    b = guard(*_broken(9)[:2], sync_free=False).tensors()
    assert a.keys() == b.keys()
    for key in a:
        assert torch.equal(a[key], b[key]), key


def test_sound_cars_pass_through_and_keep_their_fault() -> None:
    """With no runaway car the step's own state comes back (its earlier fault flags kept)."""
    before, after = _state(5, 0), _state(5, 1)
    after.fault = torch.tensor([False, True, False, False, False])
    out = guard(before, after)
    assert torch.equal(out.fault, after.fault)
    for key, t in out.tensors().items():
        assert torch.equal(t, after.tensors()[key]), key


@pytest.mark.parametrize("name", BACKENDS)
def test_a_step_shares_no_tensor_with_the_state_it_came_from(name: str) -> None:
    """Every backend's step returns tensors of its own (the guard passes them on uncopied).

    The env writes reset rows into its state in place; a backend that handed back one of its
    input tensors would make that write change the previous state as well.
    """
    backend = build(name)
    before = state_from_window(
        backend, random_rows(6, backend.history_length + 1), torch.zeros(6, 3)
    )
    after = backend.step(before, torch.zeros(6, 2), torch.full((6, 4), 0.8))
    old = {t.untyped_storage().data_ptr() for t in before.tensors().values()}
    for key, t in after.tensors().items():
        assert t.untyped_storage().data_ptr() not in old, f"{name}: {key} is the input's tensor"


class _Decelerating(DynamicsBackend):
    """A stand-in model that takes 1 m/s off the forward speed every step, whatever the pedals."""

    name = "decelerating"

    def predict(self, history: torch.Tensor, extra: dict) -> tuple[torch.Tensor, dict]:
        return history[:, -1, :3] - torch.tensor([1.0, 0.0, 0.0]), {}


def test_brakes_stop_a_car_but_never_drive_it_backwards() -> None:
    """Under the brake the forward speed stops at 0 (or at a backward speed it already had)."""
    backend = _Decelerating()
    speed = torch.tensor([0.5, 0.5, -1.0, 3.0, 0.0])
    state = backend.initial_state(torch.zeros(5, 3), speed, torch.ones(5, 4))
    accel = torch.tensor([-0.3, 0.2, -0.3, -0.3, -1.0])
    out = backend.step(state, torch.stack([torch.zeros(5), accel], dim=-1), torch.ones(5, 4))
    # braked 0.5 -> 0; throttle is not bounded (-0.5); braked -1 stays -1; 3 -> 2; rest holds
    assert torch.equal(out.vel[:, 0], torch.tensor([0.0, -0.5, -1.0, 2.0, 0.0]))
    # the pose is integrated with the bounded speed: the braked car stops short of going back
    assert out.pose[0, 0] == pytest.approx(0.5 * 0.5 * 0.05)
    assert out.pose[1, 0] == pytest.approx(0.0)


def test_shipped_trans_braking_at_lock_on_low_friction_holds_at_rest() -> None:
    """The shipped ``trans`` (which predicts reversing there) keeps a braked car from going back.

    From 3 m/s, steering -0.85 and braking 0.25 for 10 s on uniform friction 0.35 (between snow's
    0.25 and gravel): the car stops and stays stopped; without the bound it rolls backwards to
    -1.83 m/s (``tools/low_speed_probe.py --surface snow`` shows the same on a track).
    """
    from gym_s3.dynamics import load

    backend = load("trans")
    n = 1
    mu = torch.full((n, 4), 0.35)
    state = backend.initial_state(torch.zeros(n, 3), torch.full((n,), 3.0), mu)
    action = torch.tensor([[-0.85, -0.25]])
    speeds = []
    with torch.no_grad():
        for _ in range(200):
            state = backend.step(state, action, mu)
            speeds.append(float(state.vel[0, 0]))
    assert min(speeds) >= 0.0
    assert speeds[-1] < 0.05
