"""What a dataset contains: hours and samples per surface, source and label, and plots.

:func:`summarize` counts; :func:`summary_tables` turns the counts into rich tables;
:func:`save_plots` draws the speed distribution per surface, the g-g diagram coloured by friction,
the label counts and the driven paths (matplotlib, written to files).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import torch

from gym_s3.data.dataset import DrivingDataset
from gym_s3.data.labelling import LABEL_ROWS, labels_at
from gym_s3.scenarios.labels import LABELS
from gym_s3.tracks.surfaces import SURFACE_NAMES


def _label_windows(ds: DrivingDataset) -> torch.Tensor:
    """Bitmasks of consecutive ``LABEL_ROWS``-row windows of every episode ``(W,)``."""
    table = ds.table
    starts = [torch.arange(e.start, e.stop, LABEL_ROWS) for e in ds.episodes]
    start = torch.cat(starts) if starts else torch.zeros(0, dtype=torch.int64)
    if start.numel() == 0:
        return start
    return labels_at(table.label_inputs, start, table.segment_end[start], LABEL_ROWS)


def summarize(ds: DrivingDataset) -> dict[str, Any]:
    """Counts of a dataset.

    Returns:
        dict with ``episodes``, ``sessions``, ``samples``, ``hours``, ``content_hash``,
        ``val_sessions``, and per-group dicts ``surface``, ``source``, ``device``, ``track``
        (``{name: {"episodes", "samples", "hours"}}``) and ``labels`` (``{label: windows}`` over
        1 s windows, plus ``"_windows"``: the number of windows).
    """
    groups: dict[str, dict[str, dict[str, float]]] = {
        "surface": {}, "source": {}, "device": {}, "track": {}
    }  # fmt: skip
    for e in ds.episodes:
        track = e.meta.track.split(":")[0]
        device = e.meta.device.split(":")[0]
        for group, key in (("surface", e.meta.base_surface), ("source", e.meta.source),
                           ("device", device), ("track", track)):  # fmt: skip
            entry = groups[group].setdefault(key, {"episodes": 0, "samples": 0, "hours": 0.0})
            entry["episodes"] += 1
            entry["samples"] += e.num_rows
            entry["hours"] += e.num_rows * e.meta.dt / 3600.0
    masks = _label_windows(ds)
    labels = {name: int(((masks >> i) & 1).sum()) for i, name in enumerate(LABELS)}
    labels["_windows"] = int(masks.numel())
    return {
        "episodes": len(ds.episodes),
        "sessions": len(ds.sessions),
        "val_sessions": sum(ds.session_split(s) == "val" for s in ds.sessions),
        "samples": ds.num_samples,
        "hours": ds.hours,
        "content_hash": ds.content_hash,
        **groups,
        "labels": labels,
    }


def summary_tables(summary: dict[str, Any]) -> list[Any]:
    """Rich tables of a :func:`summarize` result (overview, per group, per label)."""
    from rich.table import Table

    overview = Table(title="dataset", show_header=False)
    overview.add_column("quantity", style="bold")
    overview.add_column("value", justify="right")
    overview.add_row("episodes", str(summary["episodes"]))
    overview.add_row("sessions (val)", f"{summary['sessions']} ({summary['val_sessions']})")
    overview.add_row("samples", f"{summary['samples']:,}")
    overview.add_row("hours", f"{summary['hours']:.2f}")
    overview.add_row("content hash", summary["content_hash"][:16])
    tables = [overview]
    total = max(summary["samples"], 1)
    for group in ("surface", "track", "source", "device"):
        table = Table(title=f"per {group}")
        for col in (group, "episodes", "samples", "hours", "share [%]"):
            table.add_column(col, justify="left" if col == group else "right")
        order = SURFACE_NAMES if group == "surface" else sorted(summary[group])
        for key in order:
            entry = summary[group].get(key)
            if entry is None:
                continue
            share = 100 * entry["samples"] / total
            table.add_row(key, str(entry["episodes"]), f"{entry['samples']:,}",
                          f"{entry['hours']:.3f}", f"{share:.1f}")  # fmt: skip
        tables.append(table)
    labels = summary["labels"]
    windows = max(labels["_windows"], 1)
    table = Table(title=f"scenario labels ({labels['_windows']:,} windows of 1 s)")
    for col in ("label", "windows", "share [%]"):
        table.add_column(col, justify="left" if col == "label" else "right")
    for name in LABELS:
        table.add_row(name, f"{labels[name]:,}", f"{100 * labels[name] / windows:.1f}")
    tables.append(table)
    return tables


def save_plots(ds: DrivingDataset, out_dir: str | Path) -> list[Path]:
    """Write the summary plots (PNG) into ``out_dir``; returns the files."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    c = ds.columns
    surface = ds.table.surface
    files = []

    fig, ax = plt.subplots(figsize=(7, 4))
    for i, name in enumerate(SURFACE_NAMES):
        sel = surface == i
        if bool(sel.any()):
            ax.hist(c["v_long"][sel].numpy(), bins=60, histtype="step", label=name, density=True)
    ax.set_xlabel("v_long [m/s]")
    ax.set_ylabel("density [-]")
    ax.set_title("speed per base surface")
    ax.legend()
    files.append(_save(fig, out / "speed_per_surface.png"))

    fig, ax = plt.subplots(figsize=(5, 5))
    mu = ds.wheel_mu().mean(-1).numpy()
    step = max(1, ds.num_samples // 50_000)
    sc = ax.scatter(c["ay"][::step].numpy(), c["ax"][::step].numpy(), c=mu[::step], s=1,
                    cmap="viridis", vmin=0.0, vmax=1.0)  # fmt: skip
    fig.colorbar(sc, ax=ax, label="mean wheel friction [-]")
    ax.set_xlabel("ay [m/s^2]")
    ax.set_ylabel("ax [m/s^2]")
    ax.set_title("g-g diagram")
    ax.set_aspect("equal")
    files.append(_save(fig, out / "gg_diagram.png"))

    fig, ax = plt.subplots(figsize=(7, 3.5))
    labels = summarize(ds)["labels"]
    ax.bar(list(LABELS), [labels[n] for n in LABELS])
    ax.set_ylabel("1 s windows [-]")
    ax.set_title("scenario labels")
    ax.tick_params(axis="x", rotation=30)
    files.append(_save(fig, out / "labels.png"))

    fig, ax = plt.subplots(figsize=(6, 6))
    tracks = Counter(e.meta.track for e in ds.episodes)
    top = tracks.most_common(1)[0][0] if tracks else ""
    for e in ds.episodes:
        if e.meta.track == top:
            ax.plot(c["x"][e.start : e.stop].numpy(), c["y"][e.start : e.stop].numpy(), lw=0.6)
    ax.set_aspect("equal")
    ax.set_xlabel("x [m]")
    ax.set_ylabel("y [m]")
    ax.set_title(f"driven paths on {top}")
    files.append(_save(fig, out / "paths.png"))
    return files


def _save(fig: Any, path: Path) -> Path:
    """Save and close a figure; returns its path."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
