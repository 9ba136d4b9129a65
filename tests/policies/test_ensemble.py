"""Policy ensembles: the mean action, one checkpoint per ensemble, refusals and ``s3 ensemble``."""

from __future__ import annotations

import json

import pytest
import torch

from gym_s3.cli import main
from gym_s3.errors import CheckpointError, ConfigError
from gym_s3.spec import observation_size
from policies.checkpoint import init_actor_from, load_policy, save_policy
from policies.ensemble import combine, write_ensemble
from policies.networks import ActorEnsemble, ActorNet, RunningNorm

F = observation_size()


def _actor(seed: int, hidden=(16, 16), shift: float = 0.0) -> ActorNet:
    """A random actor whose normaliser saw its own data (mean ``shift``), so members differ."""
    torch.manual_seed(seed)
    actor = ActorNet(RunningNorm(F), F, hidden)
    actor.norm.update(torch.randn(256, F) * 2.0 + shift)
    with torch.no_grad():  # out layer gain 0.01 makes untrained actions ~0; make them visible
        actor.body[-1].weight.mul_(100.0)
    return actor


def _saved(tmp_path, name: str, seed: int, *, backend="ddm", obs_mode="default", hidden=(16, 16)):
    actor = _actor(seed, hidden, shift=float(seed))
    training = {"backend": backend, "seed": seed, "epochs": 6}
    return load_policy(save_policy(tmp_path / name, actor, backend=backend, obs_mode=obs_mode,
                                   training=training))  # fmt: skip


def test_ensemble_action_is_tanh_of_the_members_mean_pre_squash_mean():
    """The action is tanh(mean_k loc_k), each member through its own normaliser.

    Not the mean of the members' actions (tanh of a mean differs from a mean of tanh where the
    members disagree), and not any single member.
    """
    members = [_actor(0, shift=0.0), _actor(1, shift=3.0), _actor(2, shift=-2.0)]
    ensemble = ActorEnsemble(members)
    obs = torch.randn(64, F) * 2.0
    with torch.no_grad():
        locs = torch.stack([m(obs)[0] for m in members])
        expected = torch.tanh(locs.mean(dim=0))
        got = ensemble.act(obs)
        mean_of_actions = torch.tanh(locs).mean(dim=0)
    assert torch.allclose(got, expected, atol=1e-6)
    assert (got - mean_of_actions).abs().max() > 1e-3
    for m in members:
        assert (got - m.act(obs)).abs().max() > 1e-2


def test_ensemble_needs_two_members_of_one_observation_size():
    """One member, or members reading different features, are refused."""
    with pytest.raises(ValueError, match=">= 2 actors"):
        ActorEnsemble([_actor(0)])
    other = ActorNet(RunningNorm(F + 4), F + 4, (16, 16))
    with pytest.raises(ValueError, match="same features"):
        ActorEnsemble([_actor(0), other])


def test_ensemble_checkpoint_round_trip_keeps_every_member(tmp_path):
    """An ensemble saved and loaded acts identically; its members keep their own normalisers."""
    a, b = _saved(tmp_path, "a", 0), _saved(tmp_path, "b", 1)
    path = write_ensemble([a, b], tmp_path / "ens")
    loaded = load_policy(path)
    assert isinstance(loaded.actor, ActorEnsemble) and len(loaded.actor.members) == 2
    obs = torch.randn(32, F)
    expected = torch.tanh((a.actor(obs)[0] + b.actor(obs)[0]) / 2)
    assert torch.allclose(loaded.act(obs), expected, atol=1e-6)
    means = [m.norm.mean for m in loaded.actor.members]
    assert not torch.allclose(means[0], means[1])
    meta = json.loads(path.read_text())["meta"]
    assert meta["members"] == 2
    assert meta["training"] == {"backend": "ddm", "epochs": 6}  # seeds differ: not shared
    assert [t["seed"] for t in meta["member_training"]] == [0, 1]
    assert [s["file"] for s in meta["member_sources"]] == ["a.json", "b.json"]
    assert all(len(s["sha256"]) == 64 for s in meta["member_sources"])


def test_an_ensemble_member_contributes_its_members(tmp_path):
    """Combining an ensemble with a third policy gives three actors, not a nested ensemble."""
    pols = [_saved(tmp_path, n, s) for n, s in (("a", 0), ("b", 1), ("c", 2))]
    pair = load_policy(write_ensemble(pols[:2], tmp_path / "pair"))
    actor, _, extra = combine([pair, pols[2]])
    assert len(actor.members) == 3
    assert [t["seed"] for t in extra["member_training"]] == [0, 1, 2]


def test_an_ensemble_member_with_damaged_records_is_refused(tmp_path):
    """Member records that do not match the member count name the file and the fix."""
    pair = load_policy(write_ensemble([_saved(tmp_path, n, s) for n, s in (("a", 0), ("b", 1))],
                                      tmp_path / "pair"))  # fmt: skip
    pair.meta["member_training"] = pair.meta["member_training"][:1]
    with pytest.raises(CheckpointError, match="2 members but .member_training. is not a list of 2"):
        combine([pair, _saved(tmp_path, "c", 2)])


@pytest.mark.parametrize("field", ["member_training", "member_sources"])
@pytest.mark.parametrize("damage", ["not a list", ["not a mapping", {}]])
def test_member_records_of_the_wrong_type_are_refused(tmp_path, field, damage):
    """Records that are not a list of mappings raise a CheckpointError, not a TypeError."""
    pair = load_policy(write_ensemble([_saved(tmp_path, n, s) for n, s in (("a", 0), ("b", 1))],
                                      tmp_path / "pair"))  # fmt: skip
    pair.meta[field] = damage
    with pytest.raises(CheckpointError, match=field):
        combine([pair, _saved(tmp_path, "c", 2)])


def test_the_same_member_twice_is_refused(tmp_path, capsys):
    """Listing one checkpoint twice (or an ensemble and one of its members) is refused."""
    a, b = _saved(tmp_path, "a", 0), _saved(tmp_path, "b", 1)
    with pytest.raises(ConfigError, match="given twice"):
        combine([a, load_policy(a.path)])
    with pytest.raises(ConfigError, match="given twice"):
        combine([a, a])  # the same object
    pair = load_policy(write_ensemble([a, b], tmp_path / "pair"))
    with pytest.raises(ConfigError, match="given twice"):
        combine([pair, load_policy(b.path)])
    assert main(["ensemble", str(a.path), str(a.path), "--out", str(tmp_path / "x")]) == 2
    assert "given twice" in capsys.readouterr().err


def test_combine_refuses_mismatched_members(tmp_path):
    """Different backends, observation modes or widths, or a single policy, are refused by name."""
    a = _saved(tmp_path, "a", 0)
    with pytest.raises(ConfigError, match="default / ddm .*default / trans"):
        combine([a, _saved(tmp_path, "t", 1, backend="trans")])
    with pytest.raises(ConfigError, match="hidden widths"):
        combine([a, _saved(tmp_path, "w", 1, hidden=(8, 8))])
    with pytest.raises(ConfigError, match="at least two"):
        combine([a])


def test_an_ensemble_cannot_start_a_fine_tune(tmp_path):
    """PPO fine-tunes one actor; an ensemble as init_policy is refused with the fix."""
    path = write_ensemble([_saved(tmp_path, "a", 0), _saved(tmp_path, "b", 1)], tmp_path / "e")
    with pytest.raises(ConfigError, match="fine-tune one of its members"):
        init_actor_from(_actor(0), path, obs_mode="default", hidden=(16, 16))


@pytest.mark.parametrize("members", [1, 65, 2.5, 2.0, "2"])
def test_an_implausible_member_count_in_the_sidecar_is_refused(tmp_path, members):
    """A sidecar whose member count was edited is refused before any network is built."""
    path = write_ensemble([_saved(tmp_path, "a", 0), _saved(tmp_path, "b", 1)], tmp_path / "e")
    doc = json.loads(path.read_text())
    doc["meta"]["members"] = members
    path.write_text(json.dumps(doc))
    with pytest.raises(CheckpointError, match="members = "):
        load_policy(path)


def test_s3_ensemble_writes_a_policy_that_loads(tmp_path, capsys):
    """``s3 ensemble A B --out E`` writes a loadable two-actor policy; mismatches exit 2."""
    a, b = _saved(tmp_path, "a", 0), _saved(tmp_path, "b", 1)
    assert main(["ensemble", str(a.path), str(b.path), "--out", str(tmp_path / "e")]) == 0
    assert "ensemble of 2 actors" in capsys.readouterr().out
    assert len(load_policy(tmp_path / "e.json").actor.members) == 2
    t = _saved(tmp_path, "t", 2, backend="trans")
    assert main(["ensemble", str(a.path), str(t.path), "--out", str(tmp_path / "x")]) == 2
    assert "same preset" in capsys.readouterr().err


def test_an_ensemble_drives_a_lap_like_a_single_policy(tmp_path):
    """A loaded ensemble drives the batched high-fidelity laps through the normal lap loop."""
    from policies.evaluate_model import Lap, evaluate_model

    ens = load_policy(write_ensemble([_saved(tmp_path, "a", 0), _saved(tmp_path, "b", 1)],
                                     tmp_path / "e"))  # fmt: skip
    (row,) = evaluate_model([("e", ens)], [Lap("procedural:0", "asphalt", 0)], max_steps=20,
                            expert=False, progress=False)  # fmt: skip
    assert row.driver == "e" and row.metrics["steps"] == 20


def test_members_selects_actors_across_the_given_policies(tmp_path, capsys):
    """``--members`` keeps the named actors of all POLICY arguments, in order, with records."""
    pols = [_saved(tmp_path, n, s) for n, s in (("a", 0), ("b", 1), ("c", 2))]
    trio = load_policy(write_ensemble(pols, tmp_path / "trio"))
    d = _saved(tmp_path, "d", 3)
    actor, _, extra = combine([trio, d], members=[1, 3])
    assert [t["seed"] for t in extra["member_training"]] == [1, 3]
    assert [s["file"] for s in extra["member_sources"]] == ["b.json", "d.json"]
    obs = torch.randn(16, F)
    expected = torch.tanh((pols[1].actor(obs)[0] + d.actor(obs)[0]) / 2)
    assert torch.allclose(torch.tanh(actor(obs)[0]), expected, atol=1e-6)
    out = tmp_path / "bd"
    assert main(["ensemble", str(trio.path), str(d.path), "--members", "1", "3", "--out",
                 str(out)]) == 0  # fmt: skip
    assert "ensemble of 2 actors" in capsys.readouterr().out
    written = load_policy(out.with_suffix(".json")).meta["member_training"]
    assert [t["seed"] for t in written] == [1, 3]
    for bad in (["4"], ["1", "1"], ["-1", "0"]):
        assert main(["ensemble", str(trio.path), str(d.path), "--members", "0", *bad, "--out",
                     str(tmp_path / "x")]) == 2  # fmt: skip
        assert "0 to 3" in capsys.readouterr().err


def test_axis_members_take_each_action_axis_from_chosen_members(tmp_path, capsys):
    """``--steer-members`` steers with some members' mean; the pedals stay the mean of all."""
    pols = [_saved(tmp_path, n, s) for n, s in (("a", 0), ("b", 1), ("c", 2))]
    out = tmp_path / "split"
    assert main(["ensemble", *(str(p.path) for p in pols), "--steer-members", "1", "2",
                 "--out", str(out)]) == 0  # fmt: skip
    assert "steering from members 1 2" in capsys.readouterr().out
    split = load_policy(out.with_suffix(".json"))
    obs = torch.randn(64, F) * 2.0
    with torch.no_grad():
        locs = torch.stack([p.actor(obs)[0] for p in pols])
        got = split.actor(obs)[0]
    assert torch.allclose(got[:, 0], locs[1:, :, 0].mean(dim=0), atol=1e-6)
    assert torch.allclose(got[:, 1], locs[:, :, 1].mean(dim=0), atol=1e-6)
    assert (got[:, 0] - locs[:, :, 0].mean(dim=0)).abs().max() > 1e-3  # not the plain mean
    # the pedals alone, too; and an ensemble without axis options keeps no weights (plain mean)
    actor, _, _ = combine(pols, accel_members=[0])
    with torch.no_grad():
        assert torch.allclose(actor(obs)[0][:, 1], locs[0, :, 1], atol=1e-6)
    assert combine(pols)[0].axis_weights is None
    # the weights move with the actor (no copy per call on an accelerator) and are not saved
    # as a tensor: the sidecar holds them, so the tensor names of every ensemble stay the same
    assert not any("axis" in k for k in split.actor.state_dict())
    weights = json.loads(out.with_suffix(".json").read_text())["meta"]["axis_weights"]
    assert weights[0] == pytest.approx([0, 1 / 3]) and weights[1] == pytest.approx([0.5, 1 / 3])
    moved = load_policy(out.with_suffix(".json")).actor.to("meta")
    assert moved.axis_weights.device.type == "meta"
    # a weighted ensemble is not combined again: its weights would be lost
    with pytest.raises(ConfigError, match="combine the policies it was made of"):
        combine([split, pols[0]])
    for bad in (["3"], ["0", "0"], ["-1"]):
        assert main(["ensemble", *(str(p.path) for p in pols), "--steer-members", *bad,
                     "--out", str(tmp_path / "x")]) == 2  # fmt: skip
        assert "0 to 2, after --members" in capsys.readouterr().err


@pytest.mark.parametrize(
    "weights",
    [[[1.0, 0.5], [0.5, 0.5]], [[0.5, 0.5]], [[-0.5, 0.5], [1.5, 0.5]], [[0.5, 0.5], ["x", 0.5]]],
)
def test_damaged_axis_weights_in_the_sidecar_are_refused(tmp_path, weights):
    """Weights that do not sum to 1 per axis, of the wrong shape, negative or not numbers."""
    path = write_ensemble([_saved(tmp_path, "a", 0), _saved(tmp_path, "b", 1)], tmp_path / "e",
                          steer_members=[0])  # fmt: skip
    doc = json.loads(path.read_text())
    assert doc["meta"]["axis_weights"] == [[1.0, 0.5], [0.0, 0.5]]
    doc["meta"]["axis_weights"] = weights
    path.write_text(json.dumps(doc))
    with pytest.raises(CheckpointError, match="axis_weights = "):
        load_policy(path)
