"""The policies shipped in ``policies/assets``: present, small, loadable, and (slow) they drive."""

from __future__ import annotations

import json

import pytest
import torch

from gym_s3.errors import ConfigError
from gym_s3.rewards import RewardWeights
from gym_s3.spec import SPEC_VERSION, observation_size
from policies.checkpoint import SHIPPED_POLICIES, load_policy, shipped_policy, training_dynamics
from policies.config import config_to_dict, preset

MAX_BYTES = 2 * 1024 * 1024
#: the shipped ensembles' member counts (README, "Results of the shipped policies"); absent: a
#: single policy
SHIPPED_MEMBERS = {"ddm": 5, "trans": 5, "dytr": 6, "oracle": 6}
#: the recipes a shipped ensemble's members were trained with, as (preset, settings that differ
#: from it); absent: the policy's own preset. The taught recipe (README, "Results of the shipped
#: policies") is the dytr preset's pool and starts with the scripted expert as a teacher: ddm
#: through ddm_slow_starts (the same settings on ddm), trans and oracle as the dytr preset with
#: the backend or the observation changed. dytr: three seeds of its preset and three taught.
#: oracle: three taught seeds and three taught with the pedal error weighed by the grip (round 40).
#: the shipped ddm's members trained in an ensemble of three ddm distillation seeds (the expert data
#: plus four policy-rollout sets): seeds 0-2 name them in their records by the paths they had on
#: the training machine, seeds 3-4 (round 35) by their shipped set name, ddm:ice; the same files
#: ship as gym_s3/assets/dynamics/ice/s{0,1,2}/ddm with these weights (every member's
#: dynamics_sources holds the hashes)
ICE_MODELS = ("/work/runs/r32/dyn_ice/ddm", "/work/runs/r32/dyn_ice_s1/ddm",
              "/work/runs/r32/dyn_ice_s2/ddm")  # fmt: skip
ICE_WEIGHTS_SHA256 = (
    "7997e06dd43adc87f14084dda375e4a9a4083127e1ac5f316fd50637d9c3a536",
    "7809f915e1d6296c2b291391dd3df02eac5ceb1974cd98d2fee94dc3568fad1c",
    "d081b722c7f5ddbce947f8ed57bfdd254b0a744fff5079046e7c8f01cb04bdb0",
)
ICE_DATASET = "d731c4ca806cf07484d362eb4ae1991d756121f0397a6c1d2cbfe64cad5162ac"
MEMBER_PRESETS = {
    "ddm": (
        (
            "ddm_slow_starts",
            {
                "imitation": 10.0,
                "dynamics_checkpoint": ICE_MODELS[0],
                "dynamics_ensemble": ICE_MODELS[1:],
            },
        ),
        ("ddm_slow_starts", {"imitation": 10.0, "dynamics_checkpoint": "ddm:ice"}),
    ),  # fmt: skip
    "trans": (("dytr", {"backend": "trans", "imitation": 10.0}),),
    "dytr": (("dytr", {}), ("dytr", {"imitation": 10.0})),
    "oracle": (
        ("dytr", {"obs_mode": "oracle", "imitation": 10.0}),
        ("dytr", {"obs_mode": "oracle", "imitation": 10.0, "imitation_grip_power": 2.0}),
    ),
}
#: what the members of a shipped ensemble may vary: the seed
ENSEMBLE_VARIES = {"seed"}


@pytest.mark.parametrize("name", SHIPPED_POLICIES)
def test_shipped_policy_is_small_loadable_and_made_by_its_preset(name):
    """Each shipped policy is <= 2 MB, loads strictly and was trained with its preset's settings."""
    path = shipped_policy(name)
    weights = path.with_suffix(".safetensors")
    assert path.is_file() and weights.is_file(), f"missing: `s3 train --preset {name} --ship`"
    assert weights.stat().st_size + path.stat().st_size <= MAX_BYTES
    policy = load_policy(path)
    cfg = preset(name)
    assert policy.backend == cfg.backend and policy.obs_mode == cfg.obs_mode
    training = policy.meta["training"]
    # every setting the checkpoint recorded is its recipe's: the preset's, or for an ensemble of
    # other recipes (MEMBER_PRESETS) one of those (settings added to PPOConfig after a policy was
    # trained are absent from its record and take their default, which is off)
    recipes = [preset(p, **kw) for p, kw in MEMBER_PRESETS.get(name, ((name, {}),))]
    shared = [
        {k: v for k, v in config_to_dict(c).items() if k in training and k != "reward"}
        for c in recipes
    ]
    assert any({k: training[k] for k in rec} == rec for rec in shared), shared
    assert policy.meta["hidden"] == list(cfg.hidden)
    # an ensemble (`s3 ensemble`) records what its members share under "training" and each
    # member's own settings: they may differ from their recipe only in the seed
    assert policy.meta.get("members") == SHIPPED_MEMBERS.get(name)
    assert len(policy.meta.get("member_training", [])) == (SHIPPED_MEMBERS.get(name) or 0)
    used = set()
    for member in policy.meta.get("member_training", []):
        differs = [
            {
                k
                for k, v in config_to_dict(c).items()
                if k in member and k != "reward" and member[k] != v
            }
            for c in recipes
        ]
        fits = [i for i, d in enumerate(differs) if d <= ENSEMBLE_VARIES]
        assert fits, f"a member was trained with other {min(differs, key=len)}"
        used.add(fits[0])
        assert RewardWeights.from_dict(member["reward"]) == recipes[fits[0]].reward
    if policy.meta.get("member_training"):
        assert used == set(range(len(recipes))), "a member recipe is missing from the ensemble"
    if "reward" in training:  # the 24 M bicycle baseline predates saving the weights
        # terms added after a policy was trained take their default (off) weight
        shipped = RewardWeights.from_dict(training["reward"])
        assert shipped in [c.reward for c in recipes], "shipped with other reward weights"
    assert json.loads(path.read_text())["spec_version"] == SPEC_VERSION
    obs = torch.zeros(3, observation_size(cfg.obs_mode))
    act = policy.act(obs)
    assert act.shape == (3, 2) and bool(torch.isfinite(act).all())


def test_the_shipped_ddm_trained_in_the_shipped_ice_models():
    """The three models the shipped ddm learned in ship with it, and drive as one ensemble."""
    import gymnasium as gym

    from gym_s3 import checkpoints, dynamics

    stems = [dynamics.default_checkpoint(f"ice/s{k}/ddm") for k in range(3)]
    for stem, sha in zip(stems, ICE_WEIGHTS_SHA256, strict=True):
        source = dynamics.source(stem)
        assert (source["sha256"], source["dataset_hash"]) == (sha, ICE_DATASET)
        assert checkpoints.read_sidecar(stem)["meta"]["backend"] == "ddm"
    # its record names them by content, so the gap and users find its training env by name
    assert training_dynamics(load_policy(shipped_policy("ddm")).meta) == tuple(map(str, stems))
    env = gym.make("S3Distilled-v0", backend="ddm", num_envs=6, checkpoint="ddm:ice")
    assert env.unwrapped.config.checkpoint == tuple(map(str, stems))
    obs, _ = env.reset(seed=0)
    obs, *_ = env.step(torch.zeros(6, 2))
    assert len(env.unwrapped.core.backends) == 3 and bool(torch.isfinite(obs).all())
    env.close()
    # the other shipped policies trained in their backend's single shipped model
    for name in ("trans", "dytr", "oracle", "bicycle"):
        policy = load_policy(shipped_policy(name))
        assert training_dynamics(policy.meta) == (policy.backend,)


#: the weights hashes of the oracle's three steering members: the three taught seeds shipped as
#: the oracle until round 40 (``git show 08d474e:policies/assets/oracle.json``, member_sources)
ORACLE_STEERING_SHA256 = (
    "4917fbcf88534defe12661749eb0bd791d1f825383eb61db6909f3f8b7af6ed3",
    "157024ca9edb22290a27926d1d904e1403c9c2cf2716a2c964adc22260dfcc3b",
    "6b4f224983d926780924ae1fb2a9b9677e2b5dc1b50e1f4f2513fc813484c601",
)


def test_the_shipped_oracle_steers_with_its_plain_members_and_pedals_with_the_grip_weighted():
    """The shipped oracle splits its action axes between two groups of taught members.

    Its steering is the mean of its three plain taught members' pre-squash outputs (the previous
    oracle's three), its pedals that of the three taught with ``imitation_grip_power = 2``
    (README, experiments.md round 40).
    """
    policy = load_policy(shipped_policy("oracle"))
    powers = [m.get("imitation_grip_power", 0.0) for m in policy.meta["member_training"]]
    assert powers == [0.0, 0.0, 0.0, 2.0, 2.0, 2.0]
    sources = [m["sha256"] for m in policy.meta["member_sources"]]
    assert tuple(sources[:3]) == ORACLE_STEERING_SHA256
    third = 1.0 / 3.0
    expected = torch.tensor([[third, 0.0]] * 3 + [[0.0, third]] * 3)
    torch.testing.assert_close(policy.actor.axis_weights, expected)


def test_unknown_shipped_policy_lists_the_shipped_ones():
    """Asking for a policy that is not shipped names the valid ones."""
    with pytest.raises(ConfigError, match="shipped: bicycle, ddm"):
        shipped_policy("ppo")


@pytest.mark.timeout(600)
def test_shipped_ddm_policy_drives_off_in_the_standin():
    """Fast sibling of the lap test below: the first 6 s of the Putnam lap in the stand-in.

    Trained only in S3Distilled-v0, the shipped DDM policy pulls away from a standing start in
    S3BeamNG-v0 (open stand-in, eager reference physics) and follows the track on asphalt: no
    step off the road, mean |cte| <= 0.5 m, at least 1.5 % of the lap (43 m) in 120 steps
    (measured 2026-12-03: 0.16 m and 5.7 % in 200 steps; a policy that does not drive stays at 0).
    """
    from policies.evaluate import evaluate_beamng

    policy = load_policy(shipped_policy("ddm"))
    (res,) = evaluate_beamng(policy, surfaces=("asphalt",), ice_patches=(0,), max_steps=120,
                             fast=False, progress=False, expert=False)  # fmt: skip
    assert res.metrics["steps"] == 120, res.terminated_by
    assert res.metrics["off_track_steps"] == 0
    assert res.metrics["cte_mean"] <= 0.5
    assert res.metrics["completion"] >= 0.015, res.metrics


@pytest.mark.slow
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("ice_patches", [0, 4])
def test_shipped_ddm_policy_completes_a_putnam_lap_in_the_standin(ice_patches):
    """Acceptance: the shipped DDM policy completes a Putnam Park lap in the stand-in.

    Trained only in S3Distilled-v0, it drives a full lap in S3BeamNG-v0 (open stand-in) on asphalt
    without leaving the road, mean |cte| <= 0.5 m, with and without ice patches.
    """
    from policies.evaluate import evaluate_beamng

    (res,) = evaluate_beamng(load_policy(shipped_policy("ddm")), surfaces=("asphalt",),
                             ice_patches=(ice_patches,), progress=False, expert=False)  # fmt: skip
    assert res.terminated_by == "completed", res.terminated_by
    assert res.metrics["off_track_steps"] == 0
    assert res.metrics["cte_mean"] <= 0.5
