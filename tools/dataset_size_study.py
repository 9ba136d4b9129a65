"""How much driving data distillation needs: held-out error against training-set size.

Trains one backend (default ``ddm``, with its shipped recipe) on growing shares of the training
sessions of a dataset (default: ``data/default`` from ``s3 data generate --out data/default
--seed 0``; nested random subsets, seeded) and measures the open-loop position error on the
same test sessions every time: half of the held-out sessions select the best epoch, the other half
only score.
Prints a table and saves ``dataset_size.png`` and ``dataset_size.json``.

    python tools/dataset_size_study.py --dataset data/default --out runs/size_study
    python tools/dataset_size_study.py --backend trans --fractions 0.25 1.0 --threads 2
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gym_s3.data.dataset import DrivingDataset  # noqa: E402
from gym_s3.distill import recipes  # noqa: E402
from gym_s3.distill.evaluate import evaluate  # noqa: E402
from gym_s3.distill.windows import TensorWindows  # noqa: E402
from gym_s3.dynamics import load  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    """Run the study and print one row per training-set share."""
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    parser.add_argument("--dataset", type=Path, default=Path("data/default"),
                        help="dataset folder (s3 data generate)")  # fmt: skip
    parser.add_argument("--backend", default="ddm", help="backend whose recipe is trained")
    parser.add_argument("--fractions", type=float, nargs="+", default=[0.125, 0.25, 0.5, 1.0],
                        help="shares of the training sessions to train on [0-1]")  # fmt: skip
    parser.add_argument("--horizons", type=int, nargs="+", default=[20, 60],
                        help="open-loop horizons [steps of 50 ms]")  # fmt: skip
    parser.add_argument("--seed", type=int, default=0, help="seed of the session order")
    parser.add_argument("--threads", type=int, default=None,
                        help="torch intra-op threads; omitted: torch's default "
                        "[count]")  # fmt: skip
    parser.add_argument("--out", type=Path, default=Path("runs/size_study"), help="output folder")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    data = DrivingDataset.load(args.dataset)
    train_sessions = [s for s in data.sessions if data.session_split(s) == "train"]
    # a seeded random order, so every share mixes tracks, surfaces and waves like the whole set
    order = torch.randperm(len(train_sessions), generator=torch.Generator().manual_seed(args.seed))
    train_sessions = [train_sessions[i] for i in order.tolist()]
    val_sessions = [s for s in data.sessions if data.session_split(s) == "val"]
    # half of the held-out sessions pick the best epoch (early stopping), the other half only
    # measure: a share is never scored on the sessions that chose its weights
    selection, test = val_sessions[0::2], val_sessions[1::2]
    horizon = max(args.horizons)
    windows = TensorWindows(data.select_sessions(test).windows(10, horizon, stride=5))
    rows = []
    for frac in sorted(args.fractions):
        k = max(1, round(frac * len(train_sessions)))
        subset = data.select_sessions([*train_sessions[:k], *selection])
        t0 = time.perf_counter()
        command = f"dataset_size_study share {frac:g}"
        written = recipes.run(subset, args.out / f"share_{frac:g}", [args.backend],
                              command=command, log=lambda _: None)  # fmt: skip
        seconds = time.perf_counter() - t0
        model = load(written[args.backend])
        with torch.inference_mode():
            report = evaluate({args.backend: model}, windows, args.horizons)
        err = report["results"][args.backend]["all"]["position"]
        hours = subset.split("train").hours
        rows.append({"share": frac, "sessions": k, "train_hours": hours, "train_s": seconds,
                     **{f"position_{h}": err[str(h)] for h in args.horizons}})  # fmt: skip
        errors = "  ".join(f"@{h}: {err[str(h)]:.4f} m" for h in args.horizons)
        print(f"share {frac:5.3f}  {k:4d} sessions  {hours:5.2f} h  trained in {seconds:5.0f} s  "
              f"{errors}", flush=True)  # fmt: skip
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "dataset_size.json").write_text(json.dumps(rows, indent=2) + "\n")
    _plot(rows, args.horizons, args.backend, args.out / "dataset_size.png")


def _plot(rows: list[dict], horizons: list[int], backend: str, path: Path) -> None:
    """Held-out position error against training hours, one line per horizon (log-log)."""
    from gym_s3.tracks.plot import new_axes

    ax = new_axes((6.0, 4.0))
    for h in horizons:
        ax.plot([r["train_hours"] for r in rows], [r[f"position_{h}"] for r in rows], "o-",
                label=f"{h} steps ({h * 0.05:g} s)")  # fmt: skip
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("training data [h of driving]")
    ax.set_ylabel("held-out position error [m]")
    ax.set_title(f"{backend}: error against dataset size")
    ax.legend()
    ax.figure.savefig(path, dpi=120)
    print(f"saved {path}")


if __name__ == "__main__":
    main()
