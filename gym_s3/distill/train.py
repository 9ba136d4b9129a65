"""Training of every backend (the ``bicycle`` is fitted by the same loop).

Adam on mini-batches of dataset windows, the rollout loss of :mod:`gym_s3.distill.loss` (one-step
by default, optionally K steps feeding predictions back through ``step``), cosine learning-rate
decay, gradient clipping, validation on held-out sessions after every epoch (and once before
training), early stopping on the validation loss with the best weights restored, a CSV log per
epoch and a rich progress bar. Runs are deterministic from the seed on a given machine and
thread count (the shuffling uses its own generator; CPU kernels are deterministic).

Under ``torchrun`` (see :mod:`gym_s3.distributed`) every rank draws the same shuffled order and
trains on its strided shard of it (``DistributedSampler``'s split), gradients are averaged by
DistributedDataParallel (so one update sees ``world_size * batch_size`` windows), the validation
loss is summed over the ranks' shards of the validation windows, so early stopping decides alike
on every rank, and only rank 0 writes the CSV log and shows progress. Without ``batches_per_epoch``
an epoch is one pass of all ranks together over the training windows.
"""

from __future__ import annotations

import copy
import csv
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from gym_s3 import distributed
from gym_s3.data.windows import NormStats
from gym_s3.distill.loss import rollout_loss
from gym_s3.distill.mirror import mirror_some, symmetric_stats
from gym_s3.distill.resume import EpochState, load_state, save_state
from gym_s3.distill.windows import WindowSource, fixed_subset
from gym_s3.dynamics.base import DynamicsBackend
from gym_s3.dynamics.learned import LearnedBackend
from gym_s3.errors import ConfigError
from gym_s3.progress import progress_bar


@dataclass(frozen=True)
class TrainConfig:
    """Hyper-parameters of one training run.

    Attributes:
        epochs: maximum number of epochs.
        batch_size: windows per mini-batch.
        lr: initial Adam learning rate (cosine decay to ``lr * lr_final``).
        lr_final: final learning rate as a fraction of ``lr``.
        weight_decay: Adam L2 penalty.
        horizon: rollout steps K of the loss (1 = one-step loss).
        patience: epochs without validation improvement before stopping.
        min_improvement: relative validation-loss decrease that counts as an improvement.
        batches_per_epoch: updates per epoch (``None``: one pass over the training windows).
        val_windows: validation windows used (evenly spread; ``None``: all).
        grad_clip: maximum gradient norm.
        freeze: parameter-name prefixes that are not trained (e.g. ``("base.",)`` for ``dytr``).
        seed: seed of the initialisation-independent randomness (shuffling).
        mirror: replace each training window by its left-right mirror image with probability
            1/2 and make the normalisation statistics symmetric (:mod:`gym_s3.distill.mirror`;
            validation windows are left as they are).
        device: torch device.
        progress: show a progress bar.
    """

    epochs: int = 40
    batch_size: int = 256
    lr: float = 1e-3
    lr_final: float = 0.05
    weight_decay: float = 0.0
    horizon: int = 1
    patience: int = 6
    min_improvement: float = 1e-3
    batches_per_epoch: int | None = None
    val_windows: int | None = 20000
    grad_clip: float = 1.0
    freeze: tuple[str, ...] = ()
    seed: int = 0
    mirror: bool = False
    device: str = "cpu"
    progress: bool = True

    def __post_init__(self) -> None:
        for name in ("epochs", "batch_size", "horizon", "patience"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"TrainConfig.{name} must be an integer >= 1, got {value!r}")
        for name in ("batches_per_epoch", "val_windows"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value < 1):
                raise ConfigError(f"TrainConfig.{name} must be None or an integer >= 1")
        for name in ("lr", "grad_clip"):
            if not (math.isfinite(getattr(self, name)) and getattr(self, name) > 0):
                raise ConfigError(f"TrainConfig.{name} must be > 0, got {getattr(self, name)!r}")
        if not 0 < self.lr_final <= 1:
            raise ConfigError(f"TrainConfig.lr_final must be in (0, 1], got {self.lr_final!r}")
        if self.weight_decay < 0 or self.min_improvement < 0:
            raise ConfigError("TrainConfig.weight_decay and min_improvement must be >= 0")
        object.__setattr__(self, "freeze", tuple(self.freeze))


@dataclass
class TrainResult:
    """Outcome of :func:`train`.

    Attributes:
        epochs: per-epoch log rows (epoch 0 = before training).
        best_epoch: epoch whose weights were kept.
        best_val_loss: their validation loss.
        stopped_early: early stopping ended the run.
        trainable_params: number of trained scalars.
        seconds: wall time [s].
    """

    epochs: list[dict[str, float | None]] = field(default_factory=list)
    best_epoch: int = 0
    best_val_loss: float = math.inf
    stopped_early: bool = False
    trainable_params: int = 0
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary."""
        return asdict(self)


@torch.no_grad()
def evaluate_loss(
    backend: DynamicsBackend,
    source: WindowSource,
    index: Tensor,
    horizon: int,
    delta_std: Tensor,
    device: torch.device | str = "cpu",
    batch_size: int = 4096,
) -> float:
    """Mean rollout loss over the windows ``index`` of ``source`` (eval mode, no gradients)."""
    was_training = backend.training
    backend.eval()
    total, count = 0.0, 0
    for chunk in index.split(batch_size):
        batch = _to(source.batch(chunk), device)
        total += float(rollout_loss(backend, batch, horizon, delta_std)) * len(chunk)
        count += len(chunk)
    backend.train(was_training)
    return total / max(count, 1)


def _to(batch: dict[str, Tensor], device: torch.device | str) -> dict[str, Tensor]:
    """The window tensors of ``batch`` on ``device``."""
    return {k: v.to(device) for k, v in batch.items()}


class _RolloutLoss(nn.Module):
    """The training loss as a module, so DistributedDataParallel can wrap its forward."""

    def __init__(self, backend: DynamicsBackend) -> None:
        super().__init__()
        self.backend = backend

    def forward(self, batch: dict[str, Tensor], horizon: int, delta_std: Tensor) -> Tensor:
        """:func:`rollout_loss` of ``batch`` (a scalar)."""
        return rollout_loss(self.backend, batch, horizon, delta_std)


def _epoch_order(n: int, need: int, gen: torch.Generator, ctx: distributed.DistContext) -> Tensor:
    """This rank's shuffled window indices of one epoch (at least ``need`` of them).

    Every rank draws the same permutations of ``range(n)`` (one more while the ranks together
    need more than ``n``) and keeps its strided shard.
    """
    order = torch.randperm(n, generator=gen)
    total = need * ctx.world_size
    if total > len(order):
        reps = -(-total // len(order))
        order = torch.cat([torch.randperm(n, generator=gen) for _ in range(reps)])
    return distributed.shard(order, ctx)


def _trainable(backend: DynamicsBackend, freeze: tuple[str, ...]) -> list[torch.nn.Parameter]:
    """Mark parameters under the ``freeze`` prefixes as frozen; return the trained ones."""
    params = []
    for name, p in backend.named_parameters():
        frozen = any(name.startswith(prefix) for prefix in freeze)
        p.requires_grad_(not frozen)
        if not frozen:
            params.append(p)
    if not params:
        raise ConfigError(f"no trainable parameters left after freezing {list(freeze)}")
    return params


def train(
    backend: DynamicsBackend,
    train_windows: WindowSource,
    val_windows: WindowSource,
    stats: NormStats,
    config: TrainConfig = TrainConfig(),
    *,
    log_csv: str | Path | None = None,
    label: str | None = None,
    resume: Path | None = None,
    fingerprint: dict[str, Any] | None = None,
    on_best: Callable[[DynamicsBackend, int, float], None] | None = None,
) -> TrainResult:
    """Train ``backend`` in place and keep the weights of the best validation epoch.

    Args:
        backend: the model (its current weights are the starting point).
        train_windows: training windows (horizon >= ``config.horizon``).
        val_windows: validation windows from held-out sessions.
        stats: train-split normalisation statistics (installed into learned backends).
        config: hyper-parameters.
        log_csv: optional CSV file receiving one row per epoch.
        label: name shown on the progress bar.
        resume: stem of the training state (:mod:`gym_s3.distill.resume`): continued from if it
            holds a state of this run (same ``fingerprint``), rewritten after every epoch.
        fingerprint: what identifies the run (backend, config, dataset) for ``resume``.
        on_best: called on rank 0 with ``(backend, epoch, val_loss)`` whenever the validation
            loss improves, while the backend holds those weights (to save a best-so-far
            checkpoint that survives an interruption).

    Returns:
        The per-epoch log and the best epoch (identical on every rank under torchrun).
    """
    for name, src in (("training", train_windows), ("validation", val_windows)):
        if src.horizon < config.horizon or len(src) == 0:
            raise ConfigError(
                f"the {name} windows (horizon {src.horizon}, {len(src)} windows) cannot feed a "
                f"{config.horizon}-step rollout loss; build windows with horizon >= "
                f"{config.horizon}"
            )
    start = time.perf_counter()
    ctx = distributed.current()
    device = ctx.device(config.device)
    torch.manual_seed(ctx.seed(config.seed))
    gen = torch.Generator().manual_seed(config.seed)  # the same order on every rank
    backend.to(device)
    if config.mirror:  # the statistics of the data a mirrored run sees
        stats = symmetric_stats(stats)
    if isinstance(backend, LearnedBackend):
        backend.set_norm_stats(stats)
    delta_std = stats.delta_std.to(device)
    params = _trainable(backend, config.freeze)
    loss_of = distributed.wrap(_RolloutLoss(backend), ctx)
    joint = config.batch_size * ctx.world_size
    per_epoch = config.batches_per_epoch or max(1, len(train_windows) // joint)
    opt = torch.optim.Adam(params, lr=config.lr, weight_decay=config.weight_decay)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(
        opt, T_max=config.epochs * per_epoch, eta_min=config.lr * config.lr_final
    )
    val_idx = distributed.shard(fixed_subset(val_windows, config.val_windows), ctx)

    def validate() -> float:
        """Validation loss over the (job-wide) validation windows."""
        loss = evaluate_loss(backend, val_windows, val_idx, config.horizon, delta_std, device)
        if not ctx.enabled:
            return loss
        return distributed.weighted_means({"val": (loss, float(len(val_idx)))}, ctx)["val"]

    result = TrainResult(trainable_params=sum(p.numel() for p in params))
    fingerprint = fingerprint or {}
    state = (
        load_state(resume, fingerprint, backend, opt, sched, gen) if resume is not None else None
    )
    if state is None:
        best = validate()
        first = {"epoch": 0, "train_loss": None, "val_loss": best, "lr": config.lr,
                 "skipped": 0, "seconds": time.perf_counter() - start}  # fmt: skip
        state = EpochState(epoch=0, rows=[first], best=best, best_epoch=0, bad=0,
                           best_state=copy.deepcopy(backend.state_dict()))  # fmt: skip
    best, best_state, rows, bad = state.best, state.best_state, state.rows, state.bad
    result.best_val_loss, result.best_epoch = best, state.best_epoch
    log_csv = log_csv if ctx.is_main else None
    _write_csv(log_csv, rows)
    progress = progress_bar(enabled=config.progress and ctx.is_main)
    with progress:
        task = progress.add_task(label or backend.name, total=config.epochs * per_epoch)
        progress.update(task, completed=state.epoch * per_epoch)
        for epoch in range(state.epoch + 1, config.epochs + 1):
            if bad >= config.patience:  # a resumed run that had already stopped
                result.stopped_early = True
                break
            backend.train()
            order = _epoch_order(len(train_windows), per_epoch * config.batch_size, gen, ctx)
            total, count, skipped = 0.0, 0, 0
            for b in range(per_epoch):
                idx = order[b * config.batch_size : (b + 1) * config.batch_size]
                batch = train_windows.batch(idx)
                if config.mirror:
                    batch = mirror_some(batch, gen)
                batch = _to(batch, device)
                loss = loss_of(batch, config.horizon, delta_std)
                opt.zero_grad(set_to_none=True)
                if not distributed.all_true(bool(torch.isfinite(loss)), ctx):
                    skipped += 1  # on every rank alike, so the gradient all-reduces pair up
                else:
                    loss.backward()
                    torch.nn.utils.clip_grad_norm_(params, config.grad_clip)
                    opt.step()
                    total += float(loss.detach())
                    count += 1
                sched.step()
                progress.update(task, advance=1, description=_desc(label or backend.name,
                                epoch, total / max(count, 1), best))  # fmt: skip
            val = validate()
            train_loss = total / max(count, 1)
            if ctx.enabled:
                train_loss = distributed.weighted_means({"t": (train_loss, 1.0)}, ctx)["t"]
            rows.append({"epoch": epoch, "train_loss": train_loss, "val_loss": val,
                         "lr": sched.get_last_lr()[0], "skipped": skipped,
                         "seconds": time.perf_counter() - start})  # fmt: skip
            _write_csv(log_csv, rows)
            improved = val < best * (1.0 - config.min_improvement)
            if improved:
                best, bad = val, 0
                best_state = copy.deepcopy(backend.state_dict())
                result.best_epoch, result.best_val_loss = epoch, val
                if on_best is not None and ctx.is_main:
                    on_best(backend, epoch, val)
            else:
                bad += 1
            if resume is not None and ctx.is_main:
                done = EpochState(epoch, rows, best, result.best_epoch, bad, best_state)
                save_state(resume, fingerprint, done, backend, opt, sched, gen)
            if bad >= config.patience:
                result.stopped_early = True
                break
    backend.load_state_dict(best_state)
    backend.eval()
    for p in backend.parameters():
        p.requires_grad_(True)
    result.epochs = rows
    result.seconds = time.perf_counter() - start
    return result


def _desc(name: str, epoch: int, train_loss: float, best: float) -> str:
    """Progress-bar text."""
    return f"{name} epoch {epoch} train {train_loss:.4f} best val {best:.4f}"


def _write_csv(path: str | Path | None, rows: list[dict[str, float]]) -> None:
    """Rewrite the CSV log with ``rows`` (nothing if ``path`` is None)."""
    if path is None:
        return
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
