"""Resumable distillation: the training state written after every epoch, and read back.

After every epoch, rank 0 writes ``<out>/<name>.resume.{safetensors,json}`` (a
:mod:`gym_s3.checkpoints` pair of kind ``"distill-resume"``, no pickle): the current weights
(``model.*``), the best weights so far (``best.*``), Adam's moments (``opt.<param>.<key>``), the
shuffling generator and torch's global RNG state, and in the sidecar the epoch, the log rows, the
best epoch and loss, the early-stopping counter, the scheduler state and a fingerprint of the
run (backend, training config, dataset). A rerun of the same command continues after the last
finished epoch with the same state, so an interrupted run and an uninterrupted one end alike;
a state with another fingerprint belongs to another run and is ignored.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from gym_s3 import checkpoints
from gym_s3.errors import CheckpointError

KIND = "distill-resume"


def resume_stem(out: str | Path, name: str) -> Path:
    """Stem of the resume state of backend ``name`` in ``out``."""
    return Path(out) / f"{name}.resume"


@dataclass
class EpochState:
    """Where training stands after an epoch.

    Attributes:
        epoch: last finished epoch (0 = only the initial validation).
        rows: the per-epoch log rows so far.
        best: best validation loss.
        best_epoch: its epoch.
        bad: epochs since the last improvement.
        best_state: the best weights.
    """

    epoch: int
    rows: list[dict[str, Any]]
    best: float
    best_epoch: int
    bad: int
    best_state: dict[str, Tensor]


def save_state(
    stem: Path,
    fingerprint: dict[str, Any],
    state: EpochState,
    model: torch.nn.Module,
    opt: torch.optim.Optimizer,
    sched: torch.optim.lr_scheduler.LRScheduler,
    gen: torch.Generator,
) -> None:
    """Write the training state after an epoch (atomically, replacing the previous one)."""
    tensors = {f"model.{k}": v for k, v in model.state_dict().items()}
    tensors |= {f"best.{k}": v for k, v in state.best_state.items()}
    opt_state = opt.state_dict()
    for idx, entries in opt_state["state"].items():
        for key, value in entries.items():
            tensors[f"opt.{idx}.{key}"] = torch.as_tensor(value)
    tensors["rng.shuffle"] = gen.get_state()
    tensors["rng.torch"] = torch.get_rng_state()
    meta = {
        "fingerprint": fingerprint,
        "epoch": state.epoch,
        "rows": state.rows,
        "best": state.best,
        "best_epoch": state.best_epoch,
        "bad": state.bad,
        "param_groups": opt_state["param_groups"],
        "scheduler": sched.state_dict(),
    }
    checkpoints.save(stem, tensors, json.loads(json.dumps(meta)), kind=KIND)


def load_state(
    stem: Path,
    fingerprint: dict[str, Any],
    model: torch.nn.Module,
    opt: torch.optim.Optimizer,
    sched: torch.optim.lr_scheduler.LRScheduler,
    gen: torch.Generator,
) -> EpochState | None:
    """Restore the state written by :func:`save_state`; ``None`` if absent or of another run.

    Raises:
        CheckpointError: the state file is damaged (the message names it; delete it to start
            over).
    """
    if not checkpoints.checkpoint_paths(stem)[1].is_file():
        return None
    ckpt = checkpoints.load(stem, kind=KIND)
    meta = ckpt.meta
    if meta.get("fingerprint") != json.loads(json.dumps(fingerprint)):
        return None
    tensors = ckpt.tensors
    model.load_state_dict(_prefixed(tensors, "model."))
    opt_state: dict[str, Any] = {"state": {}, "param_groups": meta["param_groups"]}
    for key, value in _prefixed(tensors, "opt.").items():
        idx, name = key.split(".", 1)
        opt_state["state"].setdefault(int(idx), {})[name] = value
    try:
        opt.load_state_dict(opt_state)
        sched.load_state_dict(meta["scheduler"])
        gen.set_state(tensors["rng.shuffle"])
        torch.set_rng_state(tensors["rng.torch"])
    except (KeyError, ValueError, RuntimeError) as exc:
        raise CheckpointError(
            f"{ckpt.path}: the saved training state does not fit this run ({exc}); delete it to "
            "start the training over"
        ) from exc
    return EpochState(epoch=int(meta["epoch"]), rows=list(meta["rows"]), best=float(meta["best"]),
                      best_epoch=int(meta["best_epoch"]), bad=int(meta["bad"]),
                      best_state=_prefixed(tensors, "best."))  # fmt: skip


def remove_state(stem: Path) -> None:
    """Delete the resume state (after the run finished and its checkpoint was written)."""
    for path in checkpoints.checkpoint_paths(stem):
        path.unlink(missing_ok=True)


def _prefixed(tensors: dict[str, Tensor], prefix: str) -> dict[str, Tensor]:
    """The entries of ``tensors`` under ``prefix``, with the prefix removed."""
    return {k[len(prefix) :]: v for k, v in tensors.items() if k.startswith(prefix)}
