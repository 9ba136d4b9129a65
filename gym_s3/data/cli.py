"""``s3 data``: generate, summarise, validate and recover driving datasets.

Examples::

    s3 data generate --out data/default --seed 0
    s3 data generate --out /tmp/tiny --preset tiny
    s3 data summary data/default --plots data/default/plots
    s3 data validate data/default
    s3 data recover data/sessions
"""

from __future__ import annotations

import argparse
import sys
from typing import Any


def register(subparsers: Any) -> None:
    """Add the ``data`` command (``generate``, ``summary``, ``validate``, ``recover``)."""
    from gym_s3.cli_parser import preset_values
    from gym_s3.data.generate_config import PRESETS

    fmt = argparse.ArgumentDefaultsHelpFormatter
    parser = subparsers.add_parser(
        "data",
        help="driving datasets: generate the default one, summarise, validate, recover",
        description="Make, inspect and repair driving datasets (Parquet episode logs).",
        formatter_class=fmt,
    )
    sub = parser.add_subparsers(dest="data_command", metavar="SUBCOMMAND", required=True)

    gen = sub.add_parser(
        "generate",
        help="drive the scripted expert on the batched simulator and write a dataset",
        description="Scripted-expert driving over Putnam Park, procedural circuits and town "
        "routes, on every surface, with ice patches and perturbations, deterministic from the "
        "seed. Writes one Parquet file per episode and manifest.json.",
        formatter_class=fmt,
    )
    gen.add_argument("--out", required=True, metavar="DIR", help="new or empty output folder")
    gen.add_argument("--preset", default="default", choices=("default", "tiny"),
                     help="dataset size (tiny: a few seconds, for tests)")  # fmt: skip
    gen.add_argument("--seed", type=int, default=0, help="seed of tracks, layouts, starts, noise")
    gen.add_argument(
        "--cars",
        type=int,
        default=None,
        help=f"cars driven at once per wave [count]; {preset_values(PRESETS, 'cars')}",
    )
    gen.add_argument(
        "--waves",
        type=int,
        default=None,
        help=f"number of waves [count]; {preset_values(PRESETS, 'waves')}",
    )
    gen.add_argument(
        "--episode-seconds",
        type=float,
        default=None,
        dest="episode_s",
        help=f"longest episode [s]; {preset_values(PRESETS, 'episode_s')}",
    )
    gen.add_argument(
        "--procedural",
        type=int,
        default=None,
        dest="procedural_tracks",
        help="number of procedural circuits [count]; "
        + preset_values(PRESETS, "procedural_tracks"),
    )
    gen.add_argument(
        "--towns",
        type=int,
        default=None,
        dest="town_routes",
        help=f"number of town routes [count]; {preset_values(PRESETS, 'town_routes')}",
    )
    gen.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch threads during generation [count] (1 is fastest on small CPUs)",
    )
    gen.add_argument(
        "--lock-crawl-rate",
        type=float,
        default=0.0,
        metavar="PER_MIN",
        help="rate of the expert's lock_crawl perturbation [events per minute]: 2-6 s at 0.6-1.0 "
        "of full lock with the speed capped at 0.5-4 m/s and a held pedal, the walking-pace "
        "corner a policy stalls in on ice (0: off, the default dataset)",
    )
    gen.add_argument(
        "--launch-rate",
        type=float,
        default=0.0,
        metavar="PER_MIN",
        help="rate of the expert's launch perturbation [events per minute]: 2-6 s of a held "
        "throttle of 0.1-1.0 while the car is at or below 4 m/s, standing starts with wheel "
        "spin on low friction, which the expert's own throttle (a share of the friction) never "
        "gives (0: off, the default dataset)",
    )
    gen.add_argument("--no-progress", action="store_true", help="do not show a progress bar")
    gen.set_defaults(func=run_generate)

    summ = sub.add_parser("summary", help="print hours/samples per surface and label, save plots",
                          formatter_class=fmt)  # fmt: skip
    summ.add_argument("path", metavar="PATH", help="dataset folder or episode file")
    summ.add_argument(
        "--plots",
        default=None,
        metavar="DIR",
        help="also save the summary plots (PNG) into this folder",
    )
    summ.add_argument(
        "--val-fraction",
        type=float,
        default=0.15,
        help="share of sessions in the validation split [-]",
    )
    summ.set_defaults(func=run_summary)

    val = sub.add_parser("validate", help="check every episode file (and the manifest)",
                         formatter_class=fmt)  # fmt: skip
    val.add_argument("paths", nargs="+", metavar="PATH", help="dataset folders or episode files")
    val.set_defaults(func=run_validate)

    rec = sub.add_parser(
        "recover",
        help="turn journals left by a killed recording into episode files",
        formatter_class=fmt,
    )
    rec.add_argument("path", metavar="DIR", help="folder with *.journal.arrows files (recursive)")
    rec.set_defaults(func=run_recover)


def with_event_rate(config: Any, event: str, rate_per_min: float) -> Any:
    """``config`` (a :class:`GenerateConfig`) with the expert's ``event`` at this rate [1/min]."""
    from dataclasses import replace

    from gym_s3.errors import ConfigError

    option = "--" + event.replace("_", "-") + "-rate"
    if not 0.0 <= rate_per_min < float("inf"):
        raise ConfigError(
            f"{option} must be a finite rate >= 0 [events per minute], got {rate_per_min}"
        )
    perturbations = config.expert.perturbations
    changed = replace(getattr(perturbations, event), rate_per_min=rate_per_min)
    expert = replace(config.expert, perturbations=replace(perturbations, **{event: changed}))
    return replace(config, expert=expert)


def run_generate(args: argparse.Namespace) -> int:
    """Generate a dataset and print where it went."""
    from gym_s3.data.generate import generate_dataset, preset, summary_line
    from gym_s3.progress import progress_bar, result_console

    config = preset(args.preset, cars=args.cars, waves=args.waves, episode_s=args.episode_s,
                    procedural_tracks=args.procedural_tracks, town_routes=args.town_routes,
                    threads=args.threads)  # fmt: skip
    for event in ("lock_crawl", "launch"):
        rate = getattr(args, f"{event}_rate")
        if rate != 0.0:
            config = with_event_rate(config, event, rate)
    console = result_console(stderr=True)
    if args.no_progress:
        manifest = generate_dataset(args.out, config, args.seed, preset_name=args.preset)
    else:
        with progress_bar(console=console) as bar:
            task = bar.add_task(f"driving {config.cars} cars x {config.waves} waves", total=None)

            def update(done: int, total: int) -> None:
                """Forward generator progress to the bar."""
                bar.update(task, completed=done, total=total)

            manifest = generate_dataset(args.out, config, args.seed, preset_name=args.preset,
                                        progress=update)  # fmt: skip
    print(f"{args.out}: {summary_line(manifest)}")
    return 0


def run_summary(args: argparse.Namespace) -> int:
    """Print the summary tables (and save plots)."""
    from gym_s3.data.dataset import DrivingDataset
    from gym_s3.data.summary import save_plots, summarize, summary_tables
    from gym_s3.progress import result_console

    ds = DrivingDataset.load(args.path, val_fraction=args.val_fraction)
    console = result_console()
    for table in summary_tables(summarize(ds)):
        console.print(table)
    if args.plots:
        for path in save_plots(ds, args.plots):
            console.print(f"saved {path}")
    return 0


def run_validate(args: argparse.Namespace) -> int:
    """Validate datasets; exit code 2 with the first problem of each path.

    Journals (unfinished or crashed recordings, and their checksums) count as problems: the
    message says to run ``s3 data recover``.
    """
    from gym_s3.data.dataset import DrivingDataset
    from gym_s3.errors import DataFormatError

    failed = 0
    for path in args.paths:
        problems = _journal_problems(path)
        for problem in problems:
            print(f"INVALID {problem}", file=sys.stderr)
        failed += bool(problems)
        if problems and not _has_episodes(path):
            continue
        try:
            ds = DrivingDataset.load(path)
        except DataFormatError as exc:
            print(f"INVALID {exc}", file=sys.stderr)
            failed += 1
            continue
        print(f"ok {path}: {len(ds.episodes)} episodes, {ds.num_samples} samples, "
              f"content hash {ds.content_hash[:16]}")  # fmt: skip
    return 2 if failed else 0


def _has_episodes(path: str) -> bool:
    """True when ``path`` is an episode file or a folder holding one."""
    from pathlib import Path

    from gym_s3.data.files import EPISODE_SUFFIX

    p = Path(path)
    return p.suffix == EPISODE_SUFFIX or (p.is_dir() and any(p.rglob("*" + EPISODE_SUFFIX)))


def _journal_problems(path: str) -> list[str]:
    """One message per journal at or below ``path``: its intact rows, damage and the fix."""
    from pathlib import Path

    from gym_s3.data.journal import JOURNAL_SUFFIX, scan_journal
    from gym_s3.errors import DataFormatError

    p = Path(path)
    if p.is_dir():
        journals = sorted(p.rglob("*" + JOURNAL_SUFFIX))
    else:
        journals = [p] if p.name.endswith(JOURNAL_SUFFIX) else []
    fix = f"run `s3 data recover {p if p.is_dir() else p.parent}` to turn it into an episode"
    problems = []
    for journal in journals:
        try:
            scan = scan_journal(journal)
        except DataFormatError as exc:
            problems.append(f"{exc}; the journal cannot be recovered, delete it")
            continue
        damage = f"; {scan.damage}" if scan.damage else ""
        problems.append(
            f"{journal}: an unfinished recording (journal, {scan.rows} intact rows{damage}), "
            f"left by a crash or still being recorded; {fix} once no recording runs there"
        )
    return problems


def run_recover(args: argparse.Namespace) -> int:
    """Recover journals; exit code 2 if one could not be recovered or is live."""
    from gym_s3.data.recorder import recover

    results = recover(args.path)
    if not results:
        print(f"{args.path}: no journals to recover")
    for r in results:
        note = f" [{r.note}]" if r.note else ""
        if r.episode is not None:
            print(f"recovered {r.journal.name} -> {r.episode.name} ({r.rows} rows){note}")
        else:
            print(f"not recovered {r.journal.name}: {r.error}{note}", file=sys.stderr)
    return 2 if any(r.episode is None and r.error != "no complete row" for r in results) else 0
