"""Episode semantics of ``S3Distilled-v0``: seeding, partial resets, time limits, autoreset."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

import gym_s3  # noqa: F401
from gym_s3.envs.distilled import S3DistilledBatchEnv, S3DistilledVectorEnv

pytestmark = pytest.mark.timeout(120)


def _rollout(env, steps: int, seed: int) -> list[tuple]:
    """Step ``env`` with seeded random actions; returns every step's outputs."""
    gen = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(steps):
        action = torch.rand(env.num_envs, 2, generator=gen) * 2 - 1
        obs, reward, term, trunc, info = env.step(action)
        out.append((obs, reward, term, trunc, info["final_obs"], info["reward/progress"]))
    return out


def test_same_seed_gives_bitwise_identical_rollouts(small_kwargs):
    """Two envs with the same seed produce identical tensors through autoresets; others differ."""
    kw = dict(num_envs=16, max_episode_steps=12, **small_kwargs)
    runs = []
    for seed in (7, 7, 8):
        env = S3DistilledBatchEnv(**kw)
        obs0, _ = env.reset(seed=seed)
        runs.append((obs0, _rollout(env, 40, seed=1)))
    (a0, a), (b0, b), (c0, _) = runs
    assert torch.equal(a0, b0)
    for step_a, step_b in zip(a, b, strict=True):
        for x, y in zip(step_a, step_b, strict=True):
            assert torch.equal(x, y)
    assert any(bool(s[3].any()) for s in a)  # the rollout crossed episode ends
    assert not torch.equal(a0, c0)


def test_reset_with_the_same_seed_repeats_the_start(small_kwargs, driver):
    """reset(seed=s) after some driving gives the very same start observations again."""
    env = S3DistilledBatchEnv(num_envs=8, **small_kwargs)
    first, info = env.reset(seed=11)
    scenarios = info["scenario"].clone()
    obs = first
    for _ in range(5):
        obs, *_ = env.step(driver(obs))
    again, info = env.reset(seed=11)
    assert torch.equal(first, again)
    assert torch.equal(scenarios, info["scenario"])


def test_reset_mask_resets_only_masked_cars(small_kwargs, driver):
    """DISABLED autoreset: reset_mask restarts the masked cars and leaves the others untouched."""
    env = gym.make_vec("S3Distilled-v0", num_envs=6, **small_kwargs)
    obs, _ = env.reset(seed=0)
    for _ in range(5):
        obs, *_ = env.step(driver(torch.from_numpy(obs)).numpy())
    core = env.core
    pose_before = core.state.pose.clone()
    mask = np.array([True, False, True, False, False, False])
    new_obs, info = env.reset(options={"reset_mask": mask})
    keep = ~mask
    np.testing.assert_array_equal(new_obs[keep], obs[keep])
    assert torch.equal(core.state.pose[torch.from_numpy(keep)], pose_before[torch.from_numpy(keep)])
    assert core.task.steps.tolist() == [0, 5, 0, 5, 5, 5]
    assert not torch.equal(
        core.state.pose[torch.from_numpy(mask)], pose_before[torch.from_numpy(mask)]
    )
    np.testing.assert_array_equal(info["_scenario"], mask)
    env.reset(options={"reset_mask": torch.tensor([False] * 5 + [True])})  # torch masks work too
    assert core.task.steps.tolist() == [0, 5, 0, 5, 5, 0]


def test_time_limit_truncates_and_never_terminates(small_kwargs, driver):
    """Cars still on the road at max_episode_steps are truncated, not terminated."""
    env = S3DistilledBatchEnv(num_envs=8, max_episode_steps=6, autoreset_mode="disabled",
                              **small_kwargs)  # fmt: skip
    obs, _ = env.reset(seed=3)
    for step in range(1, 7):
        obs, _, term, trunc, info = env.step(driver(obs))
        assert not bool(term.any())
        assert bool(trunc.all()) == (step == 6)
        assert not bool(trunc.any()) or step == 6
    assert torch.equal(info["episode/steps"], torch.full((8,), 6.0))


def test_leaving_the_road_terminates_with_the_failure_penalty(small_kwargs):
    """Full lock and throttle leave the road: terminated (not truncated), failure term paid."""
    env = S3DistilledBatchEnv(num_envs=4, autoreset_mode="disabled", **small_kwargs)
    env.reset(seed=5)
    ended = torch.zeros(4, dtype=torch.bool)
    for _ in range(200):
        _, reward, term, trunc, info = env.step(torch.tensor([[1.0, 1.0]]).expand(4, 2))
        fresh = term & ~ended
        assert not bool(trunc.any())
        assert bool((info["off_track"] | info["spin_out"])[fresh].all())
        assert torch.all(info["reward/failure"][fresh] == -env.config.task.reward.failure)
        ended |= term
        if bool(ended.all()):
            break
    assert bool(ended.all())


def test_same_step_final_obs_equals_the_disabled_observation(small_kwargs, driver):
    """SAME_STEP's final_obs and restarted obs equal DISABLED's obs and reset(mask) obs."""
    kw = dict(num_envs=8, max_episode_steps=7, seed=4, **small_kwargs)
    same = S3DistilledBatchEnv(**kw)
    disabled = S3DistilledVectorEnv(array_type="torch", **kw)
    obs_a, _ = same.reset(seed=4)
    obs_b, _ = disabled.reset(seed=4)
    ends = 0
    for _ in range(20):
        action = driver(obs_a)
        obs_a, _, term_a, trunc_a, info = same.step(action)
        obs_b, _, term_b, trunc_b, _ = disabled.step(action)
        done = term_b | trunc_b
        assert torch.equal(term_a, term_b) and torch.equal(trunc_a, trunc_b)
        assert torch.equal(info["_final_obs"], done)
        assert torch.equal(info["final_obs"], obs_b)
        if bool(done.any()):
            ends += 1
            obs_b, _ = disabled.reset(options={"reset_mask": done})
        assert torch.equal(obs_a, obs_b)
    assert ends >= 2


def test_vector_same_step_reports_final_obs_and_final_info(small_kwargs, driver):
    """The vector face in SAME_STEP mode puts the last obs and infos under final_* keys."""
    env = gym.make_vec("S3Distilled-v0", num_envs=5, max_episode_steps=3,
                       autoreset_mode="same_step", **small_kwargs)  # fmt: skip
    assert env.metadata["autoreset_mode"] == gym.vector.AutoresetMode.SAME_STEP
    obs, _ = env.reset(seed=1)
    for _ in range(3):
        obs, _, term, trunc, infos = env.step(driver(torch.from_numpy(obs)).numpy())
    done = term | trunc
    assert done.all()
    assert infos["final_obs"].shape == obs.shape and infos["_final_obs"].all()
    assert (infos["final_info"]["episode/steps"] == 3).all()
    assert not np.array_equal(infos["final_obs"], obs)  # obs is the first of the next episode
    assert (env.core.task.steps == 0).all()


def test_label_filter_only_yields_matching_scenarios(small_kwargs):
    """scenarios=[label] restricts every drawn scenario (over many resets) to that label."""
    from gym_s3.scenarios.labels import LABELS, label_mask

    full = S3DistilledBatchEnv(num_envs=2, **small_kwargs)
    env = S3DistilledBatchEnv(num_envs=64, scenarios=["sharp_turn"], max_episode_steps=2,
                              **small_kwargs)  # fmt: skip
    bit = label_mask(["sharp_turn"])
    assert 0 < env.core.pool.num_scenarios < full.core.pool.num_scenarios
    env.reset(seed=0)
    drawn = set()
    for _ in range(6):
        labels = env.core.pool.scenario_labels[env.core.task.scenario]
        assert bool(((labels & bit) != 0).all())
        drawn.update(env.core.task.scenario.tolist())
        env.step(torch.zeros(64, 2))
    assert len(drawn) > 1
    both = S3DistilledBatchEnv(num_envs=2, scenarios=["sharp_turn", "hard_braking"],
                               scenario_match="all", **small_kwargs)  # fmt: skip
    both_bits = label_mask(["sharp_turn", "hard_braking"])
    assert bool(((both.core.pool.scenario_labels & both_bits) == both_bits).all())
    assert "sharp_turn" in LABELS


def test_oracle_observation_reports_ice_under_the_wheels(ice_kwargs, driver):
    """Oracle mu_* features: 0.1 on the ice patch, 1.0 on asphalt, front wheels change first.

    One car starts on the patch, one before it (and drives onto it), one far from it.
    """
    from gym_s3.spec import feature_index

    env = S3DistilledBatchEnv(num_envs=3, obs_mode="oracle", autoreset_mode="disabled",
                              **ice_kwargs)  # fmt: skip
    pool = env.core.pool
    band = pool.layouts[0].bands[0]
    starts = pool.scenario_start
    inside = int(torch.nonzero((starts > band.s_start + 8) & (starts < band.s_start + 20))[0])
    before = int(torch.nonzero((starts > band.s_start - 30) & (starts < band.s_start - 15))[0])
    far = int(torch.nonzero((starts - band.s_start).abs() > 300)[0])
    obs, _ = env.reset(seed=0, options={"scenario": [inside, before, far]})
    mu = slice(feature_index("mu_fl", "oracle"), feature_index("mu_rr", "oracle") + 1)
    assert torch.allclose(obs[0, mu], torch.full((4,), 0.1))
    assert torch.allclose(obs[1, mu], torch.ones(4)) and torch.allclose(obs[2, mu], torch.ones(4))
    seen_front_first = False
    for _ in range(150):
        obs, *_ = env.step(driver(obs))
        fl, rl = obs[1, feature_index("mu_fl", "oracle")], obs[1, feature_index("mu_rl", "oracle")]
        seen_front_first |= bool(fl < 0.5 < rl)
        if bool((obs[1, mu] < 0.5).all()):
            break
    assert seen_front_first
    assert torch.allclose(obs[1, mu], torch.full((4,), 0.1))
    assert torch.allclose(obs[2, mu], torch.ones(4))


@pytest.mark.parametrize(
    ("backend", "obs_mode"), [("bicycle", "default"), ("trans", "default"), ("bicycle", "history")]
)
def test_cpu_subset_resets_equal_the_masked_all_rows_resets(
    small_kwargs, driver, backend, obs_mode
):
    """CPU start states built for the reset cars only equal the all-rows + where path exactly.

    (Learned backends prefill their attention caches in the start state, so this matters; the
    ``history`` observation keeps per-car step history that resets must clear row by row.)
    """
    import warnings

    from gym_s3 import dynamics

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # untrained weights are fine for an equivalence check
        shared = dynamics.make(backend).requires_grad_(False)
    envs = [S3DistilledBatchEnv(num_envs=12, max_episode_steps=4, backend=shared,
                                obs_mode=obs_mode, **small_kwargs) for _ in range(2)]  # fmt: skip
    envs[1].core._subset_resets = False
    obs = [env.reset(seed=9)[0] for env in envs]
    for _ in range(10):
        action = driver(obs[0])
        obs = [env.step(action)[0] for env in envs]
        assert torch.equal(obs[0], obs[1])
        for key, value in envs[0].core.car_tensors().items():
            assert torch.equal(value, envs[1].core.car_tensors()[key]), key
