"""Check a lap table against the robustness acceptance of the shipped policies.

Reads the ``results.json`` of ``s3 evaluate`` (with the scripted expert's rows) and prints, per
policy, a track x condition grid: a lap passes when it completed, its mean cross-track error is
at most ``--cte-ratio`` times the expert's on the same lap, its largest cross-track error at most
``--cte-max`` metres and its lap time at most ``--time-ratio`` times the expert's. Failing cells
say why (the end reason, or the ratio that is over). Also writes the grid as Markdown.

    python tools/lap_acceptance.py runs/laps/results.json --out runs/laps/acceptance.md
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

#: the acceptance bar: mean |cte| / expert's, largest |cte| [m], lap time / expert's (at most)
STRICT_BAR = (1.5, 2.5, 1.15)


def condition_label(condition: dict[str, Any]) -> str:
    """``surface`` or ``surface+patches`` of a run's condition, e.g. ``asphalt+6``."""
    patches = condition.get("ice_patches")
    return condition["surface"] + (f"+{patches}" if patches else "")


def cell(
    run: dict[str, Any], cte_ratio: float, cte_max: float, time_ratio: float
) -> tuple[bool, str]:
    """``(passed, text)`` of one policy lap."""
    end, vs = run["terminated_by"], run.get("vs_expert") or {}
    m = run["metrics"]
    if end != "completed":
        return False, f"{end} at {100 * m['completion']:.0f} %"
    why = []
    r_cte, r_time = vs.get("cte_mean"), vs.get("lap_time")
    if r_cte is None or r_cte > cte_ratio:
        why.append(f"cte x{r_cte:.2f}" if r_cte is not None else "no expert cte")
    if m["cte_max"] > cte_max:
        why.append(f"max {m['cte_max']:.2f} m")
    if r_time is None or r_time > time_ratio:
        why.append(f"time x{r_time:.2f}" if r_time is not None else "expert did not finish")
    text = f"{m['cte_mean']:.2f} m (x{r_cte:.2f}), t x{r_time:.2f}" if not why else ", ".join(why)
    return not why, ("ok " if not why else "FAIL ") + text


def main(argv: list[str] | None = None) -> int:
    """Print the grid; exit status 0 (whether or not the laps pass)."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)  # fmt: skip
    p.add_argument("results", type=Path, help="results.json of s3 evaluate (with expert rows)")
    cte_ratio, cte_max, time_ratio = STRICT_BAR
    p.add_argument("--cte-ratio", type=float, default=cte_ratio,
                   help="mean |cte| / expert's on the same lap, at most [ratio]")  # fmt: skip
    p.add_argument("--cte-max", type=float, default=cte_max, help="largest |cte| at most [m]")
    p.add_argument("--time-ratio", type=float, default=time_ratio,
                   help="lap time / expert's on the same lap, at most [ratio]")  # fmt: skip
    p.add_argument("--out", type=Path, default=None,
                   help="also write the grid to this Markdown file; omitted: print "
                   "only")  # fmt: skip
    args = p.parse_args(argv)
    runs = json.loads(args.results.read_text())["runs"]
    grid: dict[str, dict[tuple[str, str], tuple[bool, str]]] = defaultdict(dict)
    conditions: list[str] = []
    tracks: list[str] = []
    for run in runs:
        c = run["condition"]
        cond = condition_label(c)
        conditions += [cond] if cond not in conditions else []
        tracks += [c["track"]] if c["track"] not in tracks else []
        if run["driver"] == "expert":
            m = run["metrics"]
            text = f"{run['terminated_by']} {m['cte_mean']:.2f} m"
            grid["expert"][c["track"], cond] = (run["terminated_by"] == "completed", text)
        else:
            grid[run["driver"]][c["track"], cond] = cell(run, args.cte_ratio, args.cte_max,
                                                         args.time_ratio)  # fmt: skip
    lines = []
    for driver, cells in grid.items():
        passed = sum(ok for ok, _ in cells.values())
        lines += [f"### {driver}: {passed}/{len(cells)} laps pass", "",
                  "| track | " + " | ".join(conditions) + " |",
                  "|---|" + "---|" * len(conditions)]  # fmt: skip
        for t in tracks:
            row = [cells.get((t, c), (False, "-"))[1] for c in conditions]
            lines.append(f"| {t} | " + " | ".join(row) + " |")
        lines.append("")
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
