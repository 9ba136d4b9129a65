"""Metrics and reward terms."""

from __future__ import annotations

import math

import pytest
import torch

from gym_s3 import metrics
from gym_s3.errors import ConfigError
from gym_s3.rewards import RewardWeights, compute_reward


def test_heading_error_wraps():
    """Heading error of +179 deg vs -179 deg is -2 deg, not 358 deg."""
    err = metrics.heading_error(
        torch.tensor([math.radians(179)]), torch.tensor([math.radians(-179)])
    )
    assert err.item() == pytest.approx(math.radians(-2), abs=1e-6)


def test_progress_across_start_line_on_closed_paths_only():
    """Crossing the start line of a 1000 m loop from s=998 to s=3 progresses 5 m."""
    s_prev, s_now = torch.tensor([998.0, 998.0]), torch.tensor([3.0, 3.0])
    closed = torch.tensor([True, False])
    out = metrics.progress(s_prev, s_now, torch.tensor([1000.0, 1000.0]), closed)
    assert out.tolist() == pytest.approx([5.0, -995.0])


def test_off_track_respects_both_edges_and_margin():
    """Off-track beyond left width + margin or right width + margin only."""
    d = torch.tensor([4.9, 5.1, -3.2, -2.9, 0.0])
    w_l, w_r = torch.full((5,), 4.0), torch.full((5,), 2.0)
    assert metrics.off_track(d, w_l, w_r, margin=1.0).tolist() == [False, True, True, False, False]


def test_action_smoothness_is_mean_squared_change():
    """Alternating steer of +-1 has smoothness ((2^2 + 0)/2) = 2 per change."""
    acts = torch.tensor([[[1.0, 0.0], [-1.0, 0.0], [1.0, 0.0]]])
    assert metrics.action_smoothness(acts).item() == pytest.approx(2.0)


def test_episode_stats_accumulate_and_reset_per_car():
    """Stats sum per car, maxima track the worst step, reset touches only masked cars."""
    st = metrics.EpisodeStats.zeros(2)
    for d in ([1.0, -2.0], [3.0, 0.5]):
        st.update(
            lateral_offset=torch.tensor(d),
            heading_err=torch.zeros(2),
            speed_err=torch.ones(2),
            action_delta=torch.zeros(2),
            advanced=torch.full((2,), 2.0),
            is_off_track=torch.tensor([False, True]),
            curvature=torch.zeros(2),
        )
    s = st.summary()
    assert s["cte_mean"].tolist() == pytest.approx([2.0, 1.25])
    assert s["cte_max"].tolist() == pytest.approx([3.0, 2.0])
    assert s["off_track_steps"].tolist() == [0.0, 2.0]
    st.reset(torch.tensor([True, False]))
    assert st.summary()["progress"].tolist() == [0.0, 4.0]


def test_corner_offset_is_positive_inside_negative_wide_and_skips_straights():
    """Left of the line in a left corner is inside (+), left in a right corner is wide (-).

    Car 0 sits 0.1 m left through a left corner, then 0.3 m right on a straight (not counted);
    car 1 sits 0.2 m left through a right corner: 0.1 m inside and 0.2 m wide.
    """
    st = metrics.EpisodeStats.zeros(2)
    for d, kappa in (([0.1, 0.2], [0.02, -0.01]), ([-0.3, 0.2], [0.0, -0.01])):
        st.update(
            lateral_offset=torch.tensor(d),
            heading_err=torch.zeros(2),
            speed_err=torch.zeros(2),
            action_delta=torch.zeros(2),
            advanced=torch.ones(2),
            is_off_track=torch.zeros(2, dtype=torch.bool),
            curvature=torch.tensor(kappa),
        )
    assert st.summary()["corner_offset_mean"].tolist() == pytest.approx([0.1, -0.2])
    assert st.corner_steps.tolist() == [1.0, 2.0]
    gentle = metrics.corner_offset(
        torch.tensor([0.5]), torch.tensor([0.5 * metrics.CORNER_CURVATURE])
    )
    assert gentle[0].item() == 0.0 and not gentle[1].item()  # a 600 m radius is a straight


def test_reward_terms_sum_to_reward_and_signs():
    """Terms sum to the reward; progress is paid, errors cost, failure costs once."""
    w = RewardWeights()
    reward, terms = compute_reward(
        w,
        advanced=torch.tensor([1.0, 1.0]),
        lateral_offset=torch.tensor([0.0, -2.0]),
        heading_err=torch.tensor([0.0, 0.1]),
        speed_err=torch.tensor([0.0, -3.0]),
        target_speed=torch.tensor([10.0, 10.0]),
        action_delta=torch.tensor([0.0, 0.5]),
        failed=torch.tensor([False, True]),
        accel=torch.tensor([0.0, -0.5]),
    )
    assert torch.allclose(reward, torch.stack(list(terms.values())).sum(0))
    assert reward[0].item() == pytest.approx(w.progress + w.alive)
    assert terms["failure"].tolist() == [0.0, -w.failure]
    assert terms["cross_track"][1].item() == pytest.approx(-2.0 * w.cross_track)


def test_reward_weights_validation():
    """Unknown term names and negative weights are refused with the valid names listed."""
    with pytest.raises(ConfigError, match="valid terms"):
        RewardWeights.from_dict({"progres": 1.0})
    with pytest.raises(ConfigError, match=">= 0"):
        RewardWeights(heading=-1.0)
    with pytest.raises(ConfigError, match="precision_width must be > 0"):
        RewardWeights(precision_width=0.0)
