"""The backend scorecard: open-loop accuracy next to the quality of the policy trained on it.

The paper's point: predictive accuracy alone does not rank a dynamics model as an RL training
environment; what matters is how the policy trained inside it drives the high-fidelity simulator.
The scorecard puts both on one row per backend and ranks the backends by each, so a reader sees
whether the rankings agree.

Inputs are the JSON files the other stages write: ``evaluation.json`` of ``s3 distill evaluate``
(open-loop errors) and ``results.json`` of ``s3 evaluate`` for each backend's policy.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from gym_s3.errors import DataFormatError

#: Open-loop columns: (metric, horizon in steps); missing horizons are left out.
OPEN_LOOP_COLUMNS: tuple[tuple[str, int], ...] = (("position", 20), ("position", 60))


def policy_quality(runs: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Aggregate the evaluation runs of one policy.

    Args:
        runs: entries of ``results.json["runs"]`` (``metrics`` and ``terminated_by`` each); the
            scripted expert's reference rows (``driver == "expert"``) are left out.

    Returns:
        mean completion, mean cross-track error [m], runs completed and runs failed.
    """
    from policies.evaluate import FAILURES

    runs = [r for r in runs if r.get("driver", "policy") == "policy"]
    if not runs:
        return {"completion": 0.0, "cte_mean": float("nan"), "completed": 0, "failed": 0}
    comp = [r["metrics"]["completion"] for r in runs]
    cte = [r["metrics"]["cte_mean"] for r in runs]
    return {
        "completion": sum(comp) / len(comp),
        "cte_mean": sum(cte) / len(cte),
        "completed": sum(r["terminated_by"] == "completed" for r in runs),
        "failed": sum(r["terminated_by"] in FAILURES for r in runs),
        "runs": len(runs),
    }


def _ranks(keys: Mapping[str, tuple[float, ...]]) -> dict[str, int]:
    """Rank 1 for the largest key tuple."""
    order = sorted(keys, key=lambda k: keys[k], reverse=True)
    return {name: i + 1 for i, name in enumerate(order)}


def build_scorecard(
    open_loop: Mapping[str, Any], policy_runs: Mapping[str, Sequence[Mapping[str, Any]]]
) -> list[dict[str, Any]]:
    """One row per backend with open-loop errors, policy quality and both rankings.

    Args:
        open_loop: the ``evaluation.json`` report of ``s3 distill evaluate``.
        policy_runs: backend -> its policy's evaluation runs in the high-fidelity simulator.

    Returns:
        rows in the backend order of the open-loop report, for the backends whose policy was
        evaluated.
    """
    results = open_loop.get("results")
    if not isinstance(results, Mapping):
        raise DataFormatError("open-loop report has no 'results'; pass the evaluation.json of "
                              "`s3 distill evaluate`")  # fmt: skip
    rows = []
    for backend, res in results.items():
        if backend not in policy_runs:
            continue  # no policy of this backend was evaluated: nothing to compare
        row: dict[str, Any] = {"backend": backend}
        for metric, h in OPEN_LOOP_COLUMNS:
            value = res["all"][metric].get(str(h))
            row[f"{metric}@{h}"] = float("nan") if value is None else float(value)
        row.update(policy_quality(policy_runs.get(backend, ())))
        rows.append(row)
    acc = _ranks({r["backend"]: (-r["position@20"],) for r in rows})
    # policy quality: completion first, then the smaller cross-track error (NaN: no runs)
    qual = _ranks({r["backend"]: (r["completion"], -r["cte_mean"] if math.isfinite(r["cte_mean"])
                                  else -math.inf) for r in rows})  # fmt: skip
    for r in rows:
        r["rank_accuracy"] = acc[r["backend"]]
        r["rank_policy"] = qual[r["backend"]]
    return rows


def scorecard_markdown(rows: Sequence[Mapping[str, Any]]) -> str:
    """The scorecard as a Markdown table."""
    head = (
        "| backend | position err @20 [m] | position err @60 [m] | policy completion | "
        "policy cte [m] | completed / failed runs | rank by accuracy | rank by policy |"
    )
    lines = [head, "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(
            f"| {r['backend']} | {r['position@20']:.3f} | {r['position@60']:.3f} | "
            f"{r['completion']:.2f} | {r['cte_mean']:.2f} | {r['completed']} / {r['failed']} | "
            f"{r['rank_accuracy']} | {r['rank_policy']} |"
        )
    lines.append("")
    if len(rows) < 2:
        lines.append("Only one backend's policy was evaluated: no ranking to compare.")
    elif all(r["rank_accuracy"] == r["rank_policy"] for r in rows):
        lines.append("Open-loop accuracy and policy quality rank the backends the same way.")
    else:
        lines.append("Open-loop accuracy and policy quality rank the backends differently: "
                     "prediction accuracy alone does not rank a backend as a training "
                     "environment.")  # fmt: skip
    return "\n".join(lines) + "\n"


#: Gap ratios (high-fidelity / distilled, from ``s3 gap``) shown per backend and condition.
GAP_COLUMNS: tuple[str, ...] = ("cte_mean", "cte_max", "lap_time", "progress_120s")


def gap_markdown(gaps: Mapping[str, Mapping[str, Any]]) -> str:
    """The sim-to-sim gap per backend and surface condition as Markdown (from ``gap.json``)."""
    from policies.evaluate import describe_condition

    lines = ["Sim-to-sim gap (high-fidelity / distilled; 1 = the distilled env predicted the lap):",
             "", "| backend | high-fidelity | condition | " + " | ".join(GAP_COLUMNS) + " |",
             "|---|---|---|" + "---|" * len(GAP_COLUMNS)]  # fmt: skip
    for backend, report in gaps.items():
        for run in report["runs"]:
            ratios = [run["ratio"].get(k) for k in GAP_COLUMNS]
            cells = [backend, report["simulator"], describe_condition(run["condition"])]
            cells += ["-" if v is None else f"{v:.2f}" for v in ratios]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def register(subparsers: Any) -> None:
    """Add ``s3 scorecard`` to the command line."""
    p = subparsers.add_parser(
        "scorecard",
        help="backend scorecard: open-loop accuracy next to policy quality",
        description="Put each dynamics backend's open-loop accuracy (from `s3 distill "
        "evaluate`) next to the quality of the policy trained on it and evaluated in the "
        "high-fidelity simulator (from `s3 evaluate`).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("open_loop", type=Path, help="evaluation.json written by `s3 distill evaluate`")
    p.add_argument("--policy", action="append", default=[], metavar="BACKEND=RESULTS_JSON",
                   help="results.json of `s3 evaluate` for the policy trained on BACKEND "
                   "(repeat per backend)")  # fmt: skip
    p.add_argument("--gap", action="append", default=[], metavar="BACKEND=GAP_JSON",
                   help="gap.json of `s3 gap` for the policy trained on BACKEND: adds the "
                   "sim-to-sim gap per surface condition (repeat per backend)")  # fmt: skip
    p.add_argument("--out", type=Path, default=None, help="write scorecard.md/.json here")
    p.set_defaults(func=_run)


def _read_json(path: Path, what: str) -> Any:
    try:
        return json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise DataFormatError(
            f"{what} {path} does not exist; run the stage that writes it"
        ) from None
    except json.JSONDecodeError as exc:
        raise DataFormatError(f"{what} {path} is not valid JSON ({exc}); re-run its stage") from exc


def _run(args: argparse.Namespace) -> int:
    open_loop = _read_json(args.open_loop, "open-loop report")
    runs: dict[str, list] = {}
    for item in args.policy:
        if "=" not in item:
            raise DataFormatError(f"--policy expects BACKEND=RESULTS_JSON, got '{item}'")
        backend, path = item.split("=", 1)
        runs[backend] = _read_json(Path(path), "policy evaluation")["runs"]
    rows = build_scorecard(open_loop, runs)
    text = scorecard_markdown(rows)
    gaps = {}
    for item in args.gap:
        if "=" not in item:
            raise DataFormatError(f"--gap expects BACKEND=GAP_JSON, got '{item}'")
        backend, path = item.split("=", 1)
        gaps[backend] = _read_json(Path(path), "sim-to-sim gap report")
    if gaps:
        text += "\n" + gap_markdown(gaps)
    print(text)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "scorecard.md").write_text(text)
        (args.out / "scorecard.json").write_text(json.dumps(rows, indent=2) + "\n")
    return 0
