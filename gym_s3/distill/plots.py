"""Plots of an evaluation report (matplotlib, written as PNG files)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any


def plot_report(report: Mapping[str, Any], out_dir: str | Path) -> list[Path]:
    """Error-vs-horizon plots: one figure for all windows, one per surface; returns the files.

    Each figure has one panel per metric (position, heading, speed, yaw rate) with a line per
    backend on log-log axes.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(out_dir)
    horizons = [int(h) for h in report["horizons"]]
    dt = report.get("dt") or 0.05
    results = report["results"]
    groups = ["all"] + sorted({g for r in results.values() for g in r if g.startswith("surface:")})
    files = []
    for group in groups:
        metrics = report["metrics"]
        fig, axes = plt.subplots(1, len(metrics), figsize=(4 * len(metrics), 3.4))
        for ax, (metric, unit) in zip(axes, metrics.items(), strict=True):
            for name, res in results.items():
                if group not in res:
                    continue
                ys = [max(res[group][metric][str(h)], 1e-9) for h in horizons]
                ax.plot([h * dt for h in horizons], ys, marker="o", label=name)
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel("horizon [s]")
            ax.set_ylabel(f"{metric} error [{unit}]")
            ax.grid(True, which="both", alpha=0.3)
        axes[0].legend()
        title = "all held-out windows" if group == "all" else group.replace(":", ": ")
        fig.suptitle(f"open-loop error vs horizon ({title})")
        fig.tight_layout()
        path = out / f"error_vs_horizon_{group.replace(':', '_')}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        files.append(path)
    return files
