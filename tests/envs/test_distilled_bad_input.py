"""Bad input to ``S3Distilled-v0``: actions, backends, checkpoints, reset options."""

from __future__ import annotations

import re

import gymnasium as gym
import numpy as np
import pytest
import torch

import gym_s3  # noqa: F401
from gym_s3.envs.distilled import S3DistilledBatchEnv
from gym_s3.errors import ActionError, CheckpointError, ConfigError

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def batched(small_kwargs) -> S3DistilledBatchEnv:
    """A reset batched env of 4 cars."""
    env = S3DistilledBatchEnv(num_envs=4, **small_kwargs)
    env.reset(seed=0)
    return env


@pytest.mark.parametrize("shape", [(4,), (4, 3), (2, 2), (4, 2, 1)])
def test_wrong_action_shape_names_expected_and_received(batched, shape):
    """An action of the wrong shape raises ActionError naming both shapes."""
    with pytest.raises(ActionError, match=re.escape("shape (4, 2)")) as err:
        batched.step(torch.zeros(shape))
    assert f"got {tuple(shape)}" in str(err.value)


def test_single_env_accepts_flat_actions_only_of_size_two(small_kwargs):
    """The single-car face takes (2,) or (1, 2) and refuses anything else."""
    env = gym.make("S3Distilled-v0", **small_kwargs)
    env.reset(seed=0)
    env.step(np.zeros(2, dtype=np.float32))
    env.step(np.zeros((1, 2), dtype=np.float32))
    with pytest.raises(ActionError, match=r"\(1, 2\) or \(2,\)"):
        env.step(np.zeros(3, dtype=np.float32))


@pytest.mark.parametrize(
    "action",
    [
        torch.zeros(4, 2, dtype=torch.int64),
        np.zeros((4, 2), dtype=np.int32),
        torch.zeros(4, 2, dtype=torch.bool),
        "left",
    ],  # fmt: skip
)
def test_non_float_actions_are_refused(batched, action):
    """Integer, boolean or non-array actions raise ActionError instead of being cast."""
    with pytest.raises(ActionError, match="floating dtype|torch tensor or numpy array"):
        batched.step(action)


def test_nan_action_raises_naming_the_car(batched):
    """By default a non-finite action raises, naming the first bad car and how many are bad."""
    action = torch.zeros(4, 2)
    action[2, 1] = float("nan")
    action[3, 0] = float("inf")
    with pytest.raises(ActionError, match=r"car 2 is not finite.*2 car\(s\)"):
        batched.step(action)


def test_nonfinite_zero_mode_replaces_and_flags(small_kwargs):
    """nonfinite_action='zero' steps NaN entries as 0 and flags exactly those cars."""
    kw = dict(num_envs=3, nonfinite_action="zero", **small_kwargs)
    a, b = S3DistilledBatchEnv(**kw), S3DistilledBatchEnv(**kw)
    a.reset(seed=1)
    b.reset(seed=1)
    bad = torch.tensor([[0.2, float("nan")], [0.3, 0.5], [float("-inf"), 0.1]])
    clean = torch.tensor([[0.2, 0.0], [0.3, 0.5], [0.0, 0.1]])
    obs_a, *_, info = a.step(bad)
    obs_b, *_ = b.step(clean)
    assert torch.equal(obs_a, obs_b)
    assert info["action_nonfinite"].tolist() == [True, False, True]


def test_out_of_range_actions_are_clipped(small_kwargs):
    """Actions beyond [-1, 1] act exactly like the bound (and prev_action reports the bound)."""
    from gym_s3.spec import feature_index

    kw = dict(num_envs=2, **small_kwargs)
    a, b = S3DistilledBatchEnv(**kw), S3DistilledBatchEnv(**kw)
    a.reset(seed=2)
    b.reset(seed=2)
    obs_a, *_ = a.step(torch.tensor([[5.0, -3.0], [-7.0, 2.0]]))
    obs_b, *_ = b.step(torch.tensor([[1.0, -1.0], [-1.0, 1.0]]))
    assert torch.equal(obs_a, obs_b)
    assert obs_a[0, feature_index("prev_steer")] == 1.0


def test_unknown_backend_lists_the_valid_ones(small_kwargs):
    """An unknown backend name raises ConfigError listing every registered backend."""
    with pytest.raises(ConfigError, match=r"unknown dynamics backend 'transformr'.*bicycle.*trans"):
        gym.make("S3Distilled-v0", backend="transformr", **small_kwargs)


def test_checkpoint_of_another_spec_version_is_refused(small_kwargs, tmp_path, monkeypatch):
    """A dynamics checkpoint saved under another SPEC_VERSION is refused; a current one loads."""
    from gym_s3 import checkpoints, dynamics

    fitted = dynamics.make("bicycle", wheelbase=3.1).requires_grad_(False)
    good = dynamics.save(fitted, tmp_path / "good")
    env = S3DistilledBatchEnv(num_envs=2, checkpoint=str(good), **small_kwargs)
    assert float(env.core.backend.params()["wheelbase"]) == pytest.approx(3.1, rel=1e-5)
    monkeypatch.setattr(checkpoints, "SPEC_VERSION", 0)  # as if saved by an older release
    old = dynamics.save(fitted, tmp_path / "old")
    monkeypatch.undo()
    with pytest.raises(CheckpointError, match="spec version"):
        S3DistilledBatchEnv(num_envs=2, checkpoint=str(old), **small_kwargs)
    with pytest.raises(CheckpointError, match="'bicycle' backend"):
        S3DistilledBatchEnv(num_envs=2, backend="trans", checkpoint=str(good), **small_kwargs)


def test_backend_instance_is_used_as_given(small_kwargs):
    """A DynamicsBackend instance drives the cars (a longer wheelbase turns less)."""
    from gym_s3 import dynamics

    yaw_rates = []
    for wheelbase in (2.8, 5.6):
        env = S3DistilledBatchEnv(num_envs=1, backend=dynamics.make("bicycle", wheelbase=wheelbase),
                                  **small_kwargs)  # fmt: skip
        env.reset(seed=0)
        for _ in range(10):
            env.step(torch.tensor([[-0.05, 0.0]]))
        yaw_rates.append(float(env.core.state.vel[0, 2]))
    assert yaw_rates[0] > 0 and yaw_rates[1] == pytest.approx(yaw_rates[0] / 2, rel=0.05)


@pytest.mark.parametrize("mask", [np.ones(3, dtype=bool), np.ones(4, dtype=np.int64)])
def test_bad_reset_mask_is_refused(batched, mask):
    """A reset mask of the wrong shape or dtype raises ConfigError naming the expected form."""
    with pytest.raises(ConfigError, match=r"bool array of shape \(4,\)"):
        batched.reset(options={"reset_mask": mask})


def test_unknown_reset_option_and_bad_scenario_are_refused(batched):
    """Misspelt reset options and out-of-range scenario ids raise ConfigError."""
    with pytest.raises(ConfigError, match="reset_mask, scenario"):
        batched.reset(options={"mask": np.ones(4, dtype=bool)})
    with pytest.raises(ConfigError, match="scenario ids"):
        batched.reset(options={"scenario": [0, 1, 2, 10**6]})


def test_bad_config_values_are_refused(small_kwargs):
    """Config validation names the bad field."""
    for kwargs, match in [
        ({"dtype": "float16"}, "dtype"),
        ({"device": "gpu7"}, "device"),
        ({"nonfinite_action": "ignore"}, "nonfinite_action"),
        ({"scenarios": ["drifting"]}, "unknown scenario label 'drifting'"),
        ({"tracks": "putnam"}, None),  # a single name is accepted
        ({"layouts_per_track": 0}, "layouts_per_track"),
    ]:
        kw = {**small_kwargs, **kwargs}
        if match is None:
            S3DistilledBatchEnv(num_envs=2, **kw)
            continue
        with pytest.raises(ConfigError, match=match):
            S3DistilledBatchEnv(num_envs=2, **kw)
