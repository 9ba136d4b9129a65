"""``s3 tracks``: list the built-in tracks and show one (summary, corners, lap times, plot).

Examples::

    s3 tracks list
    s3 tracks show putnam --ice-patches 4 --seed 0 --plot putnam.png
    s3 tracks show town:3 --plot town.png
"""

from __future__ import annotations

import argparse
import math
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from gym_s3.errors import ConfigError
from gym_s3.tracks.path import ReferencePath

if TYPE_CHECKING:  # pragma: no cover
    from rich.table import Table

    from gym_s3.tracks.surfaces import SurfaceLayout


def register(subparsers: Any) -> None:
    """Add the ``tracks`` command (with ``list`` and ``show``) to the ``s3`` parser."""
    fmt = argparse.ArgumentDefaultsHelpFormatter
    parser = subparsers.add_parser(
        "tracks",
        help="list tracks, or show one: geometry summary, corners, lap times, plot",
        description="Inspect the built-in and user-supplied tracks.",
        formatter_class=fmt,
    )
    sub = parser.add_subparsers(dest="tracks_command", metavar="SUBCOMMAND", required=True)
    lst = sub.add_parser("list", help="list the accepted track names", formatter_class=fmt)
    lst.set_defaults(func=run_list)
    show = sub.add_parser(
        "show",
        help="summarise one track (length, width, corners, elevation, lap times per surface)",
        formatter_class=fmt,
    )
    show.add_argument("name", metavar="NAME", help="track name, e.g. putnam, procedural:3, town:0")
    show.add_argument("--ds", type=float, default=1.0, help="sample spacing of the path [m]")
    show.add_argument(
        "--ice-patches",
        type=int,
        default=0,
        metavar="K",
        help="number of ice patches to place along the path (on asphalt) [count]",
    )
    show.add_argument("--seed", type=int, default=0, help="seed of the patch placement [-]")
    show.add_argument(
        "--patch-length",
        type=float,
        nargs=2,
        default=(8.0, 30.0),
        metavar=("MIN", "MAX"),
        help="range of the patch length along the path [m]",
    )
    show.add_argument(
        "--patch-mu",
        type=float,
        default=None,
        metavar="MU",
        help="peak friction of the patches [-]; None means the tabulated ice value",
    )
    show.add_argument(
        "--v-max",
        type=float,
        default=None,
        help="top speed of the speed profile [m/s]; default: the scenario pool's limit "
        "(28 m/s on circuits, 13.9 m/s = 50 km/h on town routes)",
    )
    show.add_argument(
        "--plot",
        default=None,
        metavar="PATH.png",
        help="save a top-down plot with the patches to this file [path: .png, .pdf or .svg]",
    )
    show.set_defaults(func=run_show)


def run_list(args: argparse.Namespace) -> int:
    """Print the accepted track names."""
    from rich.table import Table

    from gym_s3.progress import result_console
    from gym_s3.tracks.registry import list_tracks

    table = Table(title="Track names (s3 tracks show NAME)")
    for col in ("name", "what it is", "example"):
        table.add_column(col)
    for kind in list_tracks():
        table.add_row(kind.pattern, kind.description, kind.example)
    result_console().print(table)
    return 0


def _layout(path: ReferencePath, args: argparse.Namespace) -> SurfaceLayout | None:
    """The asphalt layout with the requested ice patches, or ``None``."""
    from gym_s3.tracks.layouts import LayoutConfig, PatchConfig, sample_layout

    if args.ice_patches < 0:
        raise ConfigError(f"--ice-patches must be >= 0, got {args.ice_patches}")
    if args.ice_patches == 0:
        return None
    mu = None if args.patch_mu is None else (args.patch_mu, args.patch_mu)
    patches = PatchConfig(
        count=(args.ice_patches, args.ice_patches), length_m=tuple(args.patch_length), mu=mu
    )
    rng = np.random.default_rng(args.seed)
    return sample_layout(path, LayoutConfig(base=("asphalt",), patches=patches), rng)


def _summary_table(path: ReferencePath) -> Table:
    """Rich table of the geometry."""
    from rich.table import Table

    from gym_s3.tracks.analysis import elevation_range, max_grade
    from gym_s3.tracks.circuits import turn_direction

    table = Table(title=path.name, show_header=False)
    table.add_column("quantity", style="bold")
    table.add_column("value")
    table.add_row("description", path.description)
    table.add_row("labels", ", ".join(path.labels))
    table.add_row("length", f"{path.length:.1f} m ({'closed loop' if path.closed else 'open'})")
    if path.closed:
        table.add_row("direction", turn_direction(path))
    width = (path.width_left + path.width_right).numpy()
    table.add_row("road width", f"{width.min():.1f}-{width.max():.1f} m")
    lo, hi = elevation_range(path)
    table.add_row("elevation", f"{lo:.1f} to {hi:.1f} m (range {hi - lo:.1f} m)")
    table.add_row("max grade", f"{100 * max_grade(path):.1f} %")
    kinds = {f.kind for f in path.features} or {"corner"}
    table.add_row("features", f"{len(path.features)} ({', '.join(sorted(kinds))})")
    return table


def _feature_table(path: ReferencePath) -> Table:
    """Rich table of the corners / intersections."""
    from rich.table import Table
    from rich.text import Text

    table = Table(title="corners and manoeuvres")
    cols = ("#", "kind", "dir", "angle\n[deg]", "min radius\n[m]", "s start\n[m]", "s end\n[m]")
    for col in cols:
        table.add_column(Text(col), justify="right")
    for i, f in enumerate(path.features, start=1):
        radius = "-" if math.isinf(f.min_radius) else f"{f.min_radius:.0f}"
        table.add_row(
            str(i),
            f.kind,
            f.direction,
            f"{math.degrees(f.angle):+.0f}",
            radius,
            f"{f.s_start:.0f}",
            f"{f.s_end:.0f}",
        )
    return table


def _lap_table(path: ReferencePath, layout: SurfaceLayout | None, v_max: float) -> Table:
    """Rich table of the friction-aware lap time for every surface (and the patch layout)."""
    from rich.table import Table
    from rich.text import Text

    from gym_s3.tracks.speed_profile import SpeedProfileConfig, lap_time, speed_profile
    from gym_s3.tracks.surfaces import SURFACES, SurfaceBatch, friction_along

    names = [s.name for s in SURFACES.values()]
    mu = torch.tensor([s.mu for s in SURFACES.values()], dtype=torch.float64)
    mu = mu[:, None].expand(-1, path.num_samples)
    if layout is not None:
        names.append(f"asphalt + {len(layout.bands)} ice patches")
        batch = SurfaceBatch.stack([layout], dtype=torch.float64)
        mu = torch.cat([mu, friction_along(path, batch).to(torch.float64)])
    v = speed_profile(path, mu, SpeedProfileConfig(v_max=v_max))
    times = lap_time(path, v)
    what = "lap time" if path.closed else "route time"
    table = Table(title=f"friction-aware speed profile (v_max {v_max:g} m/s)")
    cols = ("surface", "peak mu\n[-]", f"{what}\n[s]", "mean speed\n[km/h]", "min speed\n[km/h]")
    for col in cols:
        table.add_column(Text(col), justify="right")
    for i, name in enumerate(names):
        mu_txt = (
            f"{float(mu[i].min()):.2f}-{float(mu[i].max()):.2f}" if i >= 6 else f"{mu[i, 0]:.2f}"
        )
        table.add_row(
            name,
            mu_txt,
            f"{float(times[i]):.1f}",
            f"{3.6 * path.length / float(times[i]):.1f}",
            f"{3.6 * float(v[i].min()):.1f}",
        )
    return table


def _patch_table(layout: SurfaceLayout) -> Table:
    """Rich table of the ice patches."""
    from rich.table import Table
    from rich.text import Text

    table = Table(title="surface patches (d > 0 is left of the centreline)")
    cols = ("#", "surface", "mu\n[-]", "s start\n[m]", "length\n[m]", "d from\n[m]", "d to\n[m]")
    for col in cols:
        table.add_column(Text(col), justify="right")
    for i, b in enumerate(layout.bands, start=1):
        table.add_row(
            str(i),
            b.surface,
            f"{b.mu:.2f}",
            f"{b.s_start:.0f}",
            f"{b.length:.1f}",
            f"{b.d_min:+.1f}",
            f"{b.d_max:+.1f}",
        )
    return table


def run_show(args: argparse.Namespace) -> int:
    """Print the summary of one track and optionally save its plot."""
    from gym_s3.progress import result_console
    from gym_s3.tracks.registry import get_track

    if args.ds <= 0 or (args.v_max is not None and args.v_max <= 0):
        raise ConfigError("--ds and --v-max must be positive")
    path = get_track(args.name, ds=args.ds)
    from gym_s3.scenarios.pool import PoolConfig

    v_max = args.v_max if args.v_max is not None else PoolConfig().speed_for(path).v_max
    layout = _layout(path, args)
    console = result_console()
    console.print(_summary_table(path))
    if path.features:
        console.print(_feature_table(path))
    console.print(_lap_table(path, layout, v_max))
    if layout is not None:
        console.print(_patch_table(layout))
    if args.plot:
        _save_plot(path, layout, args)
        console.print(f"plot saved to {args.plot}")
    return 0


def _save_plot(path: ReferencePath, layout: SurfaceLayout | None, args: argparse.Namespace) -> None:
    """Draw the track (with the town grid behind town routes) and save it."""
    from gym_s3.tracks.plot import figsize_for, new_axes, plot_town, plot_track, save_plot
    from gym_s3.tracks.town import town_grid

    ax = new_axes(figsize_for(path))
    if "town" in path.labels:
        plot_town(town_grid(), ax=ax)
    plot_track(path, layout=layout, ax=ax)
    try:
        save_plot(ax, args.plot)
    except (OSError, ValueError) as exc:
        raise ConfigError(
            f"cannot save the plot to {args.plot}: {exc}; choose a writable path ending in .png, "
            ".pdf or .svg"
        ) from exc
