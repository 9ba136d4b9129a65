"""Do policies drive on from standstill, wide of the line? (:mod:`policies.restarts`).

Every car starts at rest up to ``--lateral-m`` metres off the line and ``--heading-rad``
radians turned away from it, on uniform asphalt, snow and ice laps of the given tracks, in the
open stand-in's vehicle model (in-process, one batch per policy); a car drove on when it advanced
``--min-progress-m`` metres within ``--seconds`` without failing. Prints the share per surface
and writes them as JSON.

    python tools/restart_check.py ddm trans dytr oracle --out runs/restarts.json
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict, fields
from pathlib import Path

from rich.table import Table

from gym_s3.errors import S3Error
from gym_s3.progress import result_console
from policies.checkpoint import resolve_policy
from policies.evaluate_model import MODEL_ENV
from policies.restarts import RestartConfig, restart_check

_HELP = {
    "tracks": "comma-separated tracks of the starts",
    "surfaces": "comma-separated uniform lap surfaces",
    "starts": "evenly spaced start places per track and surface [count]",
    "cars": "cars per policy (one batch) [count]",
    "lateral_m": "start lateral offset U(-x, x) [m]",
    "heading_rad": "start heading error U(-x, x) [rad]",
    "seconds": "time a car has to get going [s]",
    "min_progress_m": "progress along the reference that counts as driving on [m]",
    "stall_time_s": "standing this long ends the episode as stalled [s]",
    "seed": "seed of the start noise",
}


def main(argv: list[str] | None = None) -> int:
    """Run the check; exit status 0."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)  # fmt: skip
    p.add_argument("policies", nargs="+", help="shipped policy names or checkpoint paths")
    defaults = RestartConfig()
    for f in fields(RestartConfig):
        if f.name not in _HELP:
            continue
        value = getattr(defaults, f.name)
        kind = str if isinstance(value, tuple) else type(value)
        shown = ",".join(value) if isinstance(value, tuple) else value
        p.add_argument(f"--{f.name.replace('_', '-')}", dest=f.name, type=kind, default=shown,
                       help=_HELP[f.name])  # fmt: skip
    p.add_argument("--reference-physics", action="store_true",
                   help="float64 eager physics instead of float32 compiled")  # fmt: skip
    p.add_argument("--out", type=Path, default=None, help="JSON file of the shares")
    args = p.parse_args(argv)
    values = {f.name: getattr(args, f.name) for f in fields(RestartConfig) if f.name in _HELP}
    for name in ("tracks", "surfaces"):
        values[name] = tuple(v.strip() for v in values[name].split(",") if v.strip())
    try:
        config = RestartConfig(**values, fast=not args.reference_physics)
        loaded = [resolve_policy(name) for name in args.policies]
    except S3Error as exc:
        p.error(str(exc))  # names the setting or the policy; exit status 2
    results = restart_check(loaded, config)
    table = Table(title=f"Restarts from standstill, {MODEL_ENV}: share of cars that drove on "
                  f"(stalled) of {config.cars} per policy")  # fmt: skip
    table.add_column("policy")
    for s in config.surfaces:
        table.add_column(s, justify="right")
    table.add_column("all", justify="right")
    for r in results:
        cells = [f"{r.drove_on[s]:.2f} ({r.stalled[s]:.2f})" for s in config.surfaces]
        table.add_row(r.name, *cells, f"{r.overall:.2f}")
    result_console().print(table)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        payload = {"simulator": MODEL_ENV, "config": asdict(config),
                   "policies": [asdict(r) | {"overall": r.overall} for r in results]}  # fmt: skip
        args.out.write_text(json.dumps(payload, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
