"""The artefacts of ``s3 gap``: table (terminal and Markdown), ``gap.json`` and one plot per lap.

Every artefact names the high-fidelity simulator (open stand-in or BeamNG.tech) and, for an
ensemble distilled env, how many dynamics models drove each lap. Measuring is in
:mod:`policies.gap`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from policies.gap import GAP_COLUMNS, GAP_METRICS
from policies.gap_bar import bar_line, ends_line, gap_bar, gap_ends

if TYPE_CHECKING:
    from policies.evaluate import RunResult


def _fmt(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _summary_lines(report: dict[str, Any]) -> list[str]:
    """The sentences under the table: laps' ends, and the bar where its conditions were driven."""
    lines = [ends_line(gap_ends(report["runs"]))]
    bar = gap_bar(report)
    if bar["cells"]:
        lines.append(bar_line(bar))
    return lines


def gap_markdown(report: dict[str, Any]) -> str:
    """The gap table as Markdown: per condition, both values and the ratio of each metric."""
    from policies.evaluate import describe_condition

    head = ["condition", "end (distilled / high-fi)"]
    for k in GAP_COLUMNS:
        head += [f"{k} distilled [{GAP_METRICS[k]}]", f"{k} high-fi", f"{k} ratio"]
    lines = [
        f"# Sim-to-sim gap: {report['distilled']} vs {report['highfi']}",
        "",
        f"High-fidelity simulator: {report['simulator']}. Ratio = high-fidelity / distilled "
        "(1: the distilled env predicted the lap; > 1: it was optimistic).",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for run in report["runs"]:
        d, h, r = run["distilled"], run["highfi"], run["ratio"]
        cells = [describe_condition(run["condition"]), f"{d['end']} / {h['end']}"]
        for k in GAP_COLUMNS:
            cells += [_fmt(d[k]), _fmt(h[k]), _fmt(r[k])]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", *_summary_lines(report)]
    return "\n".join(lines) + "\n"


def print_gap(report: dict[str, Any]) -> None:
    """The gap table in the terminal (rich)."""
    from rich.markup import escape
    from rich.table import Table

    from gym_s3.progress import result_console
    from policies.evaluate import describe_condition

    table = Table(title=f"Sim-to-sim gap of {report['policy']}",
                  caption=f"{report['distilled']} vs {report['highfi']}; high-fidelity: "
                  f"{report['simulator']}; ratio = high-fi / distilled")  # fmt: skip
    cols = ("condition", "end", "cte mean [m]", "ratio", "cte max [m]", "ratio",
            "lap time [s]", "ratio", "progress 120 s", "ratio")  # fmt: skip
    for col in cols:
        table.add_column(escape(col), justify="right", no_wrap=True)
    for run in report["runs"]:
        d, h, r = run["distilled"], run["highfi"], run["ratio"]
        row = [describe_condition(run["condition"]), f"{d['end']} / {h['end']}"]
        for k in GAP_COLUMNS:
            row += [f"{_fmt(d[k])} / {_fmt(h[k])}", _fmt(r[k])]
        table.add_row(*row)
    console = result_console(min_width=170)
    console.print(table)
    for line in _summary_lines(report):
        console.print(escape(line))


def plot_gap(distilled: Sequence[RunResult], highfi: RunResult, simulator: str, out: Path
             ) -> Path:  # fmt: skip
    """Both trajectories on the track, and both error and speed traces along the lap.

    ``distilled`` holds the lap in each dynamics model of the distilled env (one line each).
    """
    from gym_s3.tracks.plot import new_axes, plot_track
    from policies.report import lap_traces, run_tag

    first = distilled[0]
    several = len(distilled) > 1

    def label(k: int, run: RunResult) -> str:
        return f"{run.env}, model {k}" if several else run.env

    ax = new_axes((14.0, 7.0))
    fig = ax.figure
    fig.clear()
    left, right = fig.subfigures(1, 2, width_ratios=(1.0, 1.1))
    track_ax = left.add_subplot()
    paths = {label(k, run): run.trajectory for k, run in enumerate(distilled)}
    plot_track(first.reference, layout=first.layout, ax=track_ax,
               trajectories={**paths, highfi.env: highfi.trajectory})  # fmt: skip
    top, bottom = right.subplots(2, 1, sharex=True)
    high = lap_traces(highfi)
    runs = [(label(k, run), run, "-") for k, run in enumerate(distilled)]
    for name, run, style in (*runs, (highfi.env, highfi, "--")):
        lap = high if run is highfi else lap_traces(run)
        top.plot(lap["s"], lap["cte"], style, linewidth=1.0,
                 label=f"{name} ({run.terminated_by})")  # fmt: skip
        bottom.plot(lap["s"], lap["speed"], style, linewidth=1.0, label=name)
    bottom.plot(high["s"], high["target"], ":", color="k", linewidth=0.8, label="target")
    top.axhline(0.0, color="k", linewidth=0.5)
    top.set_ylabel("cross-track error [m]")
    top.set_title(f"{first.describe()}: distilled vs high-fidelity, {simulator}",
                  fontsize=10)  # fmt: skip
    top.legend(fontsize=8)
    bottom.set_xlabel("arc length along the reference [m]")
    bottom.set_ylabel("speed [m/s]")
    bottom.legend(fontsize=8)
    path = out / f"gap_{run_tag(first)}.png"
    fig.savefig(path, dpi=110)
    return path


def write_gap(report: dict[str, Any],
              pairs: Sequence[tuple[Sequence[RunResult], RunResult]],
              out_dir: str | Path) -> list[Path]:  # fmt: skip
    """Write ``gap.json``, ``gap.md`` and one plot per condition; print the table.

    ``pairs``: per lap, its runs in the distilled env (one per dynamics model) and its
    high-fidelity run (:func:`policies.gap.measure_gap`).
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    print_gap(report)
    files = [out / "gap.json", out / "gap.md"]
    files[0].write_text(json.dumps(report, indent=2) + "\n")
    files[1].write_text(gap_markdown(report))
    for distilled, highfi in pairs:
        if (
            distilled[0].reference is not None
            and len(highfi.trajectory)
            and all(len(run.trajectory) for run in distilled)
        ):
            files.append(plot_gap(distilled, highfi, report["simulator"], out))
    return files
