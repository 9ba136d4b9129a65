"""``s3 distill``: train dynamics backends on driving logs and evaluate them open-loop.

Examples::

    # all four recipes on the default dataset (the shipped bicycle and trans come from this)
    s3 distill train --all --dataset data/default --out runs/dynamics
    # expert data plus policy rollouts (the shipped ddm and dytr: one policy-in-the-loop round)
    s3 distill train --backend dytr --dataset data/default runs/roll_ddm runs/roll_dytr \
        --out runs/pil
    # one backend, 5-step rollout loss, fewer epochs
    s3 distill train --backend trans --dataset data/default --out runs/trans --horizon 5
    # compare the shipped checkpoints with a new one on the held-out sessions
    s3 distill evaluate --checkpoint bicycle ddm runs/trans/trans --dataset data/default --out ev
    # data-parallel on 4 GPUs (each update sees 4 x batch-size windows)
    torchrun --nproc-per-node 4 -m gym_s3.distill train --all --dataset data/default \
        --out runs/ddp --device cuda
"""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path
from typing import Any

from gym_s3.errors import ConfigError


def register(subparsers: Any) -> None:
    """Add the ``distill`` command (``train``, ``evaluate``, ``bounds``) to the ``s3`` parser."""
    fmt = argparse.ArgumentDefaultsHelpFormatter
    parser = subparsers.add_parser(
        "distill",
        help="train dynamics backends (bicycle, ddm, trans, dytr) on logs and evaluate them",
        description="Distil the driving logs into fast batched dynamics backends.",
        formatter_class=fmt,
    )
    sub = parser.add_subparsers(dest="distill_command", metavar="SUBCOMMAND", required=True)

    tr = sub.add_parser(
        "train",
        help="train backends; writes <out>/<backend>.safetensors + .json and a CSV log",
        formatter_class=fmt,
    )
    which = tr.add_mutually_exclusive_group(required=True)
    which.add_argument(
        "--backend", action="append", metavar="NAME",
        help="backend to train (repeatable): bicycle, ddm, trans, dytr (dytr also trains ddm)",
    )  # fmt: skip
    which.add_argument("--all", action="store_true", help="train all four backends")
    tr.add_argument(
        "--dataset", required=True, nargs="+", metavar="DIR",
        help="dataset folder(s) (episodes): the expert data, optionally followed by policy "
        "rollouts (s3 rollouts) to train on as well (policy-in-the-loop distillation)",
    )  # fmt: skip
    tr.add_argument("--out", required=True, metavar="DIR", help="output folder of checkpoints")
    tr.add_argument("--epochs", type=int, default=None, help="maximum epochs [count] (recipe)")
    tr.add_argument("--batch-size", type=int, default=None, help="windows per batch (recipe)")
    tr.add_argument("--batches-per-epoch", type=int, default=None, help="updates per epoch")
    tr.add_argument("--lr", type=float, default=None, help="initial Adam learning rate (recipe)")
    tr.add_argument("--patience", type=int, default=None, help="early-stopping patience [epochs]")
    tr.add_argument(
        "--history", type=int, default=10,
        help="history rows of the windows [steps of 0.05 s]; at least the backends' history",
    )  # fmt: skip
    tr.add_argument(
        "--horizon", type=int, default=None,
        help="rollout steps of the loss [steps of 0.05 s]; 1 = one-step loss (recipe)",
    )  # fmt: skip
    tr.add_argument("--seed", type=int, default=0, help="seed of initialisation and shuffling")
    tr.add_argument(
        "--mirror", action="store_true",
        help="train on each window or its left-right mirror image (opposite steering, lateral "
        "velocity and yaw rate, left and right wheels' friction swapped), drawn 1:1: the car's "
        "symmetry as data augmentation; off by default (the shipped models were trained without)",
    )  # fmt: skip
    tr.add_argument("--device", default="cpu", help="torch device, e.g. cpu or cuda")
    tr.add_argument("--threads", type=int, default=None, help="torch CPU threads [count]")
    tr.add_argument("--val-fraction", type=float, default=0.15, help="share of held-out sessions")
    tr.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    tr.add_argument(
        "--dist-timeout", type=float, default=None,
        help="under torchrun: seconds a rank waits for the others in a collective before the "
        "job stops with an error; if omitted: $S3_DIST_TIMEOUT_S, else 300 [s]",
    )  # fmt: skip
    tr.set_defaults(func=run_train)

    ev = sub.add_parser(
        "evaluate",
        help="open-loop errors at several horizons per backend, surface and scenario label",
        formatter_class=fmt,
    )
    ev.add_argument(
        "--checkpoint", nargs="+", required=True, metavar="NAME_OR_PATH",
        help="shipped backend names (bicycle, ddm, trans, dytr) or checkpoint paths",
    )  # fmt: skip
    ev.add_argument("--dataset", required=True, nargs="+", metavar="DIR",
                    help="dataset folder(s) (episodes), evaluated as one dataset split by "
                    "session; the folders a checkpoint was trained on give its held-out "
                    "sessions")  # fmt: skip
    ev.add_argument("--out", required=True, metavar="DIR", help="folder for JSON and plots")
    ev.add_argument(
        "--horizons", type=int, nargs="+", default=[1, 5, 20, 60],
        help="horizons [steps of 0.05 s]",
    )  # fmt: skip
    ev.add_argument(
        "--rollouts", nargs="+", default=None, metavar="DIR",
        help="folders of policy-driven logs (s3 rollouts) not trained on: also report the "
        "errors on all their episodes, per surface and label, next to the expert-log tables",
    )  # fmt: skip
    ev.add_argument("--split", default="val", choices=("val", "train", "all"), help="data split")
    ev.add_argument("--stride", type=int, default=5, help="anchor every STRIDE-th row [rows]")
    ev.add_argument("--history", type=int, default=10, help="history rows of the windows")
    ev.add_argument("--val-fraction", type=float, default=0.15, help="share of held-out sessions")
    ev.add_argument("--device", default="cpu", help="torch device")
    ev.add_argument("--threads", type=int, default=None, help="torch CPU threads [count]")
    ev.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    ev.set_defaults(func=run_evaluate)

    bounds = sub.add_parser(
        "bounds", help="print the physics-guard bounds of the ddm coefficients", formatter_class=fmt
    )
    bounds.set_defaults(func=run_bounds)


def _threads(n: int | None) -> None:
    """Set the torch CPU thread count (``None``: leave it)."""
    if n is not None:
        import torch

        if n < 1:
            raise ConfigError(f"--threads must be >= 1, got {n}")
        torch.set_num_threads(n)


def _load_dataset(paths: str | list[str], val_fraction: float):
    """Load one dataset folder, or several as one dataset (expert data + rollouts), by session."""
    from gym_s3.data.dataset import DrivingDataset

    folders = [paths] if isinstance(paths, str) else list(paths)
    return DrivingDataset.load_folders([Path(p) for p in folders], val_fraction=val_fraction)


def run_train(args: argparse.Namespace) -> int:
    """``s3 distill train`` (one process, or one rank of a torchrun job)."""
    import torch

    from gym_s3 import distributed
    from gym_s3.distill import recipes

    _threads(args.threads)
    names = list(recipes.ORDER) if args.all else args.backend
    overrides = {
        "epochs": args.epochs, "batch_size": args.batch_size, "lr": args.lr,
        "batches_per_epoch": args.batches_per_epoch, "patience": args.patience,
        "horizon": args.horizon,
    }  # fmt: skip
    overrides = {k: v for k, v in overrides.items() if v is not None}
    overrides.update(seed=args.seed, device=args.device, progress=not args.no_progress)
    if args.mirror:
        overrides["mirror"] = True
    torch.manual_seed(args.seed)
    with distributed.launch(args.device, timeout_s=args.dist_timeout) as ctx:
        dataset = _load_dataset(args.dataset, args.val_fraction)
        command = _command(args, names)
        written = recipes.run(
            dataset, args.out, names, overrides=overrides, history=args.history, command=command
        )
    if ctx.is_main:
        for name, path in written.items():
            print(f"{name}: {path}")
    return 0


def _command(args: argparse.Namespace, names: list[str]) -> str:
    """The ``s3 distill train`` command line equivalent to ``args`` (stored in checkpoints)."""
    parts = ["s3", "distill", "train"]
    parts += ["--all"] if args.all else [f"--backend={n}" for n in names]
    parts += ["--dataset", *args.dataset]
    parts += ["--mirror"] if args.mirror else []
    for key in ("out", "epochs", "batch_size", "batches_per_epoch", "lr", "patience",
                "history", "horizon", "seed", "device", "val_fraction"):  # fmt: skip
        value = getattr(args, key)
        if value is not None:
            parts.append(f"--{key.replace('_', '-')}={value}")
    return " ".join(shlex.quote(p) for p in parts)


def run_evaluate(args: argparse.Namespace) -> int:
    """``s3 distill evaluate``."""
    from gym_s3.distill.evaluate import evaluate, print_tables, write_report
    from gym_s3.distill.windows import TensorWindows
    from gym_s3.dynamics import load

    _threads(args.threads)
    backends, sources = {}, {}
    for item in args.checkpoint:
        model = load(item, device=args.device)
        label = item if Path(item).name == item else Path(item).name
        label = label.removesuffix(".json").removesuffix(".safetensors")
        if label in backends:
            label = f"{label}#{len(backends)}"
        backends[label] = model
        sources[label] = {"checkpoint": item, "backend": model.name,
                          "dataset_hash": model.checkpoint_meta.get("dataset_hash")}  # fmt: skip
    dataset = _load_dataset(args.dataset, args.val_fraction)
    split = dataset.split(args.split)
    windows = split.windows(args.history, max(args.horizons), stride=args.stride)
    windows = {k: v.to(args.device) for k, v in windows.items()}
    report = evaluate(
        backends, TensorWindows(windows), args.horizons,
        meta={"dataset": [str(d) for d in args.dataset], "dataset_hash": dataset.content_hash,
              "split": args.split, "stride": args.stride, "checkpoints": sources},
    )  # fmt: skip
    if args.rollouts:
        from gym_s3.data.dataset import DrivingDataset
        from gym_s3.distill.evaluate import add_rollouts

        held_out = DrivingDataset.load_folders(args.rollouts, val_fraction=args.val_fraction)
        rolled = held_out.windows(args.history, max(args.horizons), stride=args.stride)
        rolled = {k: v.to(args.device) for k, v in rolled.items()}
        drivers = sorted({e.meta.device for e in held_out.episodes})
        sources = sorted({e.meta.source for e in held_out.episodes})  # which simulator drove
        add_rollouts(report, backends, TensorWindows(rolled),
                     meta={"folders": [str(r) for r in args.rollouts], "drivers": drivers,
                           "sources": sources, "dataset_hash": held_out.content_hash})  # fmt: skip
    path = write_report(report, args.out, plots=not args.no_plots)
    print_tables(report)
    print(f"report: {path}")
    return 0


def run_bounds(args: argparse.Namespace) -> int:
    """``s3 distill bounds``."""
    from gym_s3.dynamics.ddm_physics import bounds_table

    del args
    print(bounds_table())
    return 0
