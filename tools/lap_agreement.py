"""Do two simulators agree on how each lap of a policy ends? Completion and strict bar, per lap.

Reads ``s3 evaluate`` ``results.json`` files of the same laps driven in two environments (for
example ``--env distilled`` and ``--simulator model``, each with the scripted expert's rows, which
give that environment's strict ratios) and, per policy that drove in both, counts the laps whose
end (completed or not) and whose strict verdict (:func:`lap_acceptance.cell`) agree, and the
disagreements by direction: *optimistic* where the first environment (the distilled one) completes
or passes a lap the second does not, *pessimistic* the other way.

    python tools/lap_agreement.py --first runs/dist/results.json --second runs/model/results.json
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from lap_acceptance import condition_label  # noqa: E402
from paired_laps import emit, laps_by_driver, read_runs, strict_cell  # noqa: E402


@dataclass(frozen=True)
class Agreement:
    """One policy's laps in two environments.

    Attributes:
        laps: laps it drove in both.
        completed: ``(first, second)`` laps completed in each.
        strict: ``(first, second)`` laps passing the strict bar in each.
        same_end: laps completed in both or in neither.
        same_strict: laps passing in both or in neither.
        optimistic: ``(kind, text)`` of each disagreement where the first completes (kind
            ``end``) or passes (``strict``) a lap the second does not; a lap can give one of
            each. ``pessimistic`` the other way.
    """

    laps: int
    completed: tuple[int, int]
    strict: tuple[int, int]
    same_end: int
    same_strict: int
    optimistic: tuple[tuple[str, str], ...]
    pessimistic: tuple[tuple[str, str], ...]

    def counts(self, which: str) -> str:
        """``"end, strict"`` counts of the ``optimistic`` or ``pessimistic`` disagreements."""
        rows = getattr(self, which)
        return ", ".join(str(sum(kind == k for kind, _ in rows)) for k in ("end", "strict"))


def agree(first: list[dict[str, Any]], second: list[dict[str, Any]]) -> dict[str, Agreement]:
    """Per policy that drove a lap in both tables, over the laps it drove in both.

    Raises:
        KeyError: no policy drove the same lap in both tables.
        ValueError: a completed lap without the expert's ratios (:func:`paired_laps.strict_cell`).
    """
    a, b = laps_by_driver(first), laps_by_driver(second)
    common = [d for d in a if d in b and a[d].keys() & b[d].keys()]
    if not common:
        raise KeyError(
            f"no policy drove the same lap in both tables (first: {sorted(a)}, second: {sorted(b)})"
        )
    out = {}
    for driver in common:
        keys = sorted(a[driver].keys() & b[driver].keys())
        completed, strict, same_end, same_strict = [0, 0], [0, 0], 0, 0
        optimistic: list[tuple[str, str]] = []
        pessimistic: list[tuple[str, str]] = []
        for key in keys:
            runs = (a[driver][key], b[driver][key])
            ends = [r["terminated_by"] == "completed" for r in runs]
            passes = [strict_cell(r) for r in runs]
            for i in range(2):
                completed[i] += ends[i]
                strict[i] += passes[i][0]
            same_end += ends[0] == ends[1]
            same_strict += passes[0][0] == passes[1][0]
            c = runs[0]["condition"]
            name = f"{c['track']} {condition_label(c)}"
            for kind, (x, y) in (("end", ends), ("strict", (passes[0][0], passes[1][0]))):
                if x != y:
                    text = f"{name} ({kind}): first {passes[0][1]}; second {passes[1][1]}"
                    (optimistic if x else pessimistic).append((kind, text))
        out[driver] = Agreement(len(keys), tuple(completed), tuple(strict), same_end,
                                same_strict, tuple(optimistic), tuple(pessimistic))  # fmt: skip
    return out


def report(results: dict[str, Agreement]) -> str:
    """Markdown: one row per policy, then the disagreements."""
    lines = [
        "| policy | laps | completed (first / second) | strict (first / second) | same end | "
        "same strict verdict | optimistic (end, strict) | pessimistic (end, strict) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for d, r in results.items():
        lines.append(f"| {d} | {r.laps} | {r.completed[0]} / {r.completed[1]} | {r.strict[0]} / "
                     f"{r.strict[1]} | {r.same_end} | {r.same_strict} | {r.counts('optimistic')} | "
                     f"{r.counts('pessimistic')} |")  # fmt: skip
    lines.append("")
    for d, r in results.items():
        for kind, rows in (("optimistic", r.optimistic), ("pessimistic", r.pessimistic)):
            if rows:
                lines += [f"{d}, {kind} ({len(rows)}):"] + [f"- {x}" for _, x in rows] + [""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Print the agreement report; exit status 0 whatever it says."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)  # fmt: skip
    p.add_argument("--first", type=Path, nargs="+", required=True,
                   help="results.json files of the first environment (e.g. --env "
                   "distilled)")  # fmt: skip
    p.add_argument("--second", type=Path, nargs="+", required=True,
                   help="results.json files of the same laps in the second (e.g. the "
                   "stand-in)")  # fmt: skip
    p.add_argument("--out", type=Path, default=None, help="also write the report here (Markdown)")
    args = p.parse_args(argv)
    try:
        results = agree(read_runs(args.first), read_runs(args.second))
    except (KeyError, ValueError) as err:
        p.error(str(err).strip('"'))
    emit(report(results), args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
