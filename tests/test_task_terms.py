"""Each reward term, the spin-out termination and the wheel order, pinned on hand-made states.

Every case steps :class:`~gym_s3.task.TrackingTask` with cars placed by hand on a straight road
(along +x, left = +y), so the expected value of each term is known exactly. The weights are all
different, so a term paid with another term's weight, or with the wrong sign, fails.
"""

from __future__ import annotations

import math

import pytest
import torch
from path_helpers import make_straight

from gym_s3.errors import ConfigError
from gym_s3.observations import EgoState
from gym_s3.rewards import RewardWeights
from gym_s3.scenarios import PoolConfig, ScenarioPool
from gym_s3.task import TaskConfig, TrackingTask
from gym_s3.tracks.surfaces import RectPatch, SurfaceLayout

#: Distinct weights: a swapped or sign-flipped term cannot give the same reward.
WEIGHTS = RewardWeights(progress=0.7, cross_track=0.11, heading=0.13, speed=0.17,
                        smoothness=0.19, failure=23.0, alive=0.29, precision=0.31,
                        precision_width=0.5, overspeed=0.37,
                        throttle=0.41, throttle_pace=0.6, alive_pace=0.43)  # fmt: skip
TERMS = ("progress", "cross_track", "heading", "speed", "smoothness", "failure", "alive",
         "precision", "overspeed", "throttle")  # fmt: skip


def _task(n: int, layout: SurfaceLayout | None = None, **config) -> TrackingTask:
    """N cars on a 300 m straight (8 m wide), started without noise at the same place."""
    layout = layout or SurfaceLayout.uniform("asphalt")
    pool = ScenarioPool.build([make_straight(300.0)], [[layout]], PoolConfig())
    cfg = TaskConfig(reward=WEIGHTS, start_lateral_m=0.0, start_heading_rad=0.0, **config)
    task = TrackingTask(pool, n, cfg)
    task.reset(torch.ones(n, dtype=torch.bool), torch.Generator().manual_seed(0))
    return task


def _cars(task: TrackingTask, ahead: float = 1.0, *, dy=0.0, dyaw=0.0, dv=0.0) -> EgoState:
    """Cars placed by hand relative to their start on the straight.

    ``ahead`` metres down the road, offset left by ``dy`` [m], turned left by ``dyaw`` [rad],
    ``dv`` [m/s] faster than the target speed (each a float or ``(N,)``).
    """
    s = task.s + ahead
    v_ref = task.pool.target_speed(task.variant, s)
    z = torch.zeros_like(s)
    return EgoState(s, z + torch.as_tensor(dy), z + torch.as_tensor(dyaw),
                    v_ref + torch.as_tensor(dv), z, z)  # fmt: skip


def _terms(out) -> dict[str, torch.Tensor]:
    return {name: out.info[f"reward/{name}"] for name in TERMS}


def test_each_error_costs_its_own_weight_in_either_direction():
    """Each error costs ``weight * |error|`` in its own term only, whichever its sign.

    Speed above the target also costs ``overspeed`` (the fast row only). Rows: on the line;
    1.5 m left; 1.5 m right; 0.3 rad left; 0.3 rad right; 2 m/s fast;
    2 m/s slow.
    """
    task = _task(7)
    dy = torch.tensor([0.0, 1.5, -1.5, 0.0, 0.0, 0.0, 0.0])
    dyaw = torch.tensor([0.0, 0.0, 0.0, 0.3, -0.3, 0.0, 0.0])
    dv = torch.tensor([0.0, 0.0, 0.0, 0.0, 0.0, 2.0, -2.0])
    out = task.step(_cars(task, 1.0, dy=dy, dyaw=dyaw, dv=dv), torch.zeros(7, 2))
    terms = _terms(out)
    pace = ((out.info["target_speed"] + dv) / out.info["target_speed"]).clamp(max=1.0)
    expect = {
        "progress": torch.full((7,), 0.7 * 1.0),
        "cross_track": -0.11 * dy.abs(),
        "heading": -0.13 * dyaw.abs(),
        "speed": -0.17 * dv.abs(),
        "smoothness": torch.zeros(7),
        "failure": torch.zeros(7),
        "alive": 0.29 * (pace / 0.43).clamp(max=1.0),  # alive_pace 0.43: the slow car earns less
        "precision": 0.31 * torch.exp(-((dy / 0.5) ** 2)) * pace,
        "overspeed": -0.37 * dv.clamp(min=0.0),  # the fast car only
        "throttle": torch.zeros(7),  # no pedal
    }
    for name in TERMS:
        assert torch.allclose(terms[name], expect[name], atol=2e-3), name
    assert torch.allclose(out.reward, sum(expect.values()), atol=5e-3)
    assert (out.reward[1:] < out.reward[0]).all()  # every error lowers the reward
    assert not out.terminated.any()


def test_precision_pays_most_for_the_last_centimetres():
    """The precision bonus is ``w exp(-(cte / width)^2)``, for either side of the line.

    The same 12 cm closer to the line is worth the same in the linear cross-track term wherever
    it happens, but many times more in the precision bonus near the line (3 vs 15 cm) than far
    from it (2.03 vs 2.15 m); the bonus is bounded by its weight (on the line) and 0 (far off).
    """
    task = _task(7)
    dy = torch.tensor([0.0, 0.03, -0.15, 0.15, 2.03, 2.15, 3.0])
    out = task.step(_cars(task, 1.0, dy=dy), torch.zeros(7, 2))
    bonus, linear = _terms(out)["precision"], _terms(out)["cross_track"]
    torch.testing.assert_close(bonus, 0.31 * torch.exp(-((dy / 0.5) ** 2)), atol=2e-3, rtol=0)
    assert bonus[2] == pytest.approx(bonus[3].item(), abs=1e-4)
    assert bonus[0] > bonus[1] > bonus[2] > bonus[4] > bonus[5] > bonus[6] >= 0.0
    near, far = (bonus[1] - bonus[2]).item(), (bonus[4] - bonus[5]).item()
    assert near > 50.0 * far
    assert (linear[1] - linear[2]).item() == pytest.approx((linear[4] - linear[5]).item(), abs=1e-3)


def test_precision_is_paid_at_pace_never_for_standing_on_the_line():
    """On the line the bonus is ``w * min(v / v_target, 1)``: none standing, half at half pace.

    Standing still on the line must not earn what driving it earns (an ungated bonus taught
    policies to stop on ice patches); faster than the target earns no more than on it.
    """
    task = _task(4)
    ahead = 1.0
    v_ref = task.pool.target_speed(task.variant, task.s + ahead)
    dv = torch.stack([-v_ref[0], -0.5 * v_ref[1], torch.tensor(0.0), torch.tensor(3.0)])
    out = task.step(_cars(task, ahead, dv=dv), torch.zeros(4, 2))
    bonus = _terms(out)["precision"]
    assert bonus.tolist() == pytest.approx([0.0, 0.155, 0.31, 0.31], abs=2e-3)


def test_progress_pays_per_metre_and_going_backwards_costs():
    """Progress is ``weight * metres advanced``: 2 m pays twice 1 m, reversing 1 m costs."""
    task = _task(3)
    ahead = torch.tensor([1.0, 2.0, -1.0])
    out = task.step(_cars(task, ahead), torch.zeros(3, 2))
    assert torch.allclose(_terms(out)["progress"], 0.7 * ahead, atol=1e-3)
    assert out.reward[1] > out.reward[0] > out.reward[2]


def test_smoothness_costs_the_mean_squared_action_change():
    """Changing the action by (0.5, -0.5) costs ``0.19 * 0.25``; holding it costs nothing."""
    task = _task(2)
    action = torch.tensor([[0.5, -0.5], [0.0, 0.0]])
    out = task.step(_cars(task), action)
    assert _terms(out)["smoothness"].tolist() == pytest.approx([-0.19 * 0.25, 0.0], abs=1e-6)
    out = task.step(_cars(task), action)  # the same action again: no change
    assert _terms(out)["smoothness"].tolist() == pytest.approx([0.0, 0.0], abs=1e-6)


def test_throttle_costs_its_squared_pedal_and_braking_costs_nothing():
    """Throttle ``a > 0`` costs ``0.41 a^2``; braking and coasting cost nothing in that term.

    Rows: full throttle, half throttle, coasting, full brake (the same state otherwise).
    """
    task = _task(4)
    action = torch.tensor([[0.0, 1.0], [0.0, 0.5], [0.0, 0.0], [0.0, -1.0]])
    out = task.step(_cars(task), action)
    assert _terms(out)["throttle"].tolist() == pytest.approx([-0.41, -0.1025, 0.0, 0.0], abs=1e-6)


def test_gated_throttle_penalty_spares_a_standing_car():
    """With ``throttle_pace = 0.6`` full throttle costs ``0.41 min(pace / 0.6, 1)``.

    Rows at rest, at half the target speed, at the target and above it (pace capped at 1): a
    standing car pays nothing, one at half the target 5/6 of the penalty, a car at pace all of it.
    """
    task = _task(4)
    v_ref = task.pool.target_speed(task.variant, task.s + 1.0)
    dv = torch.stack([-v_ref[0], -0.5 * v_ref[1], torch.tensor(0.0), torch.tensor(3.0)])
    out = task.step(_cars(task, dv=dv), torch.tensor([[0.0, 1.0]] * 4))
    pace = torch.tensor([0.0, 0.5, 1.0, 1.0])
    expected = -0.41 * (pace / 0.6).clamp(max=1.0)
    assert _terms(out)["throttle"].tolist() == pytest.approx(expected.tolist(), abs=1e-6)


def test_alive_bonus_below_its_pace_falls_to_nothing_at_rest():
    """With ``alive_pace = 0.43`` a step earns ``0.29 min(pace / 0.43, 1)`` of ``alive``.

    Rows at rest, at a fifth of the target speed, at half of it and at it: standing earns nothing,
    a car at half the target speed (above 0.43) all of it.
    """
    task = _task(4)
    v_ref = task.pool.target_speed(task.variant, task.s + 1.0)
    dv = torch.stack([-v_ref[0], -0.8 * v_ref[1], -0.5 * v_ref[2], torch.tensor(0.0)])
    out = task.step(_cars(task, dv=dv), torch.zeros(4, 2))
    expected = 0.29 * torch.tensor([0.0, 0.2 / 0.43, 1.0, 1.0])
    assert _terms(out)["alive"].tolist() == pytest.approx(expected.tolist(), abs=1e-6)


@pytest.mark.parametrize("name", ["throttle_pace", "alive_pace"])
def test_full_paces_outside_zero_one_are_refused(name):
    """A pace above 1 (the target speed caps the pace at 1) is refused with its name."""
    with pytest.raises(ConfigError, match=name):
        RewardWeights(**{name: 1.5})


def test_spin_out_terminates_on_its_own_on_the_road():
    """A car on the centre line turned past ``spin_heading_rad`` terminates as a spin-out.

    It is not off the road, and pays the failure penalty; just below the threshold it drives on.
    """
    task = _task(3)
    limit = task.config.spin_heading_rad
    dyaw = torch.tensor([limit - 0.05, limit + 0.05, -(limit + 0.05)])
    out = task.step(_cars(task, dyaw=dyaw), torch.zeros(3, 2))
    assert out.info["spin_out"].tolist() == [False, True, True]
    assert not out.info["off_track"].any() and not out.info["non_finite"].any()
    assert out.terminated.tolist() == [False, True, True] and not out.truncated.any()
    assert _terms(out)["failure"].tolist() == [0.0, -23.0, -23.0]


def test_failure_penalty_is_paid_once_per_failed_episode_only():
    """Off-road pays ``-failure`` on the terminating step; a time-out pays nothing."""
    task = _task(2, max_episode_steps=1)
    out = task.step(_cars(task, dy=torch.tensor([0.0, 6.0])), torch.zeros(2, 2))
    assert out.info["off_track"].tolist() == [False, True]
    assert out.terminated.tolist() == [False, True] and out.truncated.tolist() == [True, False]
    assert _terms(out)["failure"].tolist() == [0.0, -23.0]


def _left_patch(x0: float, x1: float, y0: float, y1: float) -> SurfaceLayout:
    """Asphalt with one ice rectangle over ``[x0, x1] x [y0, y1]`` [m]."""
    patch = RectPatch(cx=(x0 + x1) / 2, cy=(y0 + y1) / 2, yaw=0.0, length=x1 - x0,
                      width=y1 - y0, mu=0.1)  # fmt: skip
    return SurfaceLayout(base="asphalt", base_mu=1.0, patches=(patch,))


def test_a_patch_on_the_left_is_under_the_left_wheels():
    """Ice on the left half of the road is under FL and RL (wheel order FL, FR, RL, RR).

    For a car facing the other way it is under FR and RR; ice over the front axle only is under
    FL and FR.
    """
    left = _left_patch(-10.0, 310.0, 0.0, 4.0)
    task = _task(1, left)
    out = task.step(_cars(task), torch.zeros(1, 2))
    assert out.info["wheel_mu"][0].tolist() == pytest.approx([0.1, 1.0, 0.1, 1.0])
    ego = _cars(task)
    turned = EgoState(ego.x, ego.y, ego.yaw + math.pi, ego.v_long, ego.v_lat, ego.yaw_rate)
    assert task.wheel_friction(turned)[0].tolist() == pytest.approx([1.0, 0.1, 1.0, 0.1])
    x = float(ego.x[0])
    front = _left_patch(x, x + 10.0, -4.0, 4.0)  # covers the front axle (1.2 m ahead) only
    task = _task(1, front)
    assert task.wheel_friction(ego)[0].tolist() == pytest.approx([0.1, 0.1, 1.0, 1.0])
