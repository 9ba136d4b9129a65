"""Plots of an evaluation report (matplotlib, written as PNG files)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any


def plot_report(report: Mapping[str, Any], out_dir: str | Path) -> list[Path]:
    """Write the two figures of a report; returns their paths.

    * ``error_vs_horizon.png``: one panel per metric (position, heading, speed, yaw rate), a line
      per backend, over all held-out windows;
    * ``position_error_per_surface.png``: position error vs horizon, one panel per base surface.

    Both use log-log axes (horizon in seconds).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(out_dir)
    horizons = [int(h) for h in report["horizons"]]
    seconds = [h * (report.get("dt") or 0.05) for h in horizons]
    results = report["results"]

    def panel(ax: Any, group: str, metric: str, unit: str, title: str) -> None:
        for name, res in results.items():
            if group in res:
                ys = [max(res[group][metric][str(h)], 1e-9) for h in horizons]
                ax.plot(seconds, ys, marker="o", label=name)
        ax.set(xscale="log", yscale="log", xlabel="horizon [s]", ylabel=f"{metric} [{unit}]")
        ax.set_title(title, fontsize=10)
        ax.grid(True, which="both", alpha=0.3)

    metrics = report["metrics"]
    fig, axes = plt.subplots(1, len(metrics), figsize=(4 * len(metrics), 3.4), squeeze=False)
    for ax, (metric, unit) in zip(axes[0], metrics.items(), strict=True):
        panel(ax, "all", metric, unit, f"{metric} error")
    axes[0][0].legend()
    fig.suptitle("open-loop error vs horizon, all held-out windows")
    fig.tight_layout()
    files = [out / "error_vs_horizon.png"]
    fig.savefig(files[0], dpi=110)
    plt.close(fig)

    surfaces = sorted({g for r in results.values() for g in r if g.startswith("surface:")})
    if surfaces:
        cols = min(3, len(surfaces))
        rows = -(-len(surfaces) // cols)
        fig, axes = plt.subplots(rows, cols, figsize=(4 * cols, 3.2 * rows), squeeze=False)
        for ax, group in zip(axes.flat, surfaces, strict=False):
            panel(ax, group, "position", metrics["position"], group.split(":", 1)[1])
        for ax in list(axes.flat)[len(surfaces) :]:
            ax.set_visible(False)
        axes[0][0].legend()
        fig.suptitle("open-loop position error vs horizon per surface")
        fig.tight_layout()
        files.append(out / "position_error_per_surface.png")
        fig.savefig(files[-1], dpi=110)
        plt.close(fig)
    return files
