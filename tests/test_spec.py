"""The shared observation/action spec."""

from __future__ import annotations

import numpy as np
import pytest

from gym_s3 import spec
from gym_s3.errors import CheckpointError, ConfigError


def test_action_space_is_two_unit_boxes():
    """Action space must be Box(-1, 1, (2,), float32) = [steer, accel]."""
    space = spec.single_action_space()
    assert space.shape == (2,)
    assert space.dtype == np.float32
    np.testing.assert_array_equal(space.low, [-1, -1])
    np.testing.assert_array_equal(space.high, [1, 1])
    assert [f.name for f in spec.ACTION_FEATURES] == ["steer", "accel"]


def test_oracle_adds_exactly_the_four_wheel_frictions():
    """Oracle mode appends mu_fl..mu_rr after the default features, nothing else changes."""
    default = spec.observation_features("default")
    oracle = spec.observation_features("oracle")
    assert oracle[: len(default)] == default
    assert [f.name for f in oracle[len(default) :]] == ["mu_fl", "mu_fr", "mu_rl", "mu_rr"]
    assert spec.observation_size("default") == 8 + 3 * len(spec.LOOKAHEAD_M)


def test_feature_names_unique_and_bounds_ordered():
    """Every feature name is unique and low < high, so Box bounds are valid."""
    for mode in spec.OBS_MODES:
        feats = spec.observation_features(mode)
        assert len({f.name for f in feats}) == len(feats)
        low, high = spec.observation_bounds(mode)
        assert (low < high).all()


def test_batched_spaces_have_batch_dim():
    """Batched spaces prepend the number of cars."""
    assert spec.batched_observation_space("oracle", 7).shape == (7, spec.observation_size("oracle"))
    assert spec.batched_action_space(7).shape == (7, 2)


def test_feature_index_and_unknown_mode():
    """feature_index finds features; an unknown mode lists the valid ones."""
    assert spec.feature_index("cross_track_error") == 5
    with pytest.raises(ConfigError, match="valid modes"):
        spec.observation_features("pixels")


def test_torchrl_specs_carry_batch_and_done_keys():
    """TorchRL specs have the batch dim and declare done/terminated/truncated."""
    pytest.importorskip("torchrl")
    specs = spec.torchrl_specs("default", 3)
    assert specs["observation_spec"]["observation"].shape == (3, spec.observation_size())
    assert specs["action_spec"].shape == (3, 2)
    assert set(specs["done_spec"].keys()) == {"done", "terminated", "truncated"}


def test_check_spec_version_refuses_mismatch():
    """A checkpoint of another spec version is refused with both versions in the message."""
    spec.check_spec_version(spec.SPEC_VERSION, "x")
    with pytest.raises(CheckpointError, match=rf"version 999.*version {spec.SPEC_VERSION}"):
        spec.check_spec_version(999, "model.json")
