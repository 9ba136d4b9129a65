"""The scripted expert as a teacher inside PPO (``--imitation``): its labels and their pull."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

pytest.importorskip("torchrl")

from torch_helpers import one_torch_thread  # noqa: E402

from gym_s3.errors import ConfigError  # noqa: E402
from policies.config import preset  # noqa: E402
from policies.imitation import (  # noqa: E402
    EXPERT_ACTION,
    EXPERT_GRIP,
    GRIP_FLOOR,
    ExpertLabels,
    imitation_errors,
    imitation_loss,
)
from policies.networks import ActorNet, RunningNorm  # noqa: E402

pytestmark = pytest.mark.timeout(300)


def _labelled_env(num_envs: int, max_episode_steps: int):
    from torchrl.envs import TransformedEnv

    from gym_s3.adapters.torchrl import make_torchrl_env

    base = make_torchrl_env(num_envs=num_envs, backend="bicycle", tracks=("procedural:301",),
                            seed=0, max_episode_steps=max_episode_steps)  # fmt: skip
    return TransformedEnv(base, ExpertLabels(seed=0))


def test_driving_the_labels_tracks_the_line_through_resets():
    """Cars driven by their own labels track as the expert does, across resets.

    The label must be the expert's action for the state the observation shows: labels one step
    late or with the steering's sign flipped fail: the steering (pure pursuit, stateless) equals
    a fresh expert's on the state the env holds, after every step and reset, and the cars stay
    on the road. Episodes of 60 steps from starts 0.5 m off the line end and restart every 3 s.
    """
    from policies.expert_driver import expert_controller

    with one_torch_thread():
        env = _labelled_env(32, 60)
        core = env.base_env.core
        td = env.reset()
        assert td[EXPERT_ACTION].shape == (32, 2)
        ends = []
        for _ in range(240):
            ego = core.state.ego()
            fresh = expert_controller(1, 32).act(ego, core.task.measure(ego), core.task)
            assert torch.allclose(td[EXPERT_ACTION][:, 0], fresh[:, 0], atol=1e-6)
            td["action"] = td[EXPERT_ACTION]
            out, td = env.step_and_maybe_reset(td)
            done = out["next", "done"].reshape(-1)
            if bool(done.any()):
                ends.append(out["next", "episode_stats"][done])
    stats = torch.cat(ends)
    assert stats.shape[0] >= 100  # about four episodes per car
    off_track, spin_out = stats[:, 6], stats[:, 7]
    assert float(off_track.sum() + spin_out.sum()) == 0.0
    assert float(stats[:, 0].mean()) < 0.25  # mean |cte| [m], starts up to 0.5 m off the line


def test_a_partial_reset_keeps_the_other_cars_labels_and_integrals():
    """Reset two cars: their labels are fresh, the other cars' labels and integrals unchanged."""
    with one_torch_thread():
        env = _labelled_env(6, 600)
        td = env.reset()
        for _ in range(20):
            td["action"] = td[EXPERT_ACTION]
            _, td = env.step_and_maybe_reset(td)
        labels = env.transform
        before, integral = td[EXPERT_ACTION].clone(), labels._expert.integral.clone()
        assert bool((integral.abs() > 0).all())
        mask = torch.tensor([True, False, False, True, False, False])
        reset = env.reset(td.clone().set("_reset", mask[:, None]))
    keep = ~mask
    assert torch.equal(reset[EXPERT_ACTION][keep], before[keep])
    assert torch.equal(labels._expert.integral[keep], integral[keep])
    assert not torch.equal(labels._expert.integral[mask], integral[mask])


def test_imitation_loss_is_zero_at_the_label_and_pulls_towards_it():
    """The loss is the squared distance of tanh(loc) from the label; a step lowers it."""
    torch.manual_seed(0)
    actor = ActorNet(RunningNorm(8), 8, (16,))
    obs = torch.randn(32, 8)
    with torch.no_grad():
        target = actor.act(obs)
        assert float(imitation_loss(actor(obs)[0], target)) < 1e-12
    label = torch.rand(32, 2) * 2 - 1
    optim = torch.optim.SGD(actor.parameters(), lr=0.05)
    first = imitation_loss(actor(obs)[0], label)
    expected = (actor.act(obs) - label).square().sum(-1).mean()
    assert torch.allclose(first, expected)
    first.backward()
    optim.step()
    with torch.no_grad():
        assert float(imitation_loss(actor(obs)[0], label)) < float(first.detach())


def test_imitation_loss_weighs_the_pedal_axis():
    """``accel_weight`` scales the pedal term only; 0 leaves the pedal output without gradient."""
    torch.manual_seed(0)
    loc = torch.randn(64, 2, requires_grad=True)
    label = torch.rand(64, 2) * 2 - 1
    sq = (torch.tanh(loc) - label).square()
    for weight in (0.0, 0.3, 1.0, 2.0):
        expected = (sq[:, 0] + weight * sq[:, 1]).mean()
        assert torch.allclose(imitation_loss(loc, label, accel_weight=weight), expected)
    imitation_loss(loc, label, accel_weight=0.0).backward()
    assert bool(loc.grad[:, 0].abs().gt(0).all()) and bool(loc.grad[:, 1].eq(0).all())


def test_caution_makes_the_pedal_term_an_expectile():
    """Above 1, ``caution`` moves the best pedal for mixed labels to their cautious end.

    It weighs pedal errors above the label only. Labels 0.05 (ice) and 0.5 (grip) at one state:
    with factor 1 the best pedal is their mean 0.275; with factor 3 it solves
    ``3 (a - 0.05) + (a - 0.5) = 0``, a = 0.1625. Steering is left
    alone. Checked: with the factor applied below the label instead, it fails.
    """
    labels = torch.tensor([[0.0, 0.05], [0.0, 0.5]])
    for caution, best in ((1.0, 0.275), (3.0, 0.1625)):
        loc = torch.zeros(1, 2, requires_grad=True)
        optim = torch.optim.SGD([loc], lr=0.5)
        for _ in range(2000):
            optim.zero_grad()
            imitation_loss(loc.expand(2, 2), labels, caution=caution).backward()
            optim.step()
        assert abs(float(torch.tanh(loc[0, 1])) - best) < 1e-3, (caution, torch.tanh(loc))
        assert abs(float(torch.tanh(loc[0, 0]))) < 1e-6
    loc = torch.randn(32, 2)
    label = torch.rand(32, 2) * 2 - 1
    assert torch.allclose(imitation_loss(loc, label, caution=1.0), imitation_loss(loc, label))


def test_grip_power_measures_the_pedal_error_against_the_grip():
    """With ``grip_power`` p the pedal error counts ``max(mu, floor)^-p`` times; steering not.

    The same pedal error of 0.1 costs 100 times more on ice (mu 0.1) than on asphalt (mu 1) at
    p = 2, 16 times on snow; below the floor the weight stops growing. Checked: with the weight
    applied to the steering axis, or as ``mu^p`` instead of its inverse, it fails.
    """
    label = torch.tensor([[0.2, 0.05]] * 4)
    loc = torch.atanh(label + torch.tensor([[0.0, 0.1]]))  # pedal 0.1 above, steering exact
    grip = torch.tensor([1.0, 0.25, 0.1, 0.01])
    per_car = [float(imitation_loss(loc[i : i + 1], label[i : i + 1], grip=grip[i : i + 1],
                                    grip_power=2.0)) for i in range(4)]  # fmt: skip
    assert per_car[0] == pytest.approx(0.01, rel=1e-4)
    assert per_car[1] == pytest.approx(16 * 0.01, rel=1e-4)
    assert per_car[2] == pytest.approx(100 * 0.01, rel=1e-4)
    assert per_car[3] == pytest.approx(GRIP_FLOOR**-2 * 0.01, rel=1e-4)
    steer_only = torch.atanh(label + torch.tensor([[0.1, 0.0]]))
    assert float(imitation_loss(steer_only, label, grip=grip, grip_power=2.0)) == pytest.approx(
        0.01, rel=1e-4
    )
    assert torch.equal(imitation_loss(loc, label, grip=grip, grip_power=0.0),
                       imitation_loss(loc, label))  # fmt: skip
    with pytest.raises(ValueError, match="needs the labels' grip"):
        imitation_loss(loc, label, grip_power=2.0)


def test_the_labels_carry_the_grip_under_the_wheels():
    """``expert_grip`` is the mean friction under the four wheels of the state each label is for.

    On a lap half asphalt, half ice the labelled grip follows the layout as the cars move, after
    steps and after the resets that end every car's 40-step episode together (a partial reset
    keeps the other cars' grip as their step left it, which is the layout's grip there too).
    Checked: with the grip of the previous state written instead, it fails.
    """
    from torchrl.envs import TransformedEnv

    from gym_s3.adapters.torchrl import make_torchrl_env
    from gym_s3.tracks.lap_layouts import lap_layout
    from gym_s3.tracks.registry import cached_track

    layout = lap_layout(cached_track("procedural:301"), "asphalt>ice")
    with one_torch_thread():
        base = make_torchrl_env(num_envs=16, backend="bicycle", tracks=("procedural:301",),
                                layouts=(layout,), seed=0, max_episode_steps=40)  # fmt: skip
        env = TransformedEnv(base, ExpertLabels(seed=0))
        core = env.base_env.core
        td = env.reset()
        grips = []
        for _ in range(120):
            ego = core.state.ego()
            mu = core.task.measure(ego).mu.mean(dim=-1)
            assert torch.allclose(td[EXPERT_GRIP], mu), (td[EXPERT_GRIP], mu)
            grips.append(td[EXPERT_GRIP])
            td["action"] = td[EXPERT_ACTION]
            _, td = env.step_and_maybe_reset(td)
    grips = torch.cat(grips)
    assert float(grips.max()) == pytest.approx(1.0) and float(grips.min()) < 0.2


def _term_calls(tmp_path, monkeypatch, **settings) -> list[dict]:
    """The keyword arguments of every imitation-term call in one short ``tiny`` run."""
    import policies.imitation as imitation
    from policies.ppo import train

    seen: list[dict] = []

    def spy(loc, expert_action, **kwargs):
        seen.append(kwargs)
        return imitation_loss(loc, expert_action, **kwargs)

    monkeypatch.setattr(imitation, "imitation_loss", spy)
    cfg = preset("tiny", num_envs=16, rollout_steps=8, total_frames=16 * 8, minibatch_size=64,
                 imitation=10.0, eval_every=0, checkpoint_every=0, **settings)  # fmt: skip
    with one_torch_thread():
        train(cfg, tmp_path, progress=False)
    assert seen
    return seen


def test_training_passes_the_grip_power_and_grip_to_the_term(tmp_path, monkeypatch):
    """The update calls the term with ``imitation_grip_power`` and the rollouts' grips.

    Checked: it fails with the power or the grip not passed on.
    """
    seen = _term_calls(tmp_path, monkeypatch, imitation_grip_power=2.0)
    assert {call.get("grip_power", 0.0) for call in seen} == {2.0}
    grips = torch.cat([call["grip"] for call in seen])
    assert grips.shape == (len(seen) * 64,) and bool(((grips > 0) & (grips <= 1.0)).all())


def test_training_passes_the_caution_to_the_term(tmp_path, monkeypatch):
    """The update calls the term with ``imitation_caution``.

    A fresh actor's pedals sit below the expert's labels, so the factor changes no early loss
    value; the call is what is checked. Checked: it fails with the factor not passed on.
    """
    seen = _term_calls(tmp_path, monkeypatch, imitation_caution=4.0)
    assert {call.get("caution", 1.0) for call in seen} == {4.0}, seen


def _first_update(out_dir, **settings) -> dict:
    """The logged row of the first update of a one-iteration ``tiny`` run with the teacher."""
    from policies.ppo import train

    cfg = preset("tiny", num_envs=16, rollout_steps=8, total_frames=16 * 8, minibatch_size=64,
                 imitation=10.0, eval_every=0, checkpoint_every=0, **settings)  # fmt: skip
    with one_torch_thread():
        return train(cfg, out_dir, progress=False).history[0]


def test_training_passes_the_pedal_weight_to_the_term(tmp_path):
    """The update uses ``imitation_accel_weight``.

    With 0 the first update's logged term is the steering part alone, below the same run's term
    with both axes (same seed, same data). Checked: it fails with the weight not passed on.
    """
    first = {w: _first_update(tmp_path / f"w{w}", imitation_accel_weight=w)["loss_imitation"]
             for w in (0.0, 1.0)}  # fmt: skip
    assert first[0.0] < 0.9 * first[1.0], first


def test_training_logs_each_axis_error_beside_the_weighted_term(tmp_path):
    """``imitation_steer_mse`` and ``imitation_pedal_mse`` are the unweighted per-axis errors.

    Unweighted, the term is their sum; with the grip weight the term grows and the two stay the
    plain errors. Checked: with the two axes swapped in :func:`imitation_errors`, or the pedal's
    weights applied to its logged error, it fails.
    """
    rows = {p: _first_update(tmp_path / f"p{p}", imitation_grip_power=p) for p in (0.0, 2.0)}
    plain = rows[0.0]
    total = plain["imitation_steer_mse"] + plain["imitation_pedal_mse"]
    assert plain["loss_imitation"] == pytest.approx(total, rel=1e-5)
    assert plain["imitation_steer_mse"] != pytest.approx(plain["imitation_pedal_mse"], rel=1e-3)
    torch.manual_seed(0)
    loc, label = torch.randn(32, 2), torch.rand(32, 2) * 2 - 1
    errors = imitation_errors(loc, label)
    sq = (torch.tanh(loc) - label).square().mean(dim=0)
    assert float(errors["imitation_steer_mse"]) == pytest.approx(float(sq[0]))
    assert float(errors["imitation_pedal_mse"]) == pytest.approx(float(sq[1]))
    weighted = rows[2.0]
    assert weighted["loss_imitation"] >= (
        weighted["imitation_steer_mse"] + weighted["imitation_pedal_mse"]
    ) * (1 - 1e-5)


def test_the_term_rides_on_the_ppo_loss_own_actor_pass():
    """The PPO loss calls the actor once per minibatch; the term takes that pass's ``loc``.

    The kept ``loc`` equals the actor's on the minibatch and carries the graph to its weights; a
    second call without a pass in between, or a pass on another batch size, is refused.
    """
    from policies.imitation import ActorPass
    from policies.ppo import build_loss, build_modules

    cfg = preset("tiny", num_envs=8)
    actor_net, critic_net, actor, critic = build_modules(cfg)
    loss_fn = build_loss(cfg, actor_net, critic_net, actor, critic)
    torch.manual_seed(0)
    obs = torch.randn(16, actor_net.obs_size)
    with torch.no_grad():
        batch = actor(TensorDict({"observation": obs}, batch_size=[16]))
    batch.set("advantage", torch.randn(16, 1))
    batch.set("value_target", torch.randn(16, 1))
    with ActorPass(actor_net) as seen:
        loss_fn(batch)
        loc = seen.take(16)
        with pytest.raises(RuntimeError, match="one actor pass on 16 frames"):
            seen.take(16)
        loss_fn(batch[:8])
        with pytest.raises(RuntimeError, match="one actor pass on 16 frames"):
            seen.take(16)
    assert torch.allclose(loc, actor_net(obs)[0])
    imitation_loss(loc, torch.zeros(16, 2)).backward()
    assert all(p.grad is not None and bool(p.grad.any()) for p in actor_net.body.parameters())


def test_ppo_with_imitation_moves_the_policy_towards_the_expert(tmp_path):
    """A short run: the imitation loss falls by more than half; without the term it does not.

    With a large weight the term dominates the actor's update, so the policy's actions approach
    the expert's at the states it visits (the logged ``loss_imitation``). Checked against the
    code it guards: with the term's sign flipped (pushing away) or its weight set to 0 in the
    update, this test fails.
    """
    from policies.ppo import train

    cfg = preset("tiny", num_envs=64, rollout_steps=16, total_frames=64 * 16 * 24,
                 minibatch_size=256, imitation=20.0, eval_every=0, checkpoint_every=0,
                 lr=1e-3)  # fmt: skip
    with one_torch_thread():
        result = train(cfg, tmp_path, progress=False)
    losses = [row["loss_imitation"] for row in result.history]
    assert len(losses) == 24
    assert sum(losses[-4:]) / 4 < 0.5 * sum(losses[:2]) / 2


def test_imitation_settings_are_checked():
    """A negative weight, or a device the expert cannot drive, is refused with the fix."""
    with pytest.raises(ConfigError, match="imitation must be a finite number >= 0"):
        preset("tiny", imitation=-1.0)
    with pytest.raises(ConfigError, match="imitation must be a finite number >= 0"):
        preset("tiny", imitation=float("inf"))
    with pytest.raises(ConfigError, match="imitation_accel_weight must be a finite number >= 0"):
        preset("tiny", imitation=1.0, imitation_accel_weight=-0.5)
    with pytest.raises(ConfigError, match="imitation_caution must be a finite number > 0"):
        preset("tiny", imitation=1.0, imitation_caution=0.0)
    with pytest.raises(ConfigError, match="imitation_caution must be a finite number > 0"):
        preset("tiny", imitation=1.0, imitation_caution=float("inf"))
    for power in (-1.0, 5.0, float("nan")):
        with pytest.raises(ConfigError, match="imitation_grip_power must be in"):
            preset("tiny", imitation=1.0, imitation_grip_power=power)
    with pytest.raises(ConfigError, match="set --imitation W > 0"):
        preset("tiny", imitation_grip_power=2.0)
    with pytest.raises(ConfigError, match="--device cpu"):
        preset("tiny", imitation=1.0, device="cuda")
    assert preset("tiny").imitation == 0.0
    assert all(preset(name).imitation == 0.0 for name in ("ddm", "trans", "dytr", "oracle"))
