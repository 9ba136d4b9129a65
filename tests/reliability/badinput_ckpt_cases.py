"""Catalogue cases of checkpoint loading: damaged, foreign, mismatched and hostile files.

Checkpoints are safetensors weights plus a JSON sidecar; nothing may execute on load. The hostile
cases plant pickles whose payload would create a marker folder when unpickled (as protocol 0 text,
protocol 2 and protocol 5 binary pickles, as the weights or as the sidecar); each case refuses the
file with a :class:`~gym_s3.errors.CheckpointError` and then checks the marker does not exist.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
from pathlib import Path
from typing import Any

import torch
from badinput_support import Case

from gym_s3 import checkpoints, dynamics
from gym_s3.errors import CheckpointError
from gym_s3.spec import SPEC_VERSION


class _Payload:
    """Unpickling this object calls ``os.mkdir(marker)`` (a harmless, visible side effect)."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return (os.mkdir, (self.marker,))


def _saved(work: Path, backend: str = "bicycle") -> Path:
    """Save the shipped ``backend`` as ``work/ckpt``; returns the stem."""
    dynamics.save(dynamics.load(backend), work / "ckpt")
    return work / "ckpt"


def _edit_sidecar(stem: Path, **fields: Any) -> None:
    """Overwrite top-level fields of a checkpoint's JSON sidecar."""
    sidecar = checkpoints.checkpoint_paths(stem)[1]
    data = json.loads(sidecar.read_text())
    data.update(fields)
    sidecar.write_text(json.dumps(data))


def _point_sidecar_at(stem: Path, weights: bytes) -> None:
    """Replace the weights file by ``weights`` and make the sidecar's SHA-256 and size match."""
    weights_path = checkpoints.checkpoint_paths(stem)[0]
    weights_path.write_bytes(weights)
    info = {"file": weights_path.name, "sha256": hashlib.sha256(weights).hexdigest(),
            "bytes": len(weights)}  # fmt: skip
    _edit_sidecar(stem, weights=info)


def _truncated_weights(work: Path) -> None:
    """Load a checkpoint whose weights file lost its second half."""
    stem = _saved(work)
    weights = checkpoints.checkpoint_paths(stem)[0]
    data = weights.read_bytes()
    weights.write_bytes(data[: len(data) // 2])
    dynamics.load(stem)


def _truncated_sidecar(work: Path) -> None:
    """Load a checkpoint whose JSON sidecar was cut off."""
    stem = _saved(work)
    sidecar = checkpoints.checkpoint_paths(stem)[1]
    sidecar.write_text(sidecar.read_text()[:100])
    dynamics.load(stem)


def _wrong_shapes(work: Path) -> None:
    """Load a ``trans`` checkpoint whose embedding has one input column too many."""
    shipped = checkpoints.load(dynamics.default_checkpoint("trans"))
    tensors = dict(shipped.tensors)
    weight = tensors["net.embed.0.weight"]
    tensors["net.embed.0.weight"] = torch.cat([weight, torch.zeros(weight.shape[0], 1)], dim=1)
    checkpoints.save(work / "ckpt", tensors, shipped.meta, kind="dynamics")
    dynamics.load(work / "ckpt")


def _spec_version(work: Path) -> None:
    """Load a checkpoint made for the next spec version."""
    stem = _saved(work)
    _edit_sidecar(stem, spec_version=SPEC_VERSION + 1)
    dynamics.load(stem)


def _format_version(work: Path) -> None:
    """Load a checkpoint written in a newer sidecar format."""
    stem = _saved(work)
    _edit_sidecar(stem, format_version=checkpoints.FORMAT_VERSION + 1)
    dynamics.load(stem)


def _policy_as_dynamics(work: Path) -> None:
    """Load a policy checkpoint as dynamics."""
    checkpoints.save(work / "policy", {"w": torch.zeros(2)}, {"backend": "trans"}, kind="policy")
    dynamics.load(work / "policy")


def _dynamics_as_policy(work: Path) -> None:
    """Load a dynamics checkpoint as a policy."""
    from policies.checkpoint import load_policy

    load_policy(_saved(work))


def _torch_save(work: Path) -> None:
    """Load a sidecar that points at a ``torch.save`` archive (with a matching hash)."""
    stem = _saved(work)
    archive = work / "model.pt"
    torch.save(dynamics.load("bicycle").state_dict(), archive)
    _point_sidecar_at(stem, archive.read_bytes())
    dynamics.load(stem)


def _pickle_bomb(work: Path, protocol: int, where: str) -> None:
    """Load a checkpoint whose weights (or sidecar) are a hostile pickle; check it did not run.

    Raises:
        AssertionError: the payload ran (its marker folder exists), whatever load raised.
    """
    marker = work / "payload_ran"
    bomb = pickle.dumps(_Payload(marker), protocol=protocol)
    stem = _saved(work)
    if where == "weights":
        _point_sidecar_at(stem, bomb)
    else:
        checkpoints.checkpoint_paths(stem)[1].write_bytes(bomb)
    try:
        dynamics.load(stem)
    finally:
        if marker.exists():
            raise AssertionError(f"loading {where} ran the pickle's payload")


def _foreign_json(work: Path) -> None:
    """Load a JSON file of another tool as a checkpoint (through the env constructor)."""
    import gymnasium as gym

    (work / "config.json").write_text(json.dumps({"model": "resnet50", "epochs": 90}))
    gym.make("S3Distilled-v0", checkpoint=str(work / "config.json"), tracks=("putnam",),
             layouts_per_track=2)  # fmt: skip


def _backend_mismatch(work: Path) -> None:
    """Ask the env for ``trans`` with a ``bicycle`` checkpoint."""
    import gymnasium as gym

    gym.make("S3Distilled-v0", backend="trans", checkpoint=str(_saved(work)), tracks=("putnam",),
             layouts_per_track=2)  # fmt: skip


NO_PICKLE_FIX = r"never loads pickles.*Re-export the weights with gym_s3\.checkpoints\.save"

CASES: tuple[Case, ...] = (
    Case("ckpt-missing", lambda w: dynamics.load(w / "nothing"),
         CheckpointError, r"no checkpoint sidecar .*nothing\.json",
         r"Pass the path of one of them"),
    Case("ckpt-truncated-weights", _truncated_weights,
         CheckpointError, r"ckpt\.safetensors do not match the SHA-256",
         r"Restore both files from the original"),
    Case("ckpt-truncated-sidecar", _truncated_sidecar,
         CheckpointError, r"ckpt\.json is not valid JSON", r"re-save the checkpoint"),
    Case("ckpt-wrong-tensor-shapes", _wrong_shapes,
         CheckpointError, r"net\.embed\.0\.weight: checkpoint \(64, 10\) vs model \(64, 9\)",
         r"re-train it or pass the matching config"),
    Case("ckpt-wrong-spec-version", _spec_version,
         CheckpointError, rf"spec version {SPEC_VERSION + 1}.*uses spec version {SPEC_VERSION}",
         r"Re-train or re-export it"),
    Case("ckpt-newer-format", _format_version,
         CheckpointError, r"newer than this installation reads", r"upgrade sim2sim2sim"),
    Case("ckpt-policy-as-dynamics", _policy_as_dynamics,
         CheckpointError, r"holds a 'policy' checkpoint, but a 'dynamics'", r"pass the right file"),
    Case("ckpt-dynamics-as-policy", _dynamics_as_policy,
         CheckpointError, r"holds a 'dynamics' checkpoint, but a 'policy'", r"pass the right file"),
    Case("ckpt-backend-mismatch", _backend_mismatch,
         CheckpointError, r"holds a 'bicycle' backend, but 'trans' was asked for",
         r"backend='bicycle'|a 'trans' checkpoint"),
    Case("ckpt-sidecar-points-at-torch-save", _torch_save,
         CheckpointError, r"ckpt\.safetensors is a pickle or torch\.save archive", NO_PICKLE_FIX),
    Case("ckpt-pickle-bomb-weights-p2", lambda w: _pickle_bomb(w, 2, "weights"),
         CheckpointError, r"ckpt\.safetensors is a pickle", NO_PICKLE_FIX),
    Case("ckpt-pickle-bomb-weights-p5", lambda w: _pickle_bomb(w, 5, "weights"),
         CheckpointError, r"ckpt\.safetensors is a pickle", NO_PICKLE_FIX),
    Case("ckpt-pickle-bomb-weights-p0", lambda w: _pickle_bomb(w, 0, "weights"),
         CheckpointError, r"ckpt\.safetensors is not a valid safetensors file",
         r"re-save|re-export"),
    Case("ckpt-pickle-bomb-sidecar-p4", lambda w: _pickle_bomb(w, 4, "sidecar"),
         CheckpointError, r"ckpt\.json is a pickle", NO_PICKLE_FIX),
    Case("ckpt-foreign-json", _foreign_json,
         CheckpointError, r"config\.json is not a sim2sim2sim checkpoint sidecar",
         r"Pass a checkpoint written by gym_s3\.checkpoints\.save"),
)  # fmt: skip
