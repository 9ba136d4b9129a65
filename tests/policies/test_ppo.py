"""PPO with TorchRL in S3Distilled-v0."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
import torch

pytest.importorskip("torchrl")

from gym_s3 import dynamics  # noqa: E402
from policies.checkpoint import load_policy  # noqa: E402
from policies.config import PRESETS, preset  # noqa: E402
from policies.ppo import build_modules, train  # noqa: E402

pytestmark = pytest.mark.timeout(600)


def test_gae_bootstraps_through_truncation_not_termination():
    """A time-out bootstraps from V(next); a termination does not (the truncation contract)."""
    from tensordict import TensorDict
    from torchrl.objectives.value import GAE

    _, critic_net, _, critic = build_modules(preset("tiny"))
    with torch.no_grad():
        for p in critic_net.body.parameters():
            p.zero_()
        critic_net.body[-1].bias.fill_(1.0)  # V(s) = 1 everywhere
    obs = torch.zeros(2, 1, 38)
    flags = {"terminated": torch.tensor([[[False]], [[True]]]),
             "truncated": torch.tensor([[[True]], [[False]]])}  # fmt: skip
    done = flags["terminated"] | flags["truncated"]
    td = TensorDict(
        {"observation": obs, "next": {"observation": obs, "reward": torch.zeros(2, 1, 1),
                                      "done": done, **flags}},
        batch_size=(2, 1),
    )  # fmt: skip
    GAE(gamma=0.5, lmbda=1.0, value_network=critic, average_gae=False)(td)
    adv = td["advantage"].flatten().tolist()
    assert adv[0] == pytest.approx(0.5 * 1.0 - 1.0)  # truncated: gamma * V(next) - V
    assert adv[1] == pytest.approx(0.0 - 1.0)  # terminated: no bootstrap


def test_tiny_training_run_writes_a_loadable_policy(tmp_path):
    """The 'tiny' preset trains end to end, logs finite losses and saves a loadable policy."""
    cfg = preset("tiny")
    result = train(cfg, tmp_path, progress=False)
    assert result.frames >= cfg.total_frames and result.iterations == math.ceil(
        cfg.total_frames / cfg.frames_per_batch
    )
    for row in result.history:
        assert all(math.isfinite(v) for v in row.values())
    policy = load_policy(result.checkpoint)
    assert policy.backend == "bicycle" and policy.meta["training"]["frames"] == result.frames
    assert policy.actor.norm.count.item() == result.frames  # normaliser saw every frame
    shipped = json.loads(Path(f"{dynamics.default_checkpoint('bicycle')}.json").read_text())
    assert policy.meta["training"]["dynamics_sources"] == [
        {"file": "bicycle.json", "sha256": shipped["weights"]["sha256"],
         "dataset_hash": shipped["meta"]["dataset_hash"]}
    ]  # fmt: skip
    assert (tmp_path / "train_summary.json").exists()
    assert list((tmp_path / "logs").rglob("*.csv")) or list((tmp_path / "logs").rglob("*"))


def test_presets_cover_every_backend_and_oracle():
    """There is a preset per backend and an oracle preset with oracle observations."""
    assert {"bicycle", "ddm", "trans", "dytr", "oracle"} <= set(PRESETS)
    assert PRESETS["oracle"].obs_mode == "oracle"
    for name in ("bicycle", "ddm", "trans", "dytr"):
        assert PRESETS[name].backend == name


def test_fine_tune_starts_from_the_given_policy_and_warms_the_critic_up_first(tmp_path):
    """``init_policy`` loads actor and normaliser; ``critic_warmup`` iterations leave the actor be.

    Two warm-up iterations out of two: the actor's layers come out bit-equal to the start policy's
    (the critic trained, the normaliser kept counting). Without the warm-up they move.
    """
    from dataclasses import replace

    base = train(preset("tiny"), tmp_path / "base", progress=False)
    start = load_policy(base.checkpoint)
    fine = replace(preset("tiny"), init_policy=str(base.checkpoint), total_frames=2048, seed=3)
    # a noise schedule must wait for the warm-up too (log_std is one of the actor's weights)
    frozen = train(replace(fine, critic_warmup=2, final_std=0.05), tmp_path / "frozen",
                   progress=False)  # fmt: skip
    moved = train(fine, tmp_path / "moved", progress=False)
    weights = {k: v for k, v in start.actor.state_dict().items() if not k.startswith("norm.")}
    for name, value in weights.items():
        assert torch.equal(frozen.actor_net.state_dict()[name], value), name
    assert frozen.actor_net.norm.count.item() == start.actor.norm.count.item() + frozen.frames
    assert any(not torch.equal(moved.actor_net.state_dict()[k], v) for k, v in weights.items())


def test_fine_tune_refuses_a_policy_of_another_observation_mode(tmp_path):
    """An ``init_policy`` whose observations differ from the run's is refused, naming both."""
    from dataclasses import replace

    from gym_s3.errors import ConfigError

    base = train(preset("tiny"), tmp_path / "base", progress=False)
    oracle = replace(preset("tiny"), obs_mode="oracle", init_policy=str(base.checkpoint))
    with pytest.raises(ConfigError, match="obs_mode 'default'.*'oracle'"):
        train(oracle, tmp_path / "oracle", progress=False)


def test_reward_weights_reach_the_task_and_round_trip_through_the_checkpoint_dict():
    """``s3 train --reward`` replaces single weights, the env's task gets them, JSON keeps them."""
    from gym_s3.errors import ConfigError
    from gym_s3.rewards import RewardWeights
    from policies.cli import parse_reward
    from policies.config import config_from_dict, config_to_dict, preset

    weights = parse_reward(["precision=0.25", "cross_track=0.4"])
    assert (weights.precision, weights.cross_track, weights.alive) == (0.25, 0.4, 0.3)
    config = preset("ddm", reward=weights)
    assert config.env_kwargs()["task"].reward == weights
    back = config_from_dict(json.loads(json.dumps(config_to_dict(config))))
    assert back == config
    for bad in (["precision"], ["precision=x"], ["presicion=1"]):
        with pytest.raises(ConfigError):
            parse_reward(bad)
    base = RewardWeights(precision=0.25, speed=0.07)  # a preset's recipe: kept but for the item
    weights = parse_reward(["cross_track=0.4"], base)
    assert (weights.precision, weights.speed, weights.cross_track) == (0.25, 0.07, 0.4)


def test_dynamics_ensemble_reaches_the_env_and_round_trips():
    """``s3 train --dynamics-ensemble`` lists the first model and the others for the env."""
    from gym_s3.cli import build_parser
    from policies.cli import train_config
    from policies.config import config_from_dict, config_to_dict

    argv = ["train", "--preset", "dytr", "--dynamics-ensemble", "runs/a/dytr", "runs/b/dytr"]
    config = train_config(build_parser().parse_args(argv))
    assert config.dynamics_ensemble == ("runs/a/dytr", "runs/b/dytr")
    assert config.env_kwargs()["checkpoint"] == ("dytr", "runs/a/dytr", "runs/b/dytr")
    own = train_config(build_parser().parse_args([*argv, "--dynamics-checkpoint", "runs/c"]))
    assert own.env_kwargs()["checkpoint"] == ("runs/c", "runs/a/dytr", "runs/b/dytr")
    assert config_from_dict(json.loads(json.dumps(config_to_dict(config)))) == config
    single = train_config(build_parser().parse_args(["train", "--dynamics-checkpoint", "runs/c"]))
    assert single.env_kwargs()["checkpoint"] == "runs/c"


def test_a_policy_names_its_dynamics_models_by_content(tmp_path):
    """``training.dynamics_sources``: each model's file and weights hash, in the models' order."""
    from policies.ppo import dynamics_sources

    copy = tmp_path / "ddm_copy"
    for suffix in (".json", ".safetensors"):
        shutil.copy(f"{dynamics.default_checkpoint('ddm')}{suffix}", f"{copy}{suffix}")
    sources = dynamics_sources(preset("ddm", dynamics_ensemble=(str(copy),)))
    assert [s["file"] for s in sources] == ["ddm.json", "ddm_copy.json"]
    assert sources[0]["sha256"] == sources[1]["sha256"]  # the same weights, another file
    (other,) = dynamics_sources(preset("dytr"))
    assert other["file"] == "dytr.json" and other["sha256"] != sources[0]["sha256"]
    (own,) = dynamics_sources(preset("ddm", dynamics_checkpoint=str(copy)))
    assert own["file"] == "ddm_copy.json"
