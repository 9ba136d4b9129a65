"""The exploration-noise schedule of PPO (``PPOConfig.final_std``)."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
import torch

pytest.importorskip("torchrl")

from gym_s3.errors import ConfigError  # noqa: E402
from policies.checkpoint import load_policy  # noqa: E402
from policies.config import preset  # noqa: E402
from policies.ppo import noise_cap, train  # noqa: E402

pytestmark = pytest.mark.timeout(600)


def test_noise_cap_falls_log_linearly_from_the_start_to_final_std():
    """Start at the actor's own noise, end at ``final_std``, geometric mean half way."""
    start = torch.log(torch.tensor([0.5, 0.2]))
    assert torch.allclose(noise_cap(start, 0.02, 0.0), start)
    assert torch.allclose(noise_cap(start, 0.02, 1.0).exp(), torch.tensor([0.02, 0.02]))
    half = noise_cap(start, 0.02, 0.5).exp()
    assert torch.allclose(half, torch.tensor([math.sqrt(0.5 * 0.02), math.sqrt(0.2 * 0.02)]))
    assert torch.allclose(noise_cap(start, 0.02, 3.0), noise_cap(start, 0.02, 1.0))  # clamped


def test_final_std_shrinks_the_noise_every_iteration_and_ships_it(tmp_path):
    """With ``final_std`` the logged noise never exceeds the cap and ends at ``final_std``.

    Without it (the control run) the tiny run's noise stays near its initial 0.5: the schedule,
    not the few gradient steps, is what brings it down.
    """
    cfg = replace(preset("tiny"), total_frames=4096, rollout_steps=16, num_envs=64, eval_every=0)
    capped = train(replace(cfg, final_std=0.02), tmp_path / "capped", progress=False)
    free = train(cfg, tmp_path / "free", progress=False)
    start = math.exp(cfg.init_log_std)
    n = len(capped.history)
    assert n >= 4
    for i, row in enumerate(capped.history, start=1):
        cap = math.exp(math.log(start) + (math.log(0.02) - math.log(start)) * min(i / n, 1.0))
        # a few gradient steps barely move the noise (control run), so the cap binds each time
        assert row["std_steer"] == pytest.approx(cap, rel=1e-4), i
        assert row["std_accel"] == pytest.approx(cap, rel=1e-4), i
    assert capped.history[-1]["std_steer"] == pytest.approx(0.02, rel=1e-4)
    saved = load_policy(capped.checkpoint).actor.log_std.exp()
    assert torch.allclose(saved, torch.tensor([0.02, 0.02]), rtol=1e-4)
    assert min(row["std_steer"] for row in free.history) > 0.4


@pytest.mark.parametrize("bad", [0.0, -0.1, 0.005, 1.5, float("nan")])
def test_final_std_outside_its_range_is_refused_by_name(bad):
    """Zero, negative, below the actor's clamp (exp(-5)), above one and NaN are refused."""
    with pytest.raises(ConfigError, match="final_std"):
        replace(preset("tiny"), final_std=bad)
