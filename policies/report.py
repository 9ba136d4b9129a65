"""Evaluation reports: a table (terminal and Markdown), JSON, trajectory and error plots, GIFs."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from gym_s3.spec import CONTROL_DT_S
from policies.evaluate import METRICS, RunResult, lap_key


def run_tag(result: RunResult, *, with_env: bool = False) -> str:
    """File-name tag of a run, e.g. ``asphalt_p4`` or ``asphalt-to-ice_p0`` (``asphalt>ice``).

    A track other than Putnam leads the tag and a named driver ends it:
    ``procedural-201_snow_p0_ddm``. ``with_env`` (a table of several environments, such as the
    backends of ``s3 evaluate --env distilled``, each with its own expert) appends the
    environment: ``snow_p0_expert_S3Distilled-v0-ddm``.
    """
    c = result.condition
    parts = [str(c.get("surface", "run")).replace(">", "-to-")]
    if c.get("track", "putnam") != "putnam":  # tables of several tracks
        parts.insert(0, _slug(str(c["track"])))
    if "ice_patches" in c:
        parts.append(f"p{c['ice_patches']}")
    if "label" in c:
        parts.append(str(c["label"]))
    if "seed" in c:
        parts.append(f"s{c['seed']}")
    if result.driver != "policy":
        parts.append(result.driver)
    if with_env:
        parts.append(_slug(result.env, keep=".-"))
    return "_".join(parts)


def _slug(text: str, keep: str = "") -> str:
    """``text`` for a file name: every character but letters, digits and ``keep`` becomes ``-``."""
    return "".join(ch if ch.isalnum() or ch in keep else "-" for ch in text)


def several_envs(results: Sequence[RunResult]) -> bool:
    """Whether a table holds runs of more than one environment (its rows then name theirs)."""
    return len({r.env for r in results}) > 1


def driver_label(result: RunResult, with_env: bool) -> str:
    """A run's driver as a table shows it: with its environment in a table of several."""
    return f"{result.driver} ({result.env})" if with_env else result.driver


#: A jump of the arc length between two samples longer than this is a wrap past the start line [m]
#: (a car covers less than 5 m per 50 ms control step).
WRAP_JUMP_M = 50.0


def lap_traces(result: RunResult) -> dict[str, np.ndarray]:
    """A run's traces along the lap for line plots, broken where the arc length wraps.

    A completed lap ends past the start line, where ``s`` drops from the lap length back to
    about 0 (and a car that rolls back over the start line jumps the other way); a line drawn
    through such a jump would cross the whole plot. A NaN row is inserted before every jump of
    ``s`` longer than :data:`WRAP_JUMP_M`, so the line breaks there.

    Returns:
        ``s``, ``cte``, ``speed``, ``target``: ``(T + J,)`` arrays for ``J`` wraps [m, m, m/s, m/s];
        and ``steer``, ``accel`` [1] when the run recorded its ``T`` actions.
    """
    names = ("s", "cte", "speed", "target")
    traces = {k: np.asarray(getattr(result, k), dtype=float) for k in names}
    actions = np.asarray(result.actions, dtype=float).reshape(-1, 2)
    if len(actions) and len(actions) == len(traces["s"]):
        traces["steer"], traces["accel"] = actions[:, 0], actions[:, 1]
    wraps = np.flatnonzero(np.abs(np.diff(traces["s"])) > WRAP_JUMP_M) + 1
    return {k: np.insert(v, wraps, np.nan) for k, v in traces.items()}


def _ratio(result: RunResult, key: str) -> str:
    """A policy's ratio to the expert as text (``-`` when there is none)."""
    value = result.vs_expert.get(key)
    return "-" if value is None else f"{value:.2f}"


#: Ratio columns of the lap tables (policy / scripted expert on the same lap).
RATIO_COLUMNS: dict[str, str] = {"cte_mean": "cte mean / expert", "cte_max": "cte max / expert",
                                 "lap_time": "lap time / expert"}  # fmt: skip


def metric_text(metrics: dict[str, float], name: str) -> str:
    """A metric as table text: steps as counts, the rest to the millimetre.

    ``-`` when absent: results saved before the metric existed still load into a table.
    """
    if name not in metrics:
        return "-"
    if "steps" in name:
        return f"{metrics[name]:.0f}"
    return f"{metrics[name]:+.3f}" if name == "corner_offset_mean" else f"{metrics[name]:.3f}"


def markdown_table(results: Sequence[RunResult]) -> str:
    """The metric table of the runs as Markdown (one row per run)."""
    cols = ["condition", "driver", "end", *(f"{m} [{u}]" for m, u in METRICS.items()),
            *RATIO_COLUMNS.values()]  # fmt: skip
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    with_env = several_envs(results)
    for r in results:
        vals = [metric_text(r.metrics, m) for m in METRICS]
        ratios = [_ratio(r, k) for k in RATIO_COLUMNS]
        cells = [r.describe(), driver_label(r, with_env), r.terminated_by, *vals, *ratios]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def print_table(results: Sequence[RunResult], title: str) -> None:
    """Print the metric table with rich."""
    from rich.markup import escape
    from rich.table import Table

    from gym_s3.progress import result_console

    table = Table(title=title, caption=", ".join(sorted({r.env for r in results})))
    for col in ("condition", "driver", "end", "completion", "cte mean [m]", "cte max [m]",
                "corner offset [m]", "heading [rad]", "speed err [m/s]", "smoothness",
                "off-track [steps]",
                "time [s]", *RATIO_COLUMNS.values()):  # fmt: skip
        table.add_column(escape(col), justify="right", no_wrap=True)  # "[m]" is not markup
    with_env = several_envs(results)
    for r in results:
        m = r.metrics
        table.add_row(
            r.describe(),
            escape(driver_label(r, with_env)),
            r.terminated_by,
            f"{m['completion']:.2f}",
            f"{m['cte_mean']:.2f}",
            f"{m['cte_max']:.2f}",
            f"{m['corner_offset_mean']:+.2f}" if "corner_offset_mean" in m else "-",
            f"{m['heading_error_mean']:.3f}",
            f"{m['speed_error_mean']:.2f}",
            f"{m['action_smoothness']:.4f}",
            f"{m['off_track_steps']:.0f}",
            f"{m['steps'] * CONTROL_DT_S:.1f}",
            *(_ratio(r, k) for k in RATIO_COLUMNS),
        )
    result_console(min_width=230).print(table)


def plot_run(result: RunResult, path, layout, out: Path, *, with_env: bool = False) -> list[Path]:
    """Trajectory over the track (with surface patches); errors and actions along the lap.

    ``with_env``: the file names carry the environment (:func:`run_tag`).
    """
    from gym_s3.tracks.plot import figsize_for, new_axes, plot_track, save_plot

    tag = run_tag(result, with_env=with_env)
    files = []
    ax = new_axes(figsize_for(path))
    plot_track(path, layout=layout, trajectories={f"{result.env} ({tag})": result.trajectory},
               ax=ax)  # fmt: skip
    files.append(out / f"trajectory_{tag}.png")
    save_plot(ax, str(files[-1]))
    lap = lap_traces(result)
    fig_ax = new_axes((9.0, 7.0 if "steer" in lap else 5.0))
    fig = fig_ax.figure
    fig.clear()
    panels = fig.subplots(3 if "steer" in lap else 2, 1, sharex=True)
    top, bottom = panels[0], panels[1]
    top.plot(lap["s"], lap["cte"], linewidth=1.0)
    top.axhline(0.0, color="k", linewidth=0.5)
    top.set_ylabel("cross-track error [m]")
    top.set_title(f"{result.env}: {tag} ({result.terminated_by})", fontsize=10)
    bottom.plot(lap["s"], lap["speed"], linewidth=1.0, label="speed")
    bottom.plot(lap["s"], lap["target"], linewidth=1.0, linestyle="--", label="target")
    bottom.set_ylabel("speed [m/s]")
    bottom.legend(fontsize=8)
    if "steer" in lap:  # what the driver did: a stall at rest with the brake on shows here
        panels[2].plot(lap["s"], lap["steer"], linewidth=1.0, label="steer (+ right)")
        panels[2].plot(lap["s"], lap["accel"], linewidth=1.0, label="accel (+ throttle, - brake)")
        panels[2].set_ylim(-1.05, 1.05)
        panels[2].set_ylabel("action [1]")
        panels[2].legend(fontsize=8)
    panels[-1].set_xlabel("arc length along the reference [m]")
    files.append(out / f"errors_{tag}.png")
    fig.savefig(files[-1], dpi=120)
    return files


def plot_labels(results: Sequence[RunResult], out: Path) -> list[Path]:
    """Bars per label set: share of the route covered and mean |cte| (``labels.png``)."""
    rows = [r for r in results if "label" in r.condition]
    if not rows:
        return []
    from gym_s3.tracks.plot import new_axes

    ax = new_axes((max(6.0, 1.1 * len(rows) + 2.0), 6.0))
    fig = ax.figure
    fig.clear()
    top, bottom = fig.subplots(2, 1, sharex=True)
    names = [f"{r.condition['label']}\n({r.env.split(' ')[0].split('/')[-1]})" for r in rows]
    x = np.arange(len(rows))
    top.bar(x, [r.metrics["completion"] for r in rows], color="tab:green")
    top.set_ylabel("route covered [share]")
    top.set_ylim(0.0, 1.0)
    top.set_title(", ".join(sorted({r.env for r in rows})), fontsize=10)
    bottom.bar(x, [r.metrics["cte_mean"] for r in rows], color="tab:blue")
    bottom.set_ylabel("mean |cross-track error| [m]")
    bottom.set_xticks(x, names, rotation=30, ha="right", fontsize=8)
    path = out / "labels.png"
    fig.savefig(path, dpi=120)
    return [path]


#: which runs ``write_evaluation`` plots: every run, every run of a lap that some driver did not
#: complete, or none
PLOT_CHOICES = ("all", "failed", "none")


def runs_to_plot(results: Sequence[RunResult], plots: str) -> list[bool]:
    """Per run, whether it gets its trajectory and error plots under ``plots`` (PLOT_CHOICES).

    ``failed`` keeps every driver's run of a lap (same env and condition) that one driver did not
    complete, so the expert's lap sits beside the policy's that left the road or stalled.
    """
    if plots not in PLOT_CHOICES:
        raise ValueError(f"plots must be one of {PLOT_CHOICES}, got {plots!r}")
    if plots != "failed":
        return [plots == "all"] * len(results)
    failed = {lap_key(r) for r in results if r.terminated_by != "completed"}
    return [lap_key(r) in failed for r in results]


def write_evaluation(
    results: Sequence[RunResult],
    out_dir: str | Path,
    *,
    title: str,
    paths_and_layouts: Sequence[tuple] | None = None,
    plots: str = "all",
) -> list[Path]:
    """Write ``results.json``, ``results.md``, plots and GIFs of an evaluation; print the table.

    Args:
        results: the runs.
        out_dir: output folder (created).
        title: report title.
        paths_and_layouts: per run, the ``(ReferencePath, SurfaceLayout)`` to plot it on
            (default: taken from ``result.condition`` via the track registry).
        plots: which runs get their two plots (:func:`runs_to_plot`; about a second each on
            one core, so ``failed`` or ``none`` for tables of hundreds of laps).

    Returns:
        the written files.
    """
    plotted = runs_to_plot(results, plots)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    print_table(results, title)
    files = [out / "results.json", out / "results.md"]
    summary = {"title": title, "runs": [r.to_json() for r in results]}
    files[0].write_text(json.dumps(summary, indent=2) + "\n")
    files[1].write_text(f"# {title}\n\n" + markdown_table(results))
    with_env = several_envs(results)  # e.g. one expert per backend: the file names tell them apart
    for i, r in enumerate(results):
        if paths_and_layouts is not None:
            path, layout = paths_and_layouts[i]
        else:
            path, layout = r.reference, r.layout
        if plotted[i] and path is not None and len(r.trajectory):
            files += plot_run(r, path, layout, out, with_env=with_env)
        if r.frames:
            from gym_s3.envs.gif import write_gif

            gif = out / f"run_{run_tag(r, with_env=with_env)}.gif"
            files.append(write_gif(np.stack(r.frames), gif, fps=10))
    files += plot_labels(results, out)
    return files
