"""``s3 gap``: the sim-to-sim gap of a policy, measured on the same laps in both simulators.

The policy drives each lap (same track, surface layout, standing start and task) once in
``S3Distilled-v0`` on its own dynamics backend and once in ``S3BeamNG-v0`` (the open stand-in by
default, BeamNG.tech with ``--beamng``), through the one lap implementation of
:mod:`policies.evaluate`. Per condition, ``gap.json`` holds both metric sets and their ratio
high-fidelity / distilled: 1 means the distilled env predicted the policy's lap; above 1 it was
too optimistic. ``ends`` counts the laps whose ending (completed, stalled, off the road, ...) the
distilled env predicted, and names the laps it let through that the high-fidelity side failed
(optimistic) and those it failed that the high-fidelity side completed (pessimistic): a failure
the distilled env does not reproduce is one no training inside it can teach a policy to avoid.
``s3 gap expert --backend B`` drives the scripted expert instead of a policy: the gap of the
dynamics backend itself, closed loop on the expert's own driving (the data the backend was
distilled from), whatever any policy learned. A table (terminal and ``gap.md``) and, per
condition, a plot of both trajectories on the track and both error traces along the lap go with
it. Every artefact names the high-fidelity simulator
(open stand-in or BeamNG.tech). ``--tracks`` drives every condition on several tracks.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from gym_s3.errors import ConfigError
from gym_s3.spec import CONTROL_DT_S
from policies.expert_driver import EXPERT

if TYPE_CHECKING:  # the evaluation (torch) is imported only when a gap is measured
    from policies.evaluate import RunResult

#: Metrics of the gap (``RunResult.metrics`` plus the derived lap time and early progress).
GAP_METRICS: dict[str, str] = {
    "cte_mean": "m",
    "cte_max": "m",
    "lap_time": "s",
    "progress_120s": "1",
    "completion": "1",
    "speed_error_mean": "m/s",
    "action_smoothness": "1",
}
#: Time at which the early progress is read [s] (laps on ice take minutes).
PROGRESS_AT_S = 120.0


def gap_metrics(run: RunResult) -> dict[str, float | None]:
    """:data:`GAP_METRICS` of one lap.

    ``lap_time`` is the time driven [s] (the full lap only when it completed: ``None``
    otherwise); ``progress_120s`` is the share of the lap covered after 120 s (the final
    share if the run ended earlier).
    """
    ref = run.reference
    length = ref.length if ref is not None else float("nan")
    k = min(len(run.s), round(PROGRESS_AT_S / CONTROL_DT_S)) - 1
    s = np.unwrap(run.s, period=length) if ref is not None and ref.closed else run.s
    progress = float(s[k] - s[0]) / length if k >= 0 else 0.0
    steps = run.metrics["steps"]
    return {
        "cte_mean": run.metrics["cte_mean"],
        "cte_max": run.metrics["cte_max"],
        "lap_time": steps * CONTROL_DT_S if run.terminated_by == "completed" else None,
        "progress_120s": progress,
        "completion": run.metrics["completion"],
        "speed_error_mean": run.metrics["speed_error_mean"],
        "action_smoothness": run.metrics["action_smoothness"],
    }


def gap_entry(distilled: RunResult, highfi: RunResult) -> dict[str, Any]:
    """One ``runs`` entry: condition, both metric sets and ratio = high-fidelity / distilled.

    A ratio is ``None`` when either value is missing or the distilled value is 0.
    """
    d, h = gap_metrics(distilled), gap_metrics(highfi)
    ratio = {k: (h[k] / d[k] if h[k] is not None and d[k] else None) for k in GAP_METRICS}
    return {
        "condition": distilled.condition,
        "distilled": {"env": distilled.env, "end": distilled.terminated_by, **d},
        "highfi": {"env": highfi.env, "end": highfi.terminated_by, **h},
        "ratio": ratio,
    }


def gap_ends(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Whether the distilled env predicted how each lap ended (``runs``: :func:`gap_entry` s).

    Returns:
        ``laps`` (count), ``agree`` (laps ending the same way in both), ``optimistic`` (the
        conditions the distilled env completed and the high-fidelity side did not) and
        ``pessimistic`` (the reverse), each a list of condition descriptions.
    """
    from policies.evaluate import describe_condition

    def done(side: dict[str, Any]) -> bool:
        return side["end"] == "completed"

    return {
        "laps": len(runs),
        "agree": sum(r["distilled"]["end"] == r["highfi"]["end"] for r in runs),
        "optimistic": [describe_condition(r["condition"]) for r in runs
                       if done(r["distilled"]) and not done(r["highfi"])],
        "pessimistic": [describe_condition(r["condition"]) for r in runs
                        if done(r["highfi"]) and not done(r["distilled"])],
    }  # fmt: skip


def ends_line(ends: dict[str, Any]) -> str:
    """One sentence on :func:`gap_ends`."""
    line = (f"Ends agree on {ends['agree']} of {ends['laps']} laps; the distilled env completed "
            f"{len(ends['optimistic'])} the high-fidelity side failed (optimistic) and failed "
            f"{len(ends['pessimistic'])} it completed (pessimistic).")  # fmt: skip
    if ends["optimistic"]:
        line += f" Optimistic: {', '.join(ends['optimistic'])}."
    if ends["pessimistic"]:
        line += f" Pessimistic: {', '.join(ends['pessimistic'])}."
    return line


def measure_gap(
    policy: Any | None,
    *,
    track: str = "putnam",
    surfaces: Sequence[str] = ("asphalt", "snow", "ice"),
    ice_patches: Sequence[int] = (0, 6),
    seed: int = 0,
    backend: str | None = None,
    checkpoint: str | None = None,
    max_steps: int | None = None,
    time_limit_s: float | None = None,
    standin: bool = True,
    fast: bool = True,
    progress: bool = True,
    batched: bool = False,
    **sim_options: Any,
) -> tuple[dict[str, Any], list[tuple[RunResult, RunResult]]]:
    """Drive the laps in both simulators; returns ``(gap.json content, run pairs)``.

    Args:
        policy: the policy (:class:`policies.checkpoint.Policy`); ``None``: the scripted expert
            drives (``backend`` then required).
        track: track of the laps.
        surfaces: base surfaces of the laps.
        ice_patches: numbers of ice patches on each surface.
        seed: episode and patch-placement seed.
        backend: distilled backend (default: the policy's own).
        checkpoint: dynamics checkpoint of ``backend`` (default: the shipped one).
        max_steps: cap on the steps of each lap (short laps for quick checks).
        time_limit_s: lap time limit [s] (default: twice the reference lap).
        standin: high-fidelity side in the open stand-in (``False``: BeamNG.tech via
            ``sim_options``).
        fast: compiled float32 stand-in physics (``False``: the eager float64 reference).
        progress: print one line per lap.
        batched: high-fidelity side in the stand-in's vehicle model, every lap one car of one
            batch in-process (:mod:`policies.evaluate_model`: the same laps and physics as the
            stand-in through ``S3BeamNG-v0``, many times faster); needs ``standin``.
        **sim_options: BeamNG.tech connection (``host``, ``port``, ...) when not ``standin``.
    """
    from policies.evaluate import evaluate_beamng
    from policies.evaluate_distilled import evaluate_distilled_laps
    from policies.evaluate_model import evaluate_model, lap_grid

    if batched and not standin:
        raise ConfigError("the batched vehicle model is the stand-in's physics; drop --beamng")
    expert = policy is None
    if expert and backend is None:
        raise ConfigError(
            "the scripted expert has no dynamics backend of its own: name the distilled env's "
            "backend (s3 gap expert --backend ddm)"
        )

    laps = dict(track=track, surfaces=surfaces, ice_patches=ice_patches, seed=seed,
                max_steps=max_steps, time_limit_s=time_limit_s, progress=progress,
                expert=expert)  # fmt: skip
    distilled = evaluate_distilled_laps(policy, backend=backend, checkpoint=checkpoint, **laps)
    if batched:
        grid = lap_grid([track], surfaces, ice_patches)
        drivers = [] if expert else [(policy.backend, policy)]
        highfi = evaluate_model(drivers, grid, seed=seed, max_steps=max_steps,
                                time_limit_s=time_limit_s, expert=expert, fast=fast,
                                progress=progress)  # fmt: skip
    else:
        highfi = evaluate_beamng(policy, standin=standin, fast=fast, **laps, **sim_options)
    pairs = list(zip(distilled, highfi, strict=True))
    report = {
        "policy": EXPERT if expert else str(getattr(policy, "path", "")),
        "driver": EXPERT if expert else "policy",
        "backend": backend or policy.backend,
        "distilled": distilled[0].env if distilled else None,
        "highfi": highfi[0].env if highfi else None,
        "simulator": simulator_name(standin)
        + (" vehicle model, batched in-process" if batched else ""),
        "ratio": "high-fidelity / distilled",
        "runs": [gap_entry(d, h) for d, h in pairs],
    }
    report["ends"] = gap_ends(report["runs"])
    return report, pairs


def measure_gap_tracks(
    policy: Any, tracks: Sequence[str], **options: Any
) -> tuple[dict[str, Any], list[tuple[RunResult, RunResult]]]:
    """:func:`measure_gap` on every track of ``tracks``, as one report (runs in track order)."""
    if not tracks:
        raise ConfigError("give at least one track")
    report: dict[str, Any] = {}
    pairs: list[tuple[RunResult, RunResult]] = []
    for track in tracks:
        part, part_pairs = measure_gap(policy, track=track, **options)
        report = {**part, "runs": report.get("runs", []) + part["runs"]}
        pairs += part_pairs
    report["ends"] = gap_ends(report["runs"])
    return report, pairs


def simulator_name(standin: bool) -> str:
    """What the high-fidelity side is, in words."""
    return "open stand-in (not BeamNG.tech)" if standin else "BeamNG.tech"


def _fmt(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def gap_markdown(report: dict[str, Any]) -> str:
    """The gap table as Markdown: per condition, both values and the ratio of each metric."""
    from policies.evaluate import describe_condition

    shown = ("cte_mean", "cte_max", "lap_time", "progress_120s")
    head = ["condition", "end (distilled / high-fi)"]
    for k in shown:
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
        for k in shown:
            cells += [_fmt(d[k]), _fmt(h[k]), _fmt(r[k])]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", ends_line(gap_ends(report["runs"]))]
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
        for k in ("cte_mean", "cte_max", "lap_time", "progress_120s"):
            row += [f"{_fmt(d[k])} / {_fmt(h[k])}", _fmt(r[k])]
        table.add_row(*row)
    console = result_console(min_width=170)
    console.print(table)
    console.print(escape(ends_line(gap_ends(report["runs"]))))


def plot_gap(distilled: RunResult, highfi: RunResult, simulator: str, out: Path) -> Path:
    """Both trajectories on the track, and both error and speed traces along the lap."""
    from gym_s3.tracks.plot import new_axes, plot_track
    from policies.report import lap_traces, run_tag

    ax = new_axes((14.0, 7.0))
    fig = ax.figure
    fig.clear()
    left, right = fig.subfigures(1, 2, width_ratios=(1.0, 1.1))
    track_ax = left.add_subplot()
    plot_track(distilled.reference, layout=distilled.layout, ax=track_ax,
               trajectories={distilled.env: distilled.trajectory,
                             f"{highfi.env}": highfi.trajectory})  # fmt: skip
    top, bottom = right.subplots(2, 1, sharex=True)
    high = lap_traces(highfi)
    for run, style, lap in ((distilled, "-", lap_traces(distilled)), (highfi, "--", high)):
        top.plot(
            lap["s"], lap["cte"], style, linewidth=1.0, label=f"{run.env} ({run.terminated_by})"
        )
        bottom.plot(lap["s"], lap["speed"], style, linewidth=1.0, label=run.env)
    bottom.plot(high["s"], high["target"], ":", color="k", linewidth=0.8, label="target")
    top.axhline(0.0, color="k", linewidth=0.5)
    top.set_ylabel("cross-track error [m]")
    top.set_title(f"{distilled.describe()}: distilled vs high-fidelity, {simulator}",
                  fontsize=10)  # fmt: skip
    top.legend(fontsize=8)
    bottom.set_xlabel("arc length along the reference [m]")
    bottom.set_ylabel("speed [m/s]")
    bottom.legend(fontsize=8)
    path = out / f"gap_{run_tag(distilled)}.png"
    fig.savefig(path, dpi=110)
    return path


def write_gap(report: dict[str, Any], pairs: Sequence[tuple[RunResult, RunResult]],
              out_dir: str | Path) -> list[Path]:  # fmt: skip
    """Write ``gap.json``, ``gap.md`` and one plot per condition; print the table."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    print_gap(report)
    files = [out / "gap.json", out / "gap.md"]
    files[0].write_text(json.dumps(report, indent=2) + "\n")
    files[1].write_text(gap_markdown(report))
    for d, h in pairs:
        if d.reference is not None and len(d.trajectory) and len(h.trajectory):
            files.append(plot_gap(d, h, report["simulator"], out))
    return files


def register(subparsers: Any) -> None:
    """Add ``s3 gap`` to the command line."""
    p = subparsers.add_parser(
        "gap",
        help="sim-to-sim gap of a policy or of a backend (driven by the scripted expert): the "
        "same laps in S3Distilled-v0 and S3BeamNG-v0",
        description="Drive the same laps (track, surface layout, standing start, task) with a "
        "policy (or the scripted expert: 'expert' --backend B) in S3Distilled-v0 on its dynamics "
        "backend and in S3BeamNG-v0 (the open stand-in unless --beamng), and write gap.json "
        "(per condition: both metric sets and the ratio high-fidelity / distilled), gap.md and "
        "plots of both trajectories and error traces.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    from policies.checkpoint import SHIPPED_POLICIES

    p.add_argument("policy", help=f"shipped policy ({', '.join(SHIPPED_POLICIES)}), checkpoint "
                   f"path (.json sidecar or stem), or '{EXPERT}': the scripted expert "
                   "drives, which measures the gap of the dynamics backend itself on the "
                   "expert's own driving (needs --backend)")  # fmt: skip
    from policies.lap_options import add_beamng_options, add_lap_options

    add_lap_options(p, surfaces="asphalt,snow,ice", ice_patches="0,6")
    add_beamng_options(p, when="with --beamng").add_argument(
        "--beamng",
        action="store_true",
        help="high-fidelity side in BeamNG.tech at --host/--port (default: stand-in)",
    )
    p.add_argument(
        "--simulator",
        choices=("standin", "model"),
        default="standin",
        help="high-fidelity side on the stand-in: standin (S3BeamNG-v0 through beamngpy and the "
        "stand-in server, one lap after another) or model (every lap one car of one batch of "
        "the stand-in's vehicle model in-process: the same laps and physics, many times faster)",
    )
    p.add_argument("--tracks", default=None,
                   help="comma-separated tracks, each driven with every condition (replaces "
                   "--track), e.g. town:50,town:51,procedural:201")  # fmt: skip
    p.add_argument("--out", type=Path, default=Path("runs/gap"), help="output folder")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from policies.checkpoint import resolve_policy
    from policies.lap_options import beamng_options, csv_list

    if args.tracks and args.track != "putnam":
        raise ConfigError("give the tracks with --tracks or one track with --track, not both")
    tracks = csv_list(args.tracks, str) if args.tracks else [args.track]
    policy = None if args.policy == EXPERT else resolve_policy(args.policy)[1]
    sim = beamng_options(args, active=args.beamng, how="--beamng")
    report, pairs = measure_gap_tracks(
        policy, tracks, surfaces=csv_list(args.surfaces, str),
        ice_patches=csv_list(args.ice_patches, int), seed=args.seed, backend=args.backend,
        checkpoint=args.dynamics_checkpoint, max_steps=args.max_steps,
        time_limit_s=args.time_limit, standin=not args.beamng,
        batched=args.simulator == "model", **sim,
    )  # fmt: skip
    for path in write_gap(report, pairs, args.out):
        print(path)
    return 0
