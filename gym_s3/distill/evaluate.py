"""Open-loop evaluation: multi-step errors per backend, surface and scenario label.

From every held-out window the backend starts in the state its history implies and is rolled out
with the recorded actions and wheel friction, feeding back its own predictions. At each horizon
(default 1, 5, 20 and 60 steps = 0.05 to 3 s) four errors are measured against the log:

* ``position`` [m]: distance between predicted and logged ``(x, y)``;
* ``heading`` [rad]: absolute wrapped yaw difference;
* ``speed`` [m/s]: absolute difference of the longitudinal speed ``v_long``;
* ``yaw_rate`` [rad/s]: absolute yaw-rate difference.

Errors are averaged over all windows, per base surface and per scenario label (a window counts for
every label it carries). The windows come from expert logs; :func:`add_rollouts` adds the same
errors on held-out episodes driven by policies (``s3 rollouts``), where a policy visits states the
expert does not (report key ``"rollouts"``). :func:`write_report` stores the numbers as JSON,
:func:`print_tables` prints rich tables and :mod:`gym_s3.distill.plots` draws the plots.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from gym_s3.distill.loss import rollout
from gym_s3.distill.windows import WindowSource
from gym_s3.dynamics.base import DynamicsBackend
from gym_s3.errors import ConfigError
from gym_s3.scenarios.labels import LABELS
from gym_s3.tracks.surfaces import SURFACE_NAMES

#: Default horizons [steps].
HORIZONS: tuple[int, ...] = (1, 5, 20, 60)
#: Error metrics and their units.
METRICS: dict[str, str] = {"position": "m", "heading": "rad", "speed": "m/s", "yaw_rate": "rad/s"}


@dataclass(frozen=True)
class WindowErrors:
    """Per-window open-loop errors.

    Attributes:
        errors: metric -> ``(B, len(horizons))`` absolute error at each horizon.
        fault: ``(B,)`` the rollout was flagged by the guard at some step.
        surface: ``(B,)`` base surface id.
        labels: ``(B,)`` scenario-label bitmask.
    """

    errors: dict[str, Tensor]
    fault: Tensor
    surface: Tensor
    labels: Tensor


def _wrap(angle: Tensor) -> Tensor:
    return torch.remainder(angle + math.pi, 2 * math.pi) - math.pi


@torch.no_grad()
def window_errors(
    backend: DynamicsBackend,
    windows: WindowSource,
    horizons: Sequence[int] = HORIZONS,
    batch_size: int = 2048,
) -> WindowErrors:
    """Roll ``backend`` out from every window and measure the errors at ``horizons``."""
    horizons = tuple(sorted(set(int(h) for h in horizons)))
    if not horizons or horizons[0] < 1 or horizons[-1] > windows.horizon:
        raise ConfigError(
            f"horizons {list(horizons)} must lie in 1..{windows.horizon} (the windows' horizon); "
            "build the evaluation windows with a longer horizon"
        )
    if windows.history < backend.history_length:
        raise ConfigError(
            f"backend '{backend.name}' needs {backend.history_length} history rows, the windows "
            f"have {windows.history}"
        )
    backend.eval()
    k = horizons[-1]
    idx = torch.tensor([h - 1 for h in horizons])
    parts: dict[str, list[Tensor]] = {m: [] for m in METRICS}
    fault, surface, labels = [], [], []
    for chunk in torch.arange(len(windows)).split(batch_size):
        batch = windows.batch(chunk)
        vel, pose, flt = rollout(backend, batch, k)
        true_pose = batch["pose"][:, 1 : k + 1].to(pose.dtype)
        true_vel = batch["target_vel"][:, :k].to(vel.dtype)
        parts["position"].append((pose[:, idx, :2] - true_pose[:, idx, :2]).norm(dim=-1))
        parts["heading"].append(_wrap(pose[:, idx, 2] - true_pose[:, idx, 2]).abs())
        parts["speed"].append((vel[:, idx, 0] - true_vel[:, idx, 0]).abs())
        parts["yaw_rate"].append((vel[:, idx, 2] - true_vel[:, idx, 2]).abs())
        fault.append(flt.any(dim=1))
        surface.append(batch["surface"])
        labels.append(batch["labels"])
    return WindowErrors(
        errors={m: torch.cat(v).double() for m, v in parts.items()},
        fault=torch.cat(fault),
        surface=torch.cat(surface),
        labels=torch.cat(labels),
    )


def summarize(err: WindowErrors, horizons: Sequence[int]) -> dict[str, Any]:
    """Mean errors per group: ``all``, ``surface:<name>``, ``label:<name>``.

    Returns:
        ``{group: {"count": n, "faults": f, <metric>: {str(h): mean}}}`` (groups without windows
        are left out).
    """
    horizons = tuple(sorted(set(int(h) for h in horizons)))
    groups: dict[str, Tensor] = {"all": torch.ones_like(err.fault)}
    for i, name in enumerate(SURFACE_NAMES):
        groups[f"surface:{name}"] = err.surface == i
    for i, name in enumerate(LABELS):
        groups[f"label:{name}"] = ((err.labels >> i) & 1).bool()
    out: dict[str, Any] = {}
    for group, mask in groups.items():
        n = int(mask.sum())
        if n == 0:
            continue
        entry: dict[str, Any] = {"count": n, "faults": int(err.fault[mask].sum())}
        for metric, values in err.errors.items():
            means = values[mask].mean(dim=0)
            entry[metric] = {str(h): float(means[j]) for j, h in enumerate(horizons)}
        out[group] = entry
    return out


def evaluate(
    backends: Mapping[str, DynamicsBackend],
    windows: WindowSource,
    horizons: Sequence[int] = HORIZONS,
    *,
    meta: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Evaluate several backends on the same windows.

    Args:
        backends: display name -> backend.
        windows: held-out windows with horizon >= max(horizons).
        horizons: horizons [steps].
        meta: extra JSON-ready information stored in the report (dataset hash, checkpoints).

    Returns:
        The report: ``{"horizons", "metrics", "windows", "meta", "results": {name: summary}}``.
    """
    if len(windows) == 0:
        raise ConfigError(
            f"no held-out window fits the longest horizon of {max(horizons)} steps (the episodes "
            "are too short); use shorter --horizons, --split all, or longer/more episodes"
        )
    results = {
        name: summarize(window_errors(b, windows, horizons), horizons)
        for name, b in backends.items()
    }
    return {
        "horizons": sorted(set(int(h) for h in horizons)),
        "metrics": dict(METRICS),
        "dt": next(iter(backends.values())).dt if backends else None,
        "windows": len(windows),
        "meta": dict(meta or {}),
        "results": results,
    }


def add_rollouts(
    report: dict[str, Any],
    backends: Mapping[str, DynamicsBackend],
    windows: WindowSource,
    *,
    meta: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Add the errors on policy-rollout windows to ``report`` (key ``"rollouts"``); returns it.

    Args:
        report: a report of :func:`evaluate` (its horizons are used).
        backends: the same backends.
        windows: windows of held-out policy-driven episodes.
        meta: where the rollouts come from (folders, drivers, hashes).
    """
    rollouts = evaluate(backends, windows, report["horizons"], meta=meta)
    report["rollouts"] = {k: rollouts[k] for k in ("windows", "meta", "results")}
    return report


def write_report(report: Mapping[str, Any], out_dir: str | Path, *, plots: bool = True) -> Path:
    """Write ``evaluation.json`` (and the plots) into ``out_dir``; returns the JSON path."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "evaluation.json"
    path.write_text(json.dumps(report, indent=2, allow_nan=False) + "\n")
    if plots:
        from gym_s3.distill.plots import plot_report

        plot_report(report, out)
    return path


def print_tables(report: Mapping[str, Any], horizon: int = 20, console: Any = None) -> None:
    """Rich tables: every metric at every horizon, and position error per surface and label."""
    from gym_s3.progress import result_console

    console = console or result_console()
    sections = [("expert logs", report["results"])]
    if "rollouts" in report:
        sections.append(("policy rollouts", report["rollouts"]["results"]))
    for where, results in sections:
        _print_section(report, results, where, horizon, console)


def _print_section(report: Mapping[str, Any], results: Mapping[str, Any], where: str,
                   horizon: int, console: Any) -> None:  # fmt: skip
    """The tables of :func:`print_tables` for one set of windows (``where`` names them)."""
    from rich.markup import escape
    from rich.table import Table

    horizons = [str(h) for h in report["horizons"]]
    dt = report.get("dt") or 0.05
    table = Table(title=f"open-loop error on {where} (mean over held-out windows)")
    table.add_column("backend")
    table.add_column("metric")
    for h in horizons:
        table.add_column(f"{h} steps ({int(h) * dt:g} s)", justify="right")
    for name, res in results.items():
        for metric, unit in report["metrics"].items():
            cells = [f"{res['all'][metric][h]:.4g}" for h in horizons]
            table.add_row(name, escape(f"{metric} [{unit}]"), *cells)
        table.add_section()
    console.print(table)
    h = str(horizon) if str(horizon) in horizons else horizons[-1]
    for kind in ("surface", "label"):
        groups = sorted({g for res in results.values() for g in res if g.startswith(kind + ":")})
        if not groups:
            continue
        t = Table(title=escape(f"position error [m] at {h} steps per {kind} ({where})"))
        t.add_column("backend")
        for g in groups:
            t.add_column(g.split(":", 1)[1], justify="right")
        for name, res in results.items():
            t.add_row(name, *(f"{res[g]['position'][h]:.4g}" if g in res else "-" for g in groups))
        console.print(t)
