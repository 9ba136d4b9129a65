"""Recipes of the shipped default checkpoints, and the routine that runs them.

``s3 distill train --all --dataset <dataset folder(s)> --out DIR`` runs the four recipes below in
order on the dataset's train split (validation = its held-out sessions). The shipped ``bicycle``
and ``trans`` ran on the default dataset, ``ddm`` and ``dytr`` on it plus one round of policy
rollouts (``training.data_sources`` in their sidecars):

1. ``bicycle``: the kinematic baseline's 9 parameters fitted with the one-step loss;
2. ``ddm``: the Deep Dynamics Model, one-step loss;
3. ``trans``: the sliding-window transformer, one-step loss;
4. ``dytr``: the DDM just trained (copied in) plus a transformer residual trained with the DDM
   frozen (``freeze=("base.",)``). The residual starts at zero, so before its first update the
   model is exactly the DDM, and early stopping keeps the best validation epoch (epoch 0
   included): on the validation windows ``dytr`` is never worse than its DDM.

Command-line options (epochs, batch size, learning rate, horizon, seed, device) override every
recipe alike. Each recipe seeds its own initialisation and shuffling, so training backends in
separate runs (``--backend ddm``, ``--backend trans``, ...) gives the same checkpoints as ``--all``
(on the same machine and thread count).

Under ``torchrun`` every rank loads the dataset and trains each recipe data-parallel (see
:mod:`gym_s3.distill.train`); only rank 0 writes the checkpoints and logs, and the others wait
until they exist.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from gym_s3 import checkpoints, distributed
from gym_s3.distill.resume import remove_state, resume_stem
from gym_s3.distill.train import TrainConfig, TrainResult, train
from gym_s3.distill.windows import TensorWindows
from gym_s3.dynamics import DynamicsBackend, load, make, save
from gym_s3.errors import CheckpointError, ConfigError

#: Recipe order (``dytr`` needs ``ddm`` first).
ORDER: tuple[str, ...] = ("bicycle", "ddm", "trans", "dytr")


@dataclass(frozen=True)
class Recipe:
    """How one shipped checkpoint is trained.

    Attributes:
        backend: registered backend name.
        config: backend constructor arguments.
        train: training hyper-parameters.
        base_from: backend whose freshly trained weights initialise ``<model>.base`` (``dytr``).
    """

    backend: str
    config: dict[str, Any] = field(default_factory=dict)
    train: TrainConfig = TrainConfig()
    base_from: str | None = None


RECIPES: dict[str, Recipe] = {
    # the kinematic bicycle cannot represent v_lat, whose constant error dominates its loss:
    # any decrease of the validation loss counts as an improvement
    "bicycle": Recipe(
        "bicycle",
        train=TrainConfig(epochs=12, lr=5e-3, batches_per_epoch=300, min_improvement=0.0),
    ),
    "ddm": Recipe("ddm", train=TrainConfig(epochs=30, lr=2e-3, batches_per_epoch=400)),
    "trans": Recipe("trans", train=TrainConfig(epochs=30, lr=2e-3, batches_per_epoch=400)),
    "dytr": Recipe(
        "dytr",
        train=TrainConfig(epochs=30, lr=2e-3, batches_per_epoch=400, freeze=("base.",)),
        base_from="ddm",
    ),
}


def resolve(names: Sequence[str]) -> list[str]:
    """Recipe names in training order, with ``ddm`` added before ``dytr`` if missing."""
    unknown = [n for n in names if n not in RECIPES]
    if unknown:
        raise ConfigError(f"no training recipe for {unknown}; valid backends: {', '.join(ORDER)}")
    wanted = set(names)
    if "dytr" in wanted:
        wanted.add("ddm")
    return [n for n in ORDER if n in wanted]


def run(
    dataset: Any,
    out_dir: str | Path,
    names: Sequence[str],
    *,
    overrides: dict[str, Any] | None = None,
    history: int = 10,
    command: str = "",
    log: Callable[[str], None] = print,
) -> dict[str, Path]:
    """Train the recipes ``names`` on ``dataset`` and write ``<out_dir>/<name>.{safetensors,json}``.

    Args:
        dataset: a loaded :class:`~gym_s3.data.dataset.DrivingDataset` (split by session); its
            ``sources`` (several folders) are stored as ``training.data_sources``.
        out_dir: output folder (also receives ``<name>.train.csv``).
        names: backends to train (see :func:`resolve`).
        overrides: :class:`TrainConfig` fields applied to every recipe.
        history: history rows of the training windows (at least every backend's need).
        command: the command line, stored in the checkpoints.
        log: progress messages.

    A rerun into the same ``out_dir`` keeps backends already trained with the same settings and
    data, and continues an interrupted one after its last finished epoch (see
    :mod:`gym_s3.distill.resume`); the best weights so far are kept as ``<name>.best`` until
    the backend finishes.

    Returns:
        backend name -> sidecar path (on every rank once rank 0 has written them).
    """
    ctx = distributed.current()
    if not ctx.is_main:
        log = _quiet
    out = Path(out_dir)
    if ctx.is_main:
        out.mkdir(parents=True, exist_ok=True)
    train_split, val_split = dataset.split("train"), dataset.split("val")
    if not val_split.episodes:
        raise ConfigError(
            "the dataset has a single session, so there is no held-out validation split; "
            "record or generate more sessions"
        )
    stats = dataset.normalization()
    trained: dict[str, DynamicsBackend] = {}
    written: dict[str, Path] = {}
    cache: dict[int, tuple[TensorWindows, TensorWindows]] = {}
    for name in resolve(names):
        recipe = RECIPES[name]
        cfg = dataclasses.replace(recipe.train, **(overrides or {}))
        fingerprint = {"backend": name, "recipe": recipe.config, "history": history,
                       "dataset": dataset.content_hash, "world_size": ctx.world_size,
                       "train": _fingerprint_of(cfg)}  # fmt: skip
        finished = _finished(out / name, fingerprint)
        if finished is not None:  # a rerun after an interruption: keep what was done
            log(f"'{name}': already trained with these settings in {out}; kept")
            trained[name] = finished
            written[name] = checkpoints.checkpoint_paths(out / name)[1]
            continue
        if cfg.horizon not in cache:
            cache[cfg.horizon] = (
                TensorWindows(train_split.windows(history, cfg.horizon)),
                TensorWindows(val_split.windows(history, cfg.horizon)),
            )
        train_windows, val_windows = cache[cfg.horizon]
        torch.manual_seed(cfg.seed)  # each recipe's initialisation is independent of the order
        backend = make(name, **recipe.config)
        if recipe.base_from is not None:
            backend.base.load_state_dict(trained[recipe.base_from].state_dict())
        log(f"training '{name}' on {len(train_windows)} windows ({len(val_windows)} validation)")

        def save_best(model: DynamicsBackend, epoch: int, val: float, name: str = name) -> None:
            """Keep the best weights so far as a loadable checkpoint ``<name>.best``."""
            save(model, out / f"{name}.best", dataset_hash=dataset.content_hash,
                 training={"best_epoch": epoch, "best_val_loss": val, "complete": False,
                           "command": command})  # fmt: skip

        result: TrainResult = train(
            backend, train_windows, val_windows, stats, cfg, log_csv=out / f"{name}.train.csv",
            label=name, resume=resume_stem(out, name), fingerprint=fingerprint, on_best=save_best,
        )  # fmt: skip
        summary = {
            **result.to_dict(),
            "config": {k: v for k, v in dataclasses.asdict(cfg).items() if k != "progress"},
            "history_rows": history,
            "train_windows": len(train_windows),
            "val_windows": len(val_windows),
            "base_from": recipe.base_from,
            "command": command,
            "fingerprint": fingerprint,
        }
        if dataset.sources:  # several folders (expert data + rollouts): which part came whence
            summary["data_sources"] = [dict(src) for src in dataset.sources]
        if ctx.enabled:
            summary["distributed"] = {
                "world_size": ctx.world_size,
                "backend": ctx.backend,
                "effective_batch_size": cfg.batch_size * ctx.world_size,
            }
        written[name] = checkpoints.checkpoint_paths(out / name)[1]
        if ctx.is_main:
            written[name] = save(
                backend, out / name, dataset_hash=dataset.content_hash, training=summary
            )
            remove_state(resume_stem(out, name))  # finished: no resume state, no best-so-far
            for path in checkpoints.checkpoint_paths(out / f"{name}.best"):
                path.unlink(missing_ok=True)
        distributed.barrier(ctx)
        trained[name] = backend
        log(
            f"'{name}': best validation loss {result.best_val_loss:.5f} at epoch "
            f"{result.best_epoch} ({result.seconds:.0f} s) -> {written[name]}"
        )
    return written


def _fingerprint_of(cfg: TrainConfig) -> dict[str, Any]:
    """The settings of ``cfg`` that identify a run.

    ``mirror`` counts only when on, so runs written before the option existed are still
    recognised as finished (or resumed).
    """
    return {k: v for k, v in dataclasses.asdict(cfg).items()
            if k != "progress" and not (k == "mirror" and not v)}  # fmt: skip


def _finished(stem: Path, fingerprint: dict[str, Any]) -> DynamicsBackend | None:
    """The checkpoint at ``stem`` if a finished run with ``fingerprint`` wrote it."""
    if not checkpoints.checkpoint_paths(stem)[1].is_file():
        return None
    try:
        model = load(stem)
    except CheckpointError:
        return None  # damaged or foreign: trained again and replaced
    stored = model.checkpoint_meta.get("training", {}).get("fingerprint")
    return model if stored == json.loads(json.dumps(fingerprint)) else None


def _quiet(message: str) -> None:
    """Drop a progress message (ranks other than 0 stay silent)."""
    del message
