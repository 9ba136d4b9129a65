"""The pipeline report: ``report.md`` and a self-contained-looking ``report.html`` beside it."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from policies.evaluate import describe_condition
from policies.pipeline.config import VALIDATION_SIMULATORS, PipelineConfig
from policies.pipeline.stages import StageOutcome
from policies.report import metric_text
from policies.scorecard import build_scorecard, scorecard_markdown


def _read(path: str | Path) -> Any:
    return json.loads(Path(path).read_text())


def _open_loop_table(report: Mapping[str, Any]) -> str:
    horizons = [str(h) for h in report["horizons"]]
    dt = report.get("dt") or 0.05
    head = "| backend | metric | " + " | ".join(f"{h} steps ({int(h) * dt:g} s)" for h in horizons)
    lines = [head + " |", "|---|---|" + "---|" * len(horizons)]
    for name, res in report["results"].items():
        for metric, unit in report["metrics"].items():
            cells = " | ".join(f"{res['all'][metric][h]:.4g}" for h in horizons)
            lines.append(f"| {name} | {metric} [{unit}] | {cells} |")
    return "\n".join(lines) + "\n"


def _per_surface_table(report: Mapping[str, Any], horizon: str = "20") -> str:
    surfaces = sorted(
        {g for res in report["results"].values() for g in res if g.startswith("surface:")}
    )
    lines = ["| backend | " + " | ".join(s.split(":", 1)[1] for s in surfaces) + " |",
             "|---|" + "---|" * len(surfaces)]  # fmt: skip
    for name, res in report["results"].items():
        cells = [f"{res[s]['position'][horizon]:.3f}" if s in res else "-" for s in surfaces]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _policy_table(results: Mapping[str, str]) -> str:
    """One row per evaluation run; patch runs identical to the lap without patches are marked."""
    lines = ["| policy | condition | end | completion | cte mean [m] | cte max [m] "
             "| corner offset [m] | heading [rad] | speed err [m/s] | smoothness "
             "| off-track [steps] |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    unreached = 0
    for name, path in results.items():
        runs = _read(path)["runs"]
        plain = {r["condition"].get("surface"): r["metrics"] for r in runs
                 if not r["condition"].get("ice_patches")}  # fmt: skip
        for run in runs:
            m = run["metrics"]
            cond = describe_condition(run["condition"])
            if (
                run["condition"].get("ice_patches")
                and plain.get(run["condition"].get("surface")) == m
            ):
                cond += " (no patch reached)"
                unreached += 1
            who = name if run.get("driver", "policy") == "policy" else f"{run['driver']} ({name})"
            lines.append(
                f"| {who} | {cond} | {run['terminated_by']} | {m['completion']:.2f} | "
                f"{m['cte_mean']:.2f} | {m['cte_max']:.2f} | "
                f"{metric_text(m, 'corner_offset_mean')} | {m['heading_error_mean']:.3f} | "
                f"{m['speed_error_mean']:.2f} | {m['action_smoothness']:.4f} | "
                f"{m['off_track_steps']:.0f} |"
            )
    if unreached:
        lines += [
            "",
            f"{unreached} run(s) with ice patches are marked *no patch reached*: their metrics "
            "equal the same policy's lap without patches, because the patches were placed along "
            "the whole lap and the car never got to one within the evaluated window "
            "(`eval_max_steps`). They measure nothing about ice.",
        ]
    return "\n".join(lines) + "\n"


def training_budget(name: str, train: Mapping[str, Any]) -> str:
    """How policy ``name`` was trained: frames, wall time and where (this run or shipped).

    Args:
        name: policy name.
        train: the train stage's result (``policies``: name -> checkpoint; ``trained``: the
            policies trained in this run with ``frames`` and ``wall_s``).
    """
    done = train.get("trained", {}).get(name)
    if done is not None:
        return f"{_frames(done['frames'])}, {done['wall_s']:.0f} s, in this run"
    try:
        from gym_s3.checkpoints import read_sidecar

        sidecar_meta = read_sidecar(train["policies"][name]).get("meta", {})
        members = sidecar_meta.get("member_training")
        if members:  # an ensemble (`s3 ensemble`): K trainings
            frames = [m.get("frames") for m in members]
            walls = [m.get("wall_s") for m in members]
            if None in frames:
                return f"shipped ensemble of {len(members)} (budget unknown)"
            wall_text = f", {sum(walls) / 60:.0f} min in all" if None not in walls else ""
            return f"{len(members)} x {_frames(frames[0])}{wall_text}, shipped ensemble"
        meta = sidecar_meta.get("training", {})
    except Exception:  # noqa: BLE001 - an unreadable sidecar only loses this cell
        return "shipped (budget unknown)"
    frames, wall = meta.get("frames"), meta.get("wall_s")
    if frames is None:
        return "shipped (budget unknown)"
    where = meta.get("device", "?")
    wall_text = f", {wall / 60:.0f} min on {where}" if wall is not None else ""
    return f"{_frames(frames)}{wall_text}, shipped"


def _frames(count: int) -> str:
    """``"24.1 M frames"`` or ``"1,024 frames"``."""
    return f"{count / 1e6:.1f} M frames" if count >= 100_000 else f"{count:,} frames"


def _speedup_table(speed: Mapping[str, Any]) -> str:
    kind = "compiled" if speed.get("standin_compiled") else "eager float64"
    n = speed["num_envs"]
    model = speed.get("vehicle_model_steps_per_s")
    lines = [f"High-fidelity baselines, measured in this run: (a) S3BeamNG-v0 on the open "
             f"stand-in ({kind}), one car driven through beamngpy over TCP, the BeamNG-like path: "
             f"**{speed['standin_steps_per_s']:.1f} env steps/s**"]  # fmt: skip
    if model is not None:
        lines[0] += (f"; (b) the stand-in's vehicle model batched in-process at the same "
                     f"N = {n} (eager float32, physics only): "
                     f"**{model:,.0f} control steps/s**")  # fmt: skip
    lines[0] += "."
    lines += ["",
              f"| backend | S3Distilled-v0 env steps/s (N = {n}) | speed-up vs (a) | vs (b) |",
              "|---|---|---|---|"]  # fmt: skip
    for name, row in speed["backends"].items():
        vs_model = row.get("speedup_vs_model", float("nan"))
        lines.append(f"| {name} | {row['steps_per_s']:,.0f} | {row['speedup']:,.0f}x "
                     f"| {vs_model:,.1f}x |")  # fmt: skip
    lines.append("")
    lines.append(f"Measured in this run with {speed['threads']} torch thread(s) on the CPU.")
    return "\n".join(lines) + "\n"


def _images(folder: Path, root: Path) -> list[str]:
    return [
        str(p.relative_to(root)) for p in sorted(folder.rglob("*")) if p.suffix in (".png", ".gif")
    ]


#: what each kind of figure shows, by the start of its file name
_FIGURE_KINDS = {
    "trajectory": "driven line over the track and its surfaces",
    "errors": "cross-track error, speed against the target and the driver's steering and pedal "
    "along the lap",
    "run": "animation of the run (top-down view)",
    "labels": "share of the route covered and mean cross-track error per scenario label",
}


def figure_caption(image: str, where_driven: str = VALIDATION_SIMULATORS["standin"][1]) -> str:
    """A caption for a report figure from its path, e.g. ``evaluate/ddm/errors_asphalt_p4_s1.png``.

    Evaluation figures name the policy, where it drove (``where_driven``, from
    :data:`VALIDATION_SIMULATORS`), the condition (surface, ice patches, patch seed) and what is
    plotted; distillation figures name their file.
    """
    parts = Path(image).parts
    stem = Path(image).stem
    if parts[0] != "evaluate" or len(parts) < 3:
        return f"Distillation figure: {stem.replace('_', ' ')}."
    kind, _, tag = stem.partition("_")
    what = _FIGURE_KINDS.get(kind, kind.replace("_", " "))
    condition = []
    for token in tag.split("_"):
        if token.startswith("p") and token[1:].isdigit():
            condition.append(f"{token[1:]} ice patches" if token != "p0" else "no ice patches")
        elif token.startswith("s") and token[1:].isdigit():
            condition.append(f"patch seed {token[1:]}")
        elif token:
            condition.append(token)
    where = f" ({', '.join(condition)})" if condition else ""
    return f"Policy '{parts[1]}' in {where_driven}{where}: {what}."


def write_report(
    root: Path,
    config: PipelineConfig,
    outcomes: Mapping[str, StageOutcome],
    *,
    wall_s: float,
    rounds: list[dict] | None = None,
) -> Path:
    """Write ``report.md`` and ``report.html`` into ``root``; returns the Markdown path.

    ``rounds`` (``s3 pipeline --rounds K``) adds the gap and lap results per round.
    """
    data, distill = outcomes["data"].result, outcomes["distill"].result
    train, evaluation = outcomes["train"].result, outcomes["evaluate"].result
    speed = outcomes["speedup"].result
    open_loop = _read(distill["open_loop"])
    policy_runs = {name: _read(path)["runs"] for name, path in evaluation["results"].items()}
    budgets = {name: training_budget(name, train) for name in policy_runs}
    score = build_scorecard(open_loop, policy_runs, budgets=budgets)
    every = [*outcomes.values(), *(o for rnd in rounds or [] for o in rnd["stages"].values())]
    stage_lines = [
        f"| {o.name} | {'reused (inputs unchanged)' if o.skipped else f'ran in {o.wall_s:.0f} s'} "
        f"| `{o.key}` |"
        for o in every
    ]
    md = [
        "# Sim2Sim2Sim pipeline report",
        "",
        "High-fidelity simulator: **the open stand-in** (the project's batched double-track "
        "simulator behind a server speaking BeamNG's protocol), not BeamNG.tech. Track: the "
        "Putnam Park **approximation** built from published facts.",
        "",
        f"Total wall-clock time of this invocation: {wall_s:.0f} s.",
        "",
        "| stage | status | inputs hash |",
        "|---|---|---|",
        *stage_lines,
        "",
        "## 1. Driving data",
        f"{data['episodes']} episodes, {data['samples']} samples ({data['hours']:.2f} h at 20 Hz), "
        f"generated in {data['generation_s']:.0f} s; content hash `{data['content_hash'][:16]}`.",
        "",
        "## 2. Distilled dynamics: open-loop error on held-out sessions",
        f"Trained in this run: {', '.join(distill['trained']) or 'none'}; the others are the "
        "shipped checkpoints.",
        "",
        _open_loop_table(open_loop),
        "Position error after 20 steps (1 s) per surface [m]:",
        "",
        _per_surface_table(open_loop),
        "## 3. Policies trained in S3Distilled-v0",
        "Trained in this run: "
        + (
            ", ".join(
                f"{k} ({v['frames']:,} frames in {v['wall_s']:.0f} s)"
                for k, v in train["trained"].items()
            )
            or "none"
        )  # fmt: skip
        + "; the others are the shipped policies.",
        "",
        "| policy | training budget |",
        "|---|---|",
        *(f"| {name} | {budget} |" for name, budget in budgets.items()),
        "",
        f"## 4. Validation in {VALIDATION_SIMULATORS[config.eval_simulator][0]}, Putnam Park",
        _policy_table(evaluation["results"]),
        "## 5. Backend scorecard",
        scorecard_markdown(score),
        "## 6. Speed-up of the distilled environment",
        _speedup_table(speed),
    ]
    if rounds:
        from policies.pipeline.rounds import rounds_markdown

        md += ["## 7. Policy-in-the-loop rounds", rounds_markdown(rounds)]
    md += ["## Figures"]
    images = _images(root / "evaluate", root) + _images(root / "distill", root)
    for number, img in enumerate(images):
        caption = figure_caption(img, VALIDATION_SIMULATORS[config.eval_simulator][1])
        md += [f"![{img}]({img})", "", f"*Figure {number + 1}. {caption}*", ""]
    text = "\n".join(md) + "\n"
    md_path = root / "report.md"
    md_path.write_text(text)
    (root / "report.html").write_text(_to_html(text))
    (root / "report.json").write_text(json.dumps(
        {"config": config.to_json(), "scorecard": score, "speedup": speed,
         "stages": {k: {"key": o.key, "skipped": o.skipped} for k, o in outcomes.items()}},
        indent=2, default=str) + "\n")  # fmt: skip
    return md_path


def _to_html(markdown: str) -> str:
    """The report's Markdown as an HTML page (CommonMark with tables, by ``markdown-it-py``)."""
    from markdown_it import MarkdownIt

    body = MarkdownIt("commonmark").enable("table").render(markdown)
    head = ("<!doctype html><html><head><meta charset='utf-8'><title>Sim2Sim2Sim report</title>"
            "<style>body{font-family:sans-serif;max-width:1100px;margin:auto}table{border-"
            "collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}"
            "img{max-width:100%}</style></head><body>")  # fmt: skip
    return f"{head}\n{body}</body></html>\n"
