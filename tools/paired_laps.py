"""Two policies on the same laps, lap by lap: who passes the strict bar where the other does not.

Reads ``s3 evaluate`` ``results.json`` files (with the scripted expert's rows, which give the
ratios) in which both policies drove the same laps, and pairs their laps by condition (track,
surface, patches, transition). A lap passes strictly as in :func:`lap_acceptance.cell`. Only the
discordant laps (one passes, the other not) tell the two apart; under "no difference" each of
them is a fair coin, so the one-sided exact sign test gives how likely it is that ``A`` wins at
least as many of them by chance (:func:`sign_test`).

    python tools/paired_laps.py runs/set/results.json --a T5s --b dytr --out runs/set/paired.md
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from lap_acceptance import STRICT_BAR, cell, condition_label  # noqa: E402

from policies.expert_driver import EXPERT  # noqa: E402


def sign_test(wins: int, losses: int) -> float:
    """One-sided exact sign test: ``P(X >= wins)`` for ``X ~ Binomial(wins + losses, 1/2)``."""
    n = wins + losses
    if n == 0:
        return 1.0
    return sum(math.comb(n, k) for k in range(wins, n + 1)) / 2**n


@dataclass(frozen=True)
class Paired:
    """Counts of two drivers over their shared laps.

    Attributes:
        laps: laps both drove.
        completed_a, completed_b: laps each completed.
        strict_a, strict_b: laps each passed strictly.
        only_a, only_b: laps only that driver passed strictly (the discordant laps), as text.
    """

    laps: int
    completed_a: int
    completed_b: int
    strict_a: int
    strict_b: int
    only_a: tuple[str, ...]
    only_b: tuple[str, ...]

    @property
    def p_value(self) -> float:
        """One-sided exact sign test of ``a`` winning the discordant laps (:func:`sign_test`)."""
        return sign_test(len(self.only_a), len(self.only_b))


def read_runs(paths: list[Path]) -> list[dict[str, Any]]:
    """The ``runs`` of several ``s3 evaluate`` ``results.json`` files, one list.

    Raises:
        ValueError: a file that is missing, unreadable, not JSON or without ``runs``.
    """
    runs = []
    for path in paths:
        try:
            runs += json.loads(path.read_text())["runs"]
        except (OSError, ValueError, KeyError, TypeError) as err:
            raise ValueError(
                f"{path}: not a readable results.json of s3 evaluate ({type(err).__name__}: "
                f"{err}); pass the results.json an `s3 evaluate --out DIR` wrote"
            ) from err
    return runs


def emit(text: str, out: Path | None) -> None:
    """Print a report and, with ``out``, also write it there (Markdown)."""
    print(text)
    if out is not None:
        out.write_text(text + "\n")


def strict_cell(run: dict[str, Any]) -> tuple[bool, str]:
    """:func:`lap_acceptance.cell` of a policy lap, refusing a completed lap without expert ratios.

    Without the expert's row of the same lap and env the bar cannot be judged; counting such a
    lap as failed would read as a real miss (and two such tables as a tie).

    Raises:
        ValueError: the lap completed but has no ``vs_expert`` ratios.
    """
    if run["terminated_by"] == "completed" and not run.get("vs_expert"):
        c = run["condition"]
        raise ValueError(
            f"{run['driver']!r} on {c['track']} {condition_label(c)} in {run.get('env', '?')} has "
            "no ratio to the expert: drive the expert on the same laps in the same env (s3 "
            "evaluate without --no-expert; with --env distilled, a table from before the expert "
            "drove every backend's laps lacks it)"
        )
    return cell(run, *STRICT_BAR)


def lap_key(condition: dict[str, Any]) -> str:
    """The identity of a lap: its condition (track, surface, patches, transition) as JSON."""
    return json.dumps(condition, sort_keys=True)


def laps_by_driver(runs: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """``{driver: {lap key: run}}`` of the policies' rows (the expert's are left out).

    Raises:
        ValueError: a driver drove one condition twice.
    """
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for run in runs:
        if run["driver"] != EXPERT:
            laps = out.setdefault(run["driver"], {})
            key = lap_key(run["condition"])
            if key in laps:
                raise ValueError(f"{run['driver']!r} drove {key} twice; pass each lap table once")
            laps[key] = run
    return out


def pair(runs: list[dict[str, Any]], a: str, b: str) -> Paired:
    """Pair the laps of drivers ``a`` and ``b`` in ``runs`` (the ``runs`` of ``results.json``).

    Raises:
        KeyError: a driver is absent, or drove a lap the other did not.
        ValueError: a driver drove one condition twice, or a completed lap has no expert ratios.
    """
    by_driver = laps_by_driver(runs)
    laps = {driver: by_driver.get(driver, {}) for driver in (a, b)}
    for driver in (a, b):
        if not laps[driver]:
            drivers = sorted({r["driver"] for r in runs})
            raise KeyError(f"{driver!r} drove no lap in these tables (drivers: {drivers})")
    if laps[a].keys() != laps[b].keys():
        extra = sorted(laps[a].keys() ^ laps[b].keys())[:3]
        raise KeyError(f"{a!r} and {b!r} drove different laps, e.g. {extra}")
    counts = {a: [0, 0], b: [0, 0]}
    only: dict[str, list[str]] = {a: [], b: []}
    for key in sorted(laps[a]):
        passed = {}
        for driver in (a, b):
            run = laps[driver][key]
            ok, text = strict_cell(run)
            passed[driver] = (ok, text)
            counts[driver][0] += run["terminated_by"] == "completed"
            counts[driver][1] += ok
        if passed[a][0] != passed[b][0]:
            c = laps[a][key]["condition"]
            name = f"{c['track']} {condition_label(c)}"
            winner, loser = (a, b) if passed[a][0] else (b, a)
            only[winner].append(f"{name}: {loser} {passed[loser][1]}")
    return Paired(len(laps[a]), counts[a][0], counts[b][0], counts[a][1], counts[b][1],
                  tuple(only[a]), tuple(only[b]))  # fmt: skip


def report(p: Paired, a: str, b: str) -> str:
    """Markdown: the counts, the discordant laps and the sign test."""
    lines = [
        f"| {p.laps} laps | completed | strict | passed strictly only by it |",
        "|---|---|---|---|",
        f"| {a} | {p.completed_a} | {p.strict_a} | {len(p.only_a)} |",
        f"| {b} | {p.completed_b} | {p.strict_b} | {len(p.only_b)} |",
        "",
        f"One-sided exact sign test of {a} passing more of the {len(p.only_a) + len(p.only_b)} "
        f"discordant laps: p = {p.p_value:.4f}.",
        "",
    ]
    for winner, loser, only in ((a, b, p.only_a), (b, a, p.only_b)):
        lines += [f"Passed strictly by {winner} only ({len(only)}; what {loser} did):"]
        lines += [f"- {x}" for x in only] + [""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Print the paired report; exit status 0 whatever it says."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)  # fmt: skip
    p.add_argument("results", type=Path, nargs="+",
                   help="results.json files of s3 evaluate (with expert rows)")  # fmt: skip
    p.add_argument("--a", required=True, help="first driver's name in the rows (the candidate)")
    p.add_argument("--b", required=True, help="second driver's name in the rows (the incumbent)")
    p.add_argument("--out", type=Path, default=None, help="also write the report here (Markdown)")
    args = p.parse_args(argv)
    try:
        paired = pair(read_runs(args.results), args.a, args.b)
    except (KeyError, ValueError) as err:
        p.error(str(err).strip('"'))
    emit(report(paired, args.a, args.b), args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
