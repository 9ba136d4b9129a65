"""Shipped dynamics sets (``"ddm:ice"``), content lookup, and a policy's training dynamics."""

from __future__ import annotations

from pathlib import Path

import pytest

from gym_s3 import checkpoints
from gym_s3.dynamics import load, source
from gym_s3.dynamics.io import ASSET_DIR, expand_checkpoints, find_shipped, shipped_sets
from gym_s3.envs.config import DistilledConfig
from gym_s3.errors import CheckpointError
from policies.checkpoint import training_dynamics
from policies.config import PPOConfig

ICE = tuple(str(ASSET_DIR / "ice" / f"s{k}" / "ddm") for k in range(3))


def test_a_set_names_its_members_in_order_and_each_member_alone():
    """``ddm:ice`` is the three ice models, sorted; ``ddm:ice/s1`` is one of them."""
    sets = shipped_sets()
    assert tuple(map(str, sets["ddm:ice"])) == ICE
    assert tuple(map(str, sets["ddm:ice/s1"])) == ICE[1:2]
    assert "ddm" not in sets  # the default checkpoints are named by their backend, not a set
    assert expand_checkpoints(["ddm:ice", "ddm", "some/path"]) == (*ICE, "ddm", "some/path")
    assert expand_checkpoints("ddm:ice/s2") == ICE[2:]


def test_one_member_loads_and_a_whole_set_is_refused_where_one_model_is_needed():
    """``load("ddm:ice/s0")`` is the s0 file; ``load("ddm:ice")`` names a member to pass."""
    model = load("ddm:ice/s0")
    assert model.checkpoint_meta["dataset_hash"] == source(ICE[0])["dataset_hash"]
    with pytest.raises(CheckpointError, match="ensemble of 3 .*'ddm:ice/s0'"):
        load("ddm:ice")


def test_the_env_and_a_training_run_take_a_set_as_an_ensemble():
    """``checkpoint="ddm:ice"`` is the three-model ensemble in the env and in ``PPOConfig``."""
    config = DistilledConfig(checkpoint="ddm:ice")
    assert config.checkpoint == ICE and config.ensemble_size == 3 and config.backend == "ddm"
    assert DistilledConfig(checkpoint="ddm:ice/s1").checkpoint == ICE[1]
    run = PPOConfig(backend="ddm", dynamics_checkpoint="ddm:ice")
    assert run.dynamics_models == ICE and run.env_kwargs()["checkpoint"] == ICE
    assert "checkpoint" not in PPOConfig(backend="ddm").env_kwargs()


def test_a_model_is_found_by_its_weights_hash():
    """``find_shipped`` maps a recorded SHA-256 to the shipped file; unknown hashes to None."""
    for stem in ICE:
        assert str(find_shipped(checkpoints.source(stem)["sha256"])) == stem
    assert find_shipped(checkpoints.source(ASSET_DIR / "dytr")["sha256"]) == ASSET_DIR / "dytr"
    assert find_shipped("0" * 64) is None


def _sources(*stems: str) -> list[dict]:
    return [source(stem) for stem in stems]


def test_training_dynamics_reads_hashes_paths_and_refuses_what_it_cannot_find(tmp_path: Path):
    """By content first, then by path; ``None`` for unknown models or members that disagree."""
    meta = {"backend": "ddm"}
    by_hash = {"dynamics_sources": _sources(*ICE), "dynamics_checkpoint": "/gone/a"}
    assert training_dynamics({**meta, "training": by_hash}) == ICE
    unknown = {"dynamics_sources": [{"file": "x.json", "sha256": "0" * 64}]}
    assert training_dynamics({**meta, "training": unknown}) is None
    # older records: paths, the backend's default when none is named
    assert training_dynamics({**meta, "training": {"dynamics_checkpoint": None}}) == ("ddm",)
    assert training_dynamics({**meta, "training": {}}) == ("ddm",)
    gone = {"dynamics_checkpoint": str(tmp_path / "gone"), "dynamics_ensemble": []}
    assert training_dynamics({**meta, "training": gone}) is None
    here = {"dynamics_checkpoint": ICE[0], "dynamics_ensemble": [ICE[2]]}
    assert training_dynamics({**meta, "training": here}) == (ICE[0], ICE[2])
    # an ensemble policy: its members' records decide, and they must agree
    same = {**meta, "training": {}, "member_training": [by_hash, by_hash]}
    assert training_dynamics(same) == ICE
    mixed = {**meta, "training": {}, "member_training": [by_hash, {"dynamics_checkpoint": None}]}
    assert training_dynamics(mixed) is None


def test_a_shipped_default_is_the_same_model_by_hash_or_by_no_path():
    """Members recorded before and after ``dynamics_sources`` agree on the backend's default."""
    old = {"dynamics_checkpoint": None, "dynamics_ensemble": None}
    new = {"dynamics_checkpoint": None, "dynamics_sources": _sources("trans")}
    assert training_dynamics({"backend": "trans", "training": new}) == ("trans",)
    meta = {"backend": "trans", "training": {}, "member_training": [old, new]}
    assert training_dynamics(meta) == ("trans",)


def test_a_model_of_ones_own_is_found_at_its_path_only_while_it_is_unchanged(tmp_path: Path):
    """Unshipped hashes: the recorded path if its file still has them; older forms of records."""
    import torch

    from gym_s3 import dynamics

    model = dynamics.load("ddm")
    with torch.no_grad():
        next(model.parameters()).mul_(1.1)
    own = str(tmp_path / "own")
    dynamics.save(model, own)
    record = {"dynamics_checkpoint": own, "dynamics_sources": _sources(own)}
    assert training_dynamics({"backend": "ddm", "training": record}) == (own,)
    with torch.no_grad():
        next(model.parameters()).mul_(1.1)
    dynamics.save(model, own)  # the file at that path is no longer the one trained in
    assert training_dynamics({"backend": "ddm", "training": record}) is None
    # older records: backend names in the ensemble, and a shipped set name
    names = {"dynamics_checkpoint": None, "dynamics_ensemble": ["ddm"]}
    assert training_dynamics({"backend": "ddm", "training": names}) == ("ddm", "ddm")
    named_set = {"dynamics_checkpoint": "ddm:ice", "dynamics_ensemble": []}
    assert training_dynamics({"backend": "ddm", "training": named_set}) == ICE
