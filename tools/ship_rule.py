"""The ship rule: a candidate policy against a shipped one over the 318 held-out laps.

A candidate replaces a shipped policy only under this rule, written down before it is trained or
driven (README, "The ship rule"): over the 318 laps below it must complete at least as many laps
as the shipped policy and pass at least as many strictly, one of the two strictly more. A lap
passes strictly when it completed, its mean |cross-track error| is at most 1.5x the scripted
expert's on the same lap, its largest at most 2.5 m and its lap time at most 1.15x the
expert's (:func:`lap_acceptance.cell`).

The laps, every one in the stand-in's vehicle model batched in-process (``s3 evaluate
--simulator model``), from a standing start, the expert on the same laps:

* towns (128): town routes 50-53, 60-63, 70-73 and 100-103 under the eight conditions;
* Putnam and procedural (160): Putnam Park and procedural 201-206, 301-303, 401-406 and 601-604
  under the eight conditions (asphalt, asphalt_wet, gravel, dirt, snow, ice, six ice patches,
  asphalt -> ice);
* transition set (30): procedural 811-813 and town 140-142 under ``ice>asphalt``,
  ``ice>gravel``, ``ice>dirt``, ``dirt>ice`` and ``asphalt_wet>ice``.

Of these only Putnam is in a training pool (Putnam, procedural 0-3, towns 0-5).

    python tools/ship_rule.py run runs/cand.json --against dytr --out runs/ship_dytr  # drive, judge
    python tools/ship_rule.py judge runs/ship_dytr --candidate cand --against dytr     # judge again

``run`` writes one ``s3 evaluate`` folder per part (``DIR/<part>/results.json``, tables, and
plots of the laps some driver did not complete; ``DIR/<part>.log``) and ``DIR/ship_rule.md``;
the parts run ``--jobs`` at a time, one torch thread each. Lap results are deterministic: the
shipped policy's counts repeat from run to run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from lap_acceptance import STRICT_BAR, cell, condition_label  # noqa: E402

from policies.expert_driver import EXPERT  # noqa: E402

#: the eight conditions of the lap tables
CONDITIONS = "asphalt,asphalt_wet,gravel,dirt,snow,ice,asphalt+6,asphalt>ice"
#: the five friction transitions of the transition set
TRANSITIONS = "ice>asphalt,ice>gravel,ice>dirt,dirt>ice,asphalt_wet>ice"
_TOWNS = [f"town:{i}" for r in ((50, 54), (60, 64), (70, 74), (100, 104)) for i in range(*r)]
_OPEN = ["putnam"] + [
    f"procedural:{i}" for r in ((201, 207), (301, 304), (401, 407), (601, 605)) for i in range(*r)
]


@dataclass(frozen=True)
class Part:
    """One ``s3 evaluate`` run of the rule: its tracks under its conditions.

    Attributes:
        name: folder name of the run.
        group: the column of the table it counts towards.
        tracks: track names (``putnam``, ``procedural:SEED``, ``town:SEED``).
        conditions: ``s3 evaluate --conditions`` text.
    """

    name: str
    group: str
    tracks: tuple[str, ...]
    conditions: str

    @property
    def laps(self) -> int:
        """Number of laps per driver."""
        return len(self.tracks) * len(self.conditions.split(","))


#: the four runs; their laps add up to the 318 of the rule
PARTS = (
    Part("towns", "towns", tuple(_TOWNS), CONDITIONS),
    Part("open", "Putnam and procedural", tuple(_OPEN), CONDITIONS),
    Part("transitions_towns", "transition set", ("town:140", "town:141", "town:142"), TRANSITIONS),
    Part(
        "transitions_open",
        "transition set",
        ("procedural:811", "procedural:812", "procedural:813"),
        TRANSITIONS,
    ),
)
GROUPS = tuple(dict.fromkeys(p.group for p in PARTS))
TOTAL_LAPS = sum(p.laps for p in PARTS)


@dataclass(frozen=True)
class Count:
    """Laps of one driver: ``laps`` driven, ``completed``, ``strict`` (passed the bar)."""

    laps: int = 0
    completed: int = 0
    strict: int = 0

    def __add__(self, other: Count) -> Count:
        return Count(
            self.laps + other.laps, self.completed + other.completed, self.strict + other.strict
        )

    def __str__(self) -> str:
        return f"{self.completed} / {self.strict}"


def count_runs(runs: Iterable[Mapping[str, Any]]) -> tuple[dict[str, Count], dict[str, list[str]]]:
    """Per policy driver: its :class:`Count` and the text of every lap that misses the bar.

    Args:
        runs: the ``runs`` of an ``s3 evaluate`` ``results.json`` (with the expert's rows, which
            give the ratios; the expert itself is not counted).
    """
    counts: dict[str, Count] = {}
    misses: dict[str, list[str]] = {}
    for run in runs:
        driver = run["driver"]
        if driver == EXPERT:
            continue
        ok, text = cell(run, *STRICT_BAR)
        completed = run["terminated_by"] == "completed"
        counts[driver] = counts.get(driver, Count()) + Count(1, int(completed), int(ok))
        if not ok:
            c = run["condition"]
            misses.setdefault(driver, []).append(f"{c['track']} {condition_label(c)}: {text}")
    return counts, misses


def verdict(candidate: Count, shipped: Count) -> bool:
    """The ship rule: at least as many completed and strict laps, one of the two strictly more."""
    if candidate.laps != shipped.laps:
        raise ValueError(f"unequal lap sets: {candidate.laps} against {shipped.laps} laps")
    not_worse = candidate.completed >= shipped.completed and candidate.strict >= shipped.strict
    better = candidate.completed > shipped.completed or candidate.strict > shipped.strict
    return not_worse and better


def judge(out: Path, candidate: str, against: str) -> tuple[bool, str]:
    """Judge the runs in ``out``; returns ``(ships, Markdown table and misses)``.

    Raises:
        FileNotFoundError: a part's ``results.json`` is missing (the run did not finish).
        KeyError: a driver is absent from a part.
        ValueError: a driver drove another number of laps than the part has.
    """
    by_group: dict[str, dict[str, Count]] = {g: {} for g in GROUPS}
    misses: dict[str, list[str]] = {}
    for part in PARTS:
        path = out / part.name / "results.json"
        if not path.is_file():
            raise FileNotFoundError(f"{path} is missing: run `ship_rule.py run` to the end first")
        counts, part_misses = count_runs(json.loads(path.read_text())["runs"])
        for driver in (candidate, against):
            if driver not in counts:
                raise KeyError(f"{driver!r} did not drive {path} (drivers: {sorted(counts)})")
            if counts[driver].laps != part.laps:
                raise ValueError(
                    f"{driver!r} drove {counts[driver].laps} laps in {path}, the rule has "
                    f"{part.laps} there; run `ship_rule.py run` into an empty folder"
                )
            group = by_group[part.group]
            group[driver] = group.get(driver, Count()) + counts[driver]
            misses.setdefault(driver, []).extend(part_misses.get(driver, []))
    total = {d: sum((by_group[g][d] for g in GROUPS), Count()) for d in (candidate, against)}
    ships = verdict(total[candidate], total[against])
    head = [f"{g} ({by_group[g][against].laps})" for g in GROUPS] + [f"all ({TOTAL_LAPS})"]
    lines = [
        f"| completed / strict | {' | '.join(head)} |",
        "|---|" + "---|" * len(head),
    ]
    for d in (against, candidate):
        cells = [str(by_group[g][d]) for g in GROUPS] + [f"**{total[d]}**"]
        lines.append(f"| {d} | {' | '.join(cells)} |")
    word = "ships" if ships else "does not ship"
    lines += ["", f"{candidate} {word} against {against} under the ship rule.", ""]
    for d in (against, candidate):
        lines += [f"{d} misses the bar on {len(misses[d])} laps:"]
        lines += [f"- {m}" for m in misses[d]] + [""]
    return ships, "\n".join(lines)


def _evaluate(part: Part, policies: list[str], out: Path) -> tuple[str, int, float]:
    """Run ``s3 evaluate`` for one part (one torch thread); ``(name, exit status, seconds)``."""
    cmd = [sys.executable, "-m", "gym_s3.cli", "evaluate", *policies, "--simulator", "model",
           "--tracks", ",".join(part.tracks), "--conditions", part.conditions,
           "--plots", "failed", "--out", str(out / part.name)]  # fmt: skip
    env = dict(os.environ, OMP_NUM_THREADS="1", S3_TORCH_THREADS="1")
    start = time.perf_counter()
    with open(out / f"{part.name}.log", "w") as log:
        status = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, env=env).returncode
    return part.name, status, time.perf_counter() - start


def driver_names(candidate: str, against: str) -> tuple[str, str]:
    """The names ``s3 evaluate`` gives the two policies in its rows (both files are checked).

    Raises:
        ConfigError: a policy that does not load, two policies of one name, or one named like the
            expert's rows.
    """
    from gym_s3.errors import ConfigError
    from policies.checkpoint import resolve_policy

    names = (resolve_policy(candidate)[0], resolve_policy(against)[0])
    if names[0] == names[1]:
        raise ConfigError(f"candidate and --against are both named {names[0]!r}; rename one file")
    if EXPERT in names:
        raise ConfigError(f"a policy named {EXPERT!r} would be read as the expert; rename it")
    return names


def run(candidate: str, against: str, out: Path, jobs: int) -> int:
    """Drive every part (``jobs`` at a time); 0, or 1 after the first part that failed."""
    out.mkdir(parents=True, exist_ok=True)
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(_evaluate, part, [candidate, against], out) for part in PARTS]
        for future in as_completed(futures):
            name, status, seconds = future.result()
            print(f"{name}: exit {status} after {seconds:.0f} s ({out / name}.log)")
            if status != 0:
                pool.shutdown(cancel_futures=True)
                log = (out / f"{name}.log").read_text(errors="replace").splitlines()
                print("\n".join(log[-15:]), file=sys.stderr)
                return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    """``run`` or ``judge``; exit status 0 whether or not the candidate ships, 1 on failure."""
    p = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=f"{TOTAL_LAPS} laps in {len(PARTS)} runs: "
        + "; ".join(f"{x.name}: {x.laps} laps" for x in PARTS),
    )  # fmt: skip
    sub = p.add_subparsers(dest="command", required=True)
    run_p = sub.add_parser("run", help="drive the candidate, the shipped policy and the expert, "
                           "then judge")  # fmt: skip
    run_p.add_argument("candidate", help="candidate policy checkpoint (.json sidecar or stem)")
    run_p.add_argument("--against", required=True, help="shipped policy name or checkpoint path")
    run_p.add_argument("--out", type=Path, required=True, help="output folder")
    run_p.add_argument("--jobs", type=int, default=2, choices=range(1, 5), metavar="{1..4}",
                       help="parts run at once, one torch thread each [count] "
                       "(default: 2)")  # fmt: skip
    jd = sub.add_parser("judge", help="judge the runs of an earlier `run`")
    jd.add_argument("out", type=Path, help="the folder `run` wrote")
    jd.add_argument("--candidate", required=True, help="the candidate's driver name in the rows")
    jd.add_argument("--against", required=True, help="the shipped policy's driver name")
    args = p.parse_args(argv)
    if args.command == "run":
        candidate, against = driver_names(args.candidate, args.against)
        status = run(args.candidate, args.against, args.out, args.jobs)
        if status:
            return status
    else:
        candidate, against = args.candidate, args.against
    _, text = judge(args.out, candidate, against)
    print(text)
    (args.out / "ship_rule.md").write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
