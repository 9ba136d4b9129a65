"""The PPO training pool covers every surface, and the robustness options perturb (or are off)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

pytest.importorskip("torchrl")

from gym_s3.errors import ConfigError  # noqa: E402
from gym_s3.tracks.layouts import sample_layout  # noqa: E402
from gym_s3.tracks.registry import cached_track  # noqa: E402
from gym_s3.tracks.surfaces import SURFACES  # noqa: E402
from policies.config import POOL_NAMES, preset  # noqa: E402
from policies.pools import ALL_SURFACES, TRAINING_POOLS  # noqa: E402
from policies.ppo import make_train_env  # noqa: E402
from policies.robustness import ObservationNoise  # noqa: E402


def test_all_surfaces_pool_has_every_surface_full_laps_corner_ice_and_transitions():
    """200 draws on Putnam: all six bases, full-ice and full-snow laps, long full-width ice."""
    assert set(POOL_NAMES) == set(TRAINING_POOLS)
    putnam = cached_track("putnam")
    rng = np.random.default_rng(0)
    layouts = [sample_layout(putnam, ALL_SURFACES, rng) for _ in range(200)]
    assert {lay.base for lay in layouts} == set(SURFACES)
    assert any(lay.base == "ice" and not lay.bands for lay in layouts)
    assert any(lay.base == "snow" and not lay.bands for lay in layouts)
    transitions = [b for lay in layouts if lay.base.startswith("asphalt") for b in lay.bands
                   if b.length >= 150.0 and b.d_max - b.d_min >= 8.9]  # fmt: skip
    assert len(transitions) >= 10
    assert sum(len(lay.bands) >= 3 for lay in layouts) >= 30  # the corner-ice option


def test_default_ice_pool_is_the_default_with_full_ice_laps_mixed_in():
    """400 draws on Putnam: 15 % (+-5) full-ice laps, the rest the default's bases and patches."""
    from gym_s3.envs.config import DEFAULT_LAYOUT

    putnam = cached_track("putnam")
    rng = np.random.default_rng(1)
    layouts = [sample_layout(putnam, TRAINING_POOLS["default_ice"], rng) for _ in range(400)]
    full_ice = [lay for lay in layouts if lay.base == "ice"]
    assert 0.10 < len(full_ice) / len(layouts) < 0.20
    assert all(not lay.bands for lay in full_ice)
    rest = [lay for lay in layouts if lay.base != "ice"]
    assert {lay.base for lay in rest} == set(DEFAULT_LAYOUT.base)
    assert max(len(lay.bands) for lay in rest) == DEFAULT_LAYOUT.patches.count[1]


def test_ice_transitions_pool_has_transitions_both_ways():
    """400 draws on Putnam: ice laps with a long dry stretch and dry laps with a long ice stretch.

    Each direction in 5-12 % of the layouts (7.5 % drawn), every stretch full width and 150-400 m
    long; full-ice laps stay at default_ice's 15 % (+-5).
    """
    putnam = cached_track("putnam")
    rng = np.random.default_rng(2)
    layouts = [sample_layout(putnam, TRAINING_POOLS["ice_transitions"], rng) for _ in range(400)]

    def stretches(lay):
        return [b for b in lay.bands if b.length >= 150.0 and b.d_max - b.d_min >= 8.9]

    ice_to_dry = [lay for lay in layouts if lay.base == "ice" and stretches(lay)]
    dry_to_ice = [lay for lay in layouts if lay.base != "ice" and stretches(lay)]
    assert all(b.surface in ("asphalt", "asphalt_wet") for lay in ice_to_dry for b in lay.bands)
    assert all(b.surface == "ice" for lay in dry_to_ice for b in stretches(lay))
    assert {lay.base for lay in dry_to_ice} <= {"asphalt", "asphalt_wet", "gravel", "snow"}
    assert 0.05 < len(ice_to_dry) / len(layouts) < 0.12
    assert 0.05 < len(dry_to_ice) / len(layouts) < 0.12
    assert all(b.length <= 400.0 for lay in ice_to_dry + dry_to_ice for b in stretches(lay))
    full_ice = [lay for lay in layouts if lay.base == "ice" and not lay.bands]
    assert 0.10 < len(full_ice) / len(layouts) < 0.20


def test_ppo_env_gets_the_pool_and_noise_when_asked_and_not_by_default():
    """The pool, friction noise and standing starts when asked; none of them by default.

    The default is the recipe measured better at the shipped budget.
    """
    cfg = preset("tiny", num_envs=8, pool="all_surfaces", obs_noise=0.01, friction_noise=0.15,
                 start_from_rest=0.2)  # fmt: skip
    env = make_train_env(cfg)
    core = env.base_env.core
    task = core.task.config
    assert (task.friction_noise, task.start_from_rest) == (0.15, 0.2)
    assert core.config.scenario.layout is ALL_SURFACES
    assert isinstance(env.transform, ObservationNoise)
    plain = make_train_env(preset("tiny", num_envs=8))
    assert not hasattr(plain, "transform")
    assert plain.core.task.config.friction_noise == 0.0
    assert plain.core.task.config.start_from_rest == 0.0
    with pytest.raises(ConfigError, match="training pool"):
        preset("tiny", pool="ice_only")
    with pytest.raises(ConfigError, match="obs_noise"):
        preset("tiny", obs_noise=-0.1)


def test_observation_noise_perturbs_at_the_stated_scale_and_clean_env_is_untouched():
    """Same seed: noisy minus clean observations have std ~ 0.05 of each feature's half range."""
    clean = make_train_env(preset("tiny", num_envs=256, obs_noise=0.0))
    noisy = make_train_env(preset("tiny", num_envs=256, obs_noise=0.05))
    a, b = clean.reset(), noisy.reset()
    diff = b["observation"] - a["observation"]
    ratio = diff.std(0) / noisy.transform.scale
    assert torch.all((ratio > 0.8) & (ratio < 1.2))
    action = torch.zeros(256, 2)
    a = clean.step(a.set("action", action))["next", "observation"]
    b = noisy.step(b.set("action", action))["next", "observation"]
    assert (b - a).abs().mean() > 0.01 * noisy.transform.scale.mean()


def test_action_delay_feeds_the_env_actions_d_steps_late_and_is_off_by_default():
    """Car i's env sees the action of step t - d_i (zeros before it), the data the policy's own.

    A partial reset clears only the reset cars' history.
    """
    assert preset("tiny").action_delay == 0
    env = make_train_env(preset("tiny", num_envs=6, action_delay=2, obs_noise=0.0))
    td = env.reset()  # draws each car's delay
    delay = env.transform.delay.clone()
    assert set(delay.tolist()) <= {0, 1, 2} and len(set(delay.tolist())) > 1
    for t in range(4):
        td["action"] = torch.full((6, 2), 0.1 * (t + 1))
        out = env.step(td)
        applied = env.base_env.core.task.prev_action[:, 1]
        expected = torch.clamp(0.1 * (t + 1 - delay), min=0.0)
        assert torch.allclose(applied, expected.to(applied.dtype), atol=1e-6)
        assert torch.allclose(out["action"][:, 1], torch.full((6,), 0.1 * (t + 1)))
        td = out["next"]
    reset = torch.zeros(6, 1, dtype=torch.bool)
    reset[0] = True
    env.transform._reset(td.set("_reset", reset), td)
    assert env.transform._history[0].abs().sum() == 0 and env.transform._history[1:].abs().sum() > 0
    with pytest.raises(ConfigError, match="action_delay"):
        preset("tiny", action_delay=-1)
