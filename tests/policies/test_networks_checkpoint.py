"""Policy networks, the observation normaliser and policy checkpoints."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from gym_s3.errors import ActionError, CheckpointError
from gym_s3.spec import observation_size
from policies.checkpoint import load_policy, save_policy
from policies.networks import ActorNet, CriticNet, FastTanh, RunningNorm


def test_running_norm_matches_batch_statistics():
    """Merging batches gives the mean and (population) variance of their concatenation."""
    g = torch.Generator().manual_seed(0)
    batches = [
        torch.randn(n, 3, generator=g) * torch.tensor([1.0, 5.0, 0.1]) + 2 for n in (7, 50, 3)
    ]
    norm = RunningNorm(3)
    for b in batches:
        norm.update(b)
    allx = torch.cat(batches).double()
    assert torch.allclose(norm.mean, allx.mean(0), atol=1e-9)
    assert torch.allclose(norm.var, allx.var(0, unbiased=False), atol=1e-9)
    z = norm(allx.float())
    assert torch.allclose(z.mean(0), torch.zeros(3), atol=1e-5)


def test_running_norm_ignores_non_finite_rows_and_clips():
    """Rows with NaN do not poison the statistics; outputs are clipped to +-clip."""
    norm = RunningNorm(2, clip=3.0)
    norm.update(torch.tensor([[1.0, 1.0], [float("nan"), 0.0], [3.0, 3.0]]))
    assert norm.count.item() == 2 and torch.isfinite(norm.mean).all()
    assert norm(torch.tensor([[1e9, -1e9]])).tolist() == [[3.0, -3.0]]


def test_fast_tanh_matches_tanh_in_value_and_gradient():
    """FastTanh is tanh to float32 rounding, saturates to +-1, and back-propagates tanh's slope."""
    x = torch.cat([torch.linspace(-30.0, 30.0, 20001), torch.tensor([0.0, 1e-30, -1e-8])])
    x1, x2 = x.clone().requires_grad_(), x.clone().requires_grad_()
    y_fast, y_ref = FastTanh()(x1), torch.tanh(x2)
    assert (y_fast - y_ref).abs().max() < 3e-7
    assert y_fast[0] == -1.0 and y_fast[20000] == 1.0
    w = torch.randn(x.shape, generator=torch.Generator().manual_seed(0))
    (y_fast * w).sum().backward()
    (y_ref * w).sum().backward()
    assert (x1.grad - x2.grad).abs().max() < 1e-6
    assert x1.grad[10000] == pytest.approx(w[10000].item())  # slope 1 at 0


def test_outputs_stay_float32_when_the_hidden_layers_run_in_bfloat16():
    """Under bfloat16 autocast the actor's mean and the value still come out in float32.

    ``update_dtype="bfloat16"`` runs the hidden layers in bfloat16 (the hidden activation is
    bfloat16); the outputs are float32, within the rounding of 8-bit mantissas of the float32
    pass, and their gradients reach every layer.
    """
    torch.manual_seed(0)
    norm = RunningNorm(observation_size())
    actor = ActorNet(norm, observation_size(), (64, 64), init_log_std=-0.7)
    critic = CriticNet(norm, observation_size(), (64, 64))
    with torch.no_grad():
        actor.body[-1].weight.mul_(100.0)  # a trained-size mean, not the 0.01 init
    obs = torch.randn(256, observation_size())
    loc32, value32 = actor(obs)[0], critic(obs)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        hidden = actor.body[:-1](actor.norm(obs))
        loc16, value16 = actor(obs)[0], critic(obs)
        (loc16.sum() + value16.sum()).backward()
    assert hidden.dtype == torch.bfloat16
    assert loc16.dtype == torch.float32 and value16.dtype == torch.float32
    scale = loc32.abs().max().item()
    assert (loc16 - loc32).abs().max().item() < 0.03 * scale
    assert (loc16 - loc32).abs().max().item() > 0.0  # the hidden layers did run in bfloat16
    assert (value16 - value32).abs().max().item() < 0.03 * value32.abs().max().item()
    grads = [p.grad for p in actor.body.parameters()]
    assert all(g is not None and g.dtype == torch.float32 for g in grads)


def test_actor_deterministic_action_in_box():
    """The deterministic action is tanh(loc): always inside [-1, 1]."""
    actor = ActorNet(RunningNorm(4), 4, (8,))
    with torch.no_grad():
        actor.body[-1].bias.fill_(50.0)
    act = actor.act(torch.zeros(5, 4))
    assert act.shape == (5, 2) and (act.abs() <= 1.0).all() and (act > 0.99).all()


def _actor() -> ActorNet:
    torch.manual_seed(0)
    actor = ActorNet(RunningNorm(observation_size()), observation_size(), (16, 16))
    actor.norm.update(torch.randn(100, observation_size()) * 3)
    return actor


def test_policy_checkpoint_round_trip(tmp_path):
    """A saved policy loads (without TorchRL) and acts exactly like the original."""
    actor = _actor()
    path = save_policy(tmp_path / "p", actor, backend="ddm", obs_mode="default", training={"a": 1})
    policy = load_policy(path)
    obs = torch.randn(4, observation_size())
    assert torch.equal(policy.act(obs), actor.act(obs))
    out = policy.act(obs.numpy())
    assert isinstance(out, np.ndarray) and out.shape == (4, 2)
    assert policy.backend == "ddm" and policy.meta["training"] == {"a": 1}


def test_policy_checkpoint_refuses_mismatches(tmp_path):
    """Wrong observation size, another spec version and damaged weights are refused clearly."""
    actor = _actor()
    path = save_policy(tmp_path / "p", actor, backend="ddm", obs_mode="default", training={})
    policy = load_policy(path)
    with pytest.raises(ActionError, match="obs_mode='default'"):
        policy.act(torch.zeros(1, observation_size("oracle")))
    sidecar = json.loads(path.read_text())
    sidecar["spec_version"] = 999
    path.write_text(json.dumps(sidecar))
    with pytest.raises(CheckpointError, match="spec version"):
        load_policy(path)
    path2 = save_policy(tmp_path / "q", actor, backend="ddm", obs_mode="default", training={})
    weights = path2.with_suffix(".safetensors")
    weights.write_bytes(weights.read_bytes()[:-10])
    with pytest.raises(CheckpointError, match="damaged"):
        load_policy(path2)
