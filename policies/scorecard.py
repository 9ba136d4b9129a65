"""The backend scorecard: open-loop accuracy next to the quality of the policy trained on it.

The paper's point: predictive accuracy alone does not rank a dynamics model as an RL training
environment; what matters is how the policy trained inside it drives the high-fidelity simulator.
The scorecard puts both on one row per backend and ranks the backends by each, so a reader sees
whether the rankings agree. Policy quality is a mean over several runs with a 95 % confidence
interval, and a rank difference (or a disagreement between the rankings) is only claimed where
the intervals separate: two policies 5 m apart in a 40 s window are not ranked.

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


#: two-sided 95 % Student-t quantiles by degrees of freedom (1..30); 1.96 beyond
_T95 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
        2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
        2.060, 2.056, 2.052, 2.048, 2.045, 2.042)  # fmt: skip


def mean_ci(values: Sequence[float]) -> tuple[float, float]:
    """Mean and half-width of its 95 % confidence interval (Student t; ``inf`` for n < 2).

    Args:
        values: one number per independent run.
    """
    n = len(values)
    if n == 0:
        return float("nan"), float("inf")
    mean = sum(values) / n
    if n < 2:
        return mean, float("inf")
    var = sum((v - mean) ** 2 for v in values) / (n - 1)
    t = _T95[n - 2] if n - 1 <= len(_T95) else 1.96
    return mean, t * math.sqrt(var / n)


def distinct_runs(runs: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The runs with duplicates (identical metrics) dropped.

    The simulators are deterministic: a lap with ice patches the car never reached repeats the
    lap without patches exactly. Counting such copies as separate samples would shrink the
    confidence interval without any new evidence.
    """
    seen: set[tuple] = set()
    out = []
    for run in runs:
        key = tuple(sorted(run["metrics"].items()))
        if key not in seen:
            seen.add(key)
            out.append(run)
    return out


def policy_quality(runs: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Aggregate the evaluation runs of one policy, with 95 % confidence intervals.

    Args:
        runs: entries of ``results.json["runs"]`` (``metrics`` and ``terminated_by`` each), one
            per run (condition x seed); runs with identical metrics count once
            (:func:`distinct_runs`); the scripted expert's reference rows
            (``driver == "expert"``) are left out.

    Returns:
        mean completion and its CI half-width ``completion_ci``, mean cross-track error [m] and
        ``cte_mean_ci``, distinct runs completed, failed and in all (``runs``).
    """
    from policies.evaluate import FAILURES

    runs = distinct_runs([r for r in runs if r.get("driver", "policy") == "policy"])
    completion, completion_ci = mean_ci([r["metrics"]["completion"] for r in runs])
    cte, cte_ci = mean_ci([r["metrics"]["cte_mean"] for r in runs])
    return {
        "completion": 0.0 if not runs else completion,
        "completion_ci": completion_ci,
        "cte_mean": cte,
        "cte_mean_ci": cte_ci,
        "completed": sum(r["terminated_by"] == "completed" for r in runs),
        "failed": sum(r["terminated_by"] in FAILURES for r in runs),
        "runs": len(runs),
    }


def _ranks(keys: Mapping[str, tuple[float, ...]]) -> dict[str, int]:
    """Rank 1 for the largest key tuple."""
    order = sorted(keys, key=lambda k: keys[k], reverse=True)
    return {name: i + 1 for i, name in enumerate(order)}


def separated(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """Whether two ``(mean, CI half-width)`` intervals do not overlap."""
    return abs(a[0] - b[0]) > a[1] + b[1]


def _policy_better(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether ``a``'s policy is better than ``b``'s beyond the confidence intervals.

    Better completion decides when the completion intervals separate; with overlapping
    completion, a smaller cross-track error decides when those intervals separate.
    """
    ca, cb = (a["completion"], a["completion_ci"]), (b["completion"], b["completion_ci"])
    if separated(ca, cb):
        return ca[0] > cb[0]
    ea, eb = (a["cte_mean"], a["cte_mean_ci"]), (b["cte_mean"], b["cte_mean_ci"])
    return separated(ea, eb) and ea[0] < eb[0]


def build_scorecard(
    open_loop: Mapping[str, Any],
    policy_runs: Mapping[str, Sequence[Mapping[str, Any]]],
    *,
    budgets: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """One row per backend with open-loop errors, policy quality and both rankings.

    The policy rank of a backend is 1 + the number of backends whose policy is better beyond
    the 95 % confidence intervals (:func:`_policy_better`), so policies that the runs cannot
    tell apart share a rank.

    Args:
        open_loop: the ``evaluation.json`` report of ``s3 distill evaluate``.
        policy_runs: backend -> its policy's evaluation runs in the high-fidelity simulator.
        budgets: backend -> how its policy was trained (frames, wall time, where), shown as is.

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
        row["training"] = (budgets or {}).get(backend, "")
        rows.append(row)
    acc = _ranks({r["backend"]: (-r["position@20"],) for r in rows})
    for r in rows:
        r["rank_accuracy"] = acc[r["backend"]]
        r["rank_policy"] = 1 + sum(_policy_better(o, r) for o in rows if o is not r)
    return rows


def _pm(mean: float, half: float, fmt: str) -> str:
    """``mean ± half`` (``mean (n < 2)`` when there is no interval)."""
    if not math.isfinite(half):
        return f"{mean:{fmt}} (no CI)"
    return f"{mean:{fmt}} ± {half:{fmt}}"


def ranking_verdict(rows: Sequence[Mapping[str, Any]]) -> str:
    """What the card can say about the two rankings without reading noise as a difference.

    A disagreement is claimed only for a pair whose policies differ beyond their confidence
    intervals in the direction opposite to their open-loop accuracy.
    """
    if len(rows) < 2:
        return "Only one backend's policy was evaluated: no ranking to compare."
    flips = [
        (a["backend"], b["backend"])
        for a in rows
        for b in rows
        if a["position@20"] < b["position@20"] and _policy_better(b, a)
    ]
    agree = [
        (a["backend"], b["backend"])
        for a in rows
        for b in rows
        if a["position@20"] < b["position@20"] and _policy_better(a, b)
    ]
    if flips:
        pairs = ", ".join(f"{b} over {a}" for a, b in flips)
        return ("Open-loop accuracy and policy quality rank some backends differently beyond "
                f"the 95 % intervals ({pairs}: the less accurate model trained the better "
                "policy).")  # fmt: skip
    if agree:
        return (
            "Where the policies differ beyond the 95 % intervals, the more accurate model "
            "trained the better policy; the other pairs cannot be told apart by these runs."
        )
    return ("The policies cannot be told apart by these runs (their 95 % intervals overlap): "
            "this run says nothing about whether accuracy ranks the backends as training "
            "environments. Evaluate more seeds or episodes.")  # fmt: skip


def scorecard_markdown(rows: Sequence[Mapping[str, Any]]) -> str:
    """The scorecard as a Markdown table (means ± 95 % CI half-widths) and its verdict."""
    head = (
        "| backend | position err @20 [m] | position err @60 [m] | policy completion | "
        "policy cte [m] | distinct runs (completed / failed) | policy trained | rank by accuracy | "
        "rank by policy |"
    )
    lines = [head, "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(
            f"| {r['backend']} | {r['position@20']:.3f} | {r['position@60']:.3f} | "
            f"{_pm(r['completion'], r['completion_ci'], '.2f')} | "
            f"{_pm(r['cte_mean'], r['cte_mean_ci'], '.2f')} | "
            f"{r['runs']} ({r['completed']} / {r['failed']}) | {r.get('training') or '-'} | "
            f"{r['rank_accuracy']} | {r['rank_policy']} |"
        )
    lines += ["", "Policy columns: mean over the distinct evaluation runs (identical runs, e.g. a "
              "patch lap that never reached a patch, count once) ± the half-width of its 95 % "
              "confidence interval (Student t; none with one run). Policies share a rank "
              "unless their intervals separate.", "", ranking_verdict(rows)]  # fmt: skip
    return "\n".join(lines) + "\n"


def gap_markdown(gaps: Mapping[str, Mapping[str, Any]]) -> str:
    """The sim-to-sim gap per backend and surface condition as Markdown (from ``gap.json``)."""
    from policies.evaluate import describe_condition
    from policies.gap import GAP_COLUMNS
    from policies.gap_bar import bar_line, gap_bar

    lines = ["Sim-to-sim gap (high-fidelity / distilled; 1 = the distilled env predicted the lap; "
             "driver: the backend's policy, or the scripted expert of `s3 gap expert`):",
             "", "| backend | driver | high-fidelity | condition | " + " | ".join(GAP_COLUMNS)
             + " |", "|---|---|---|---|" + "---|" * len(GAP_COLUMNS)]  # fmt: skip
    for backend, report in gaps.items():
        driver = report.get("driver", "policy")
        for run in report["runs"]:
            ratios = [run["ratio"].get(k) for k in GAP_COLUMNS]
            cells = [backend, driver, report["simulator"], describe_condition(run["condition"])]
            cells += ["-" if v is None else f"{v:.2f}" for v in ratios]
            lines.append("| " + " | ".join(cells) + " |")
    notes = []
    for backend, report in gaps.items():
        bar = gap_bar(report)
        if bar["cells"]:
            notes.append(f"- {backend} (distilled side: {report.get('distilled')}): "
                         f"{bar_line(bar)}")  # fmt: skip
    return "\n".join(lines + ([""] + notes if notes else [])) + "\n"


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
                   help="gap.json of `s3 gap` for the policy trained on BACKEND (or of `s3 "
                   "gap expert --backend BACKEND`): adds the sim-to-sim gap per surface "
                   "condition (repeat per backend)")  # fmt: skip
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
