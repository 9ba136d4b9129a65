"""The privileged critic: the critic sees the friction under the wheels, the actor does not."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("torchrl")

from torch_helpers import one_torch_thread  # noqa: E402

from gym_s3.cli import main  # noqa: E402
from gym_s3.errors import ConfigError  # noqa: E402
from gym_s3.spec import observation_size  # noqa: E402
from policies.checkpoint import load_policy  # noqa: E402
from policies.config import preset  # noqa: E402
from policies.networks import ActorNet, RunningNorm  # noqa: E402

pytestmark = pytest.mark.timeout(300)

DEFAULT_F, ORACLE_F = observation_size("default"), observation_size("oracle")


def test_actor_reads_its_leading_features_and_ignores_the_privileged_ones():
    """Trailing (friction) features leave the action as it is; a leading feature changes it."""
    torch.manual_seed(0)
    actor = ActorNet(RunningNorm(DEFAULT_F), DEFAULT_F, (16, 16))
    with torch.no_grad():
        actor.body[-1].weight.normal_()  # the 0.01-gain head would hide small differences
    obs = torch.randn(5, DEFAULT_F)
    privileged = torch.cat([obs, torch.rand(5, ORACLE_F - DEFAULT_F)], dim=-1)
    assert torch.equal(actor.act(privileged), actor.act(obs))
    moved = obs.clone()
    moved[:, 0] += 1.0
    assert not torch.allclose(actor.act(moved), actor.act(obs))


@pytest.mark.parametrize("mode", ["oracle", "history"])
def test_privileged_critic_is_refused_for_an_oracle_or_history_actor(mode):
    """The option is for default-observation actors only: refused, naming what to change."""
    with pytest.raises(ConfigError, match="obs_mode='default'"):
        preset("tiny", obs_mode=mode, privileged_critic=True)
    assert preset("tiny", obs_mode=mode).env_obs_mode == mode
    with pytest.raises(ConfigError, match="default, oracle, history"):
        preset("tiny", obs_mode="pixels")
    assert preset("tiny", privileged_critic=True).env_obs_mode == "oracle"
    assert preset("tiny").env_obs_mode == "default"


def test_training_with_a_privileged_critic_saves_a_default_observation_policy(tmp_path, capsys):
    """``s3 train --privileged-critic 1`` saves an actor of the default observation.

    The critic reads the oracle observation; the saved policy reads the default one, loads as a
    default-observation policy and acts on it; a switch that is not 0 or 1 is refused.
    """
    from policies.ppo import build_modules

    cfg = preset("tiny", privileged_critic=True)
    actor_net, critic_net, _, _ = build_modules(cfg)
    assert critic_net.body[0].in_features == ORACLE_F and actor_net.obs_size == DEFAULT_F
    assert critic_net.norm is not actor_net.norm
    quick = ["--preset", "tiny", "--no-progress", "--num-envs", "16", "--rollout-steps", "16",
             "--total-frames", "512", "--eval-every", "1", "--eval-episodes", "4",
             "--checkpoint-every", "0"]  # fmt: skip
    with one_torch_thread():
        assert main(["train", "--out", str(tmp_path), *quick, "--privileged-critic", "1"]) == 0
    policy = load_policy(tmp_path / "policy_final.json")
    assert policy.obs_mode == "default" and policy.meta["obs_size"] == DEFAULT_F
    assert policy.meta["training"]["privileged_critic"] is True
    assert policy.actor.norm.count.item() == 512 and policy.actor.norm.mean.shape == (DEFAULT_F,)
    assert policy.act(torch.zeros(1, DEFAULT_F)).shape == (1, 2)
    with pytest.raises(SystemExit) as stop:  # argparse refuses it before any work
        main(["train", "--out", str(tmp_path / "bad"), *quick, "--privileged-critic", "maybe"])
    assert stop.value.code == 2
    assert "expected 1 or 0" in capsys.readouterr().err


def test_the_privileged_critic_normaliser_sees_the_wheel_friction():
    """One collected batch: the critic's normaliser has the friction features, the actor's not."""
    from torchrl.collectors import Collector

    from gym_s3.distributed import DistContext
    from policies.ppo import build_modules, make_train_env, update_norms

    cfg = preset("tiny", privileged_critic=True)
    with one_torch_thread():
        env = make_train_env(cfg)
        actor_net, critic_net, actor, _ = build_modules(cfg)
        collector = Collector(env, actor, frames_per_batch=cfg.frames_per_batch,
                              total_frames=cfg.frames_per_batch)  # fmt: skip
        data = next(iter(collector))
        collector.shutdown()
    assert data["observation"].shape[-1] == ORACLE_F
    update_norms(actor_net, critic_net, data["observation"], DistContext())
    mu = critic_net.norm.mean[DEFAULT_F:]
    assert ((mu > 0.05) & (mu < 1.5)).all(), mu  # friction coefficients, not zero padding
    assert torch.allclose(critic_net.norm.mean[:DEFAULT_F], actor_net.norm.mean)
