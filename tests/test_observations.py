"""The shared observation builder."""

from __future__ import annotations

import math

import pytest
import torch

from gym_s3.errors import ConfigError
from gym_s3.observations import EgoState, build_observation, to_car_frame
from gym_s3.spec import LOOKAHEAD_M, feature_index, observation_bounds, observation_size


def _ego(n: int = 1, yaw: float = 0.0) -> EgoState:
    z = torch.zeros(n)
    return EgoState(z + 10.0, z + 20.0, z + yaw, z + 5.0, z, z)


def _kwargs(n: int = 1):
    k = len(LOOKAHEAD_M)
    return dict(
        cross_track=torch.zeros(n),
        heading_err=torch.zeros(n),
        speed_err=torch.zeros(n),
        prev_action=torch.zeros(n, 2),
        lookahead_x=torch.full((n, k), 10.0),
        lookahead_y=torch.full((n, k), 20.0),
        lookahead_v=torch.full((n, k), 7.0),
    )


def test_car_frame_of_point_ahead_and_left():
    """A car at yaw 90 deg sees a point north of it straight ahead and a point west on its left."""
    ego = _ego(yaw=math.pi / 2)
    cx, cy = to_car_frame(ego, torch.tensor([[10.0, 7.0]]), torch.tensor([[23.0, 20.0]]))
    assert cx[0].tolist() == pytest.approx([3.0, 0.0], abs=1e-5)
    assert cy[0].tolist() == pytest.approx([0.0, 3.0], abs=1e-5)


def test_layout_matches_spec_and_oracle_needs_friction():
    """Observation length follows the spec; oracle mode without friction is an error."""
    obs = build_observation(_ego(3), **_kwargs(3))
    assert obs.shape == (3, observation_size("default")) and obs.dtype == torch.float32
    assert obs[0, feature_index("v_long")].item() == 5.0
    assert obs[0, feature_index("ref_v_10m")].item() == 7.0
    with pytest.raises(ConfigError, match="oracle"):
        build_observation(_ego(), **_kwargs(), mode="oracle")
    mu = torch.tensor([[1.0, 0.1, 1.0, 0.1]])
    obs = build_observation(_ego(), **_kwargs(), wheel_mu=mu, mode="oracle")
    assert obs[0, -4:].tolist() == pytest.approx([1.0, 0.1, 1.0, 0.1])


def test_nan_and_out_of_range_are_sanitised():
    """NaN never reaches an observation and values are clipped to the spec bounds."""
    kw = _kwargs()
    kw["cross_track"] = torch.tensor([float("nan")])
    kw["speed_err"] = torch.tensor([1e6])
    obs = build_observation(_ego(), **kw)
    low, high = observation_bounds()
    assert torch.isfinite(obs).all()
    assert obs[0, feature_index("cross_track_error")].item() == 0.0
    assert obs[0, feature_index("speed_error")].item() == pytest.approx(float(high[7]))
    assert (obs >= torch.as_tensor(low)).all() and (obs <= torch.as_tensor(high)).all()
