"""Shipped checkpoints are found through the package, never the working folder (issue 23).

``gym.make("S3Distilled-v0", backend="ddm")`` and ``dynamics.load("ddm")`` run in a folder that
holds files called ``ddm.json`` and ``ddm.safetensors`` must load the shipped checkpoint: a
foreign ``ddm.json`` there must not make them fail, and another valid ``ddm`` checkpoint there
must not be loaded in its place. A path (``./ddm``) still loads the local file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import gymnasium as gym
import torch

from gym_s3 import checkpoints, dynamics
from policies.checkpoint import load_policy, shipped_policy


@contextmanager
def working_folder(path: Path) -> Iterator[None]:
    """Run the block with ``path`` as the current folder."""
    before = Path.cwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


def _shipped_tensors(name: str) -> dict[str, torch.Tensor]:
    return checkpoints.load(dynamics.default_checkpoint(name)).tensors


def _same(model: torch.nn.Module, tensors: dict[str, torch.Tensor]) -> bool:
    state = model.state_dict()
    return all(torch.equal(state[k], v) for k, v in tensors.items())


def test_foreign_files_in_the_working_folder_are_ignored(tmp_path: Path) -> None:
    """A foreign ``ddm.json`` (and garbage weights) in the working folder change nothing."""
    (tmp_path / "ddm.json").write_text(json.dumps({"name": "my other tool", "ddm": True}))
    (tmp_path / "ddm.safetensors").write_bytes(b"\x00" * 64)
    with working_folder(tmp_path):
        env = gym.make("S3Distilled-v0", backend="ddm", num_envs=2)
        try:
            assert _same(env.unwrapped.core.backend, _shipped_tensors("ddm"))
        finally:
            env.close()
        assert _same(dynamics.load("ddm"), _shipped_tensors("ddm"))
        assert load_policy(shipped_policy("ddm")).backend == "ddm"


def test_a_local_checkpoint_of_the_same_name_is_not_substituted(tmp_path: Path) -> None:
    """A valid but different ``ddm`` checkpoint in the working folder loads only as ``./ddm``."""
    changed = dynamics.load("ddm")
    with torch.no_grad():
        for p in changed.parameters():
            p.add_(0.5)
    dynamics.save(changed, tmp_path / "ddm")
    with working_folder(tmp_path):
        assert _same(dynamics.load("ddm"), _shipped_tensors("ddm"))
        local = dynamics.load("./ddm")
        assert not _same(local, _shipped_tensors("ddm"))


def test_no_shipped_path_depends_on_the_working_folder(tmp_path: Path) -> None:
    """The shipped checkpoint paths are absolute and inside the installed packages."""
    with working_folder(tmp_path):
        for path in (dynamics.default_checkpoint("ddm"), shipped_policy("ddm")):
            assert path.is_absolute() and tmp_path not in path.parents
            assert Path(str(path) + ("" if path.suffix else ".json")).is_file() or path.is_file()
