"""Top-down plots of a path, its surface layout and optional trajectories (matplotlib, no pyplot).

Figures are built with the object-oriented API on an Agg canvas, so plotting never changes the
global matplotlib backend and works on headless machines. Every function takes ``ax=None`` and
returns the axes, so evaluation code can compose its own figures.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from gym_s3._optional import require
from gym_s3.tracks.path import ReferencePath
from gym_s3.tracks.surfaces import SurfaceLayout
from gym_s3.tracks.town import TownGrid

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes

#: fill colour of every named surface
SURFACE_COLOURS: dict[str, str] = {
    "asphalt": "#b0b0b0",
    "asphalt_wet": "#7d8a99",
    "gravel": "#c8b48a",
    "dirt": "#9c7a54",
    "snow": "#f2f5f7",
    "ice": "#6fc3ee",
}


def new_axes(figsize: tuple[float, float] = (8.0, 8.0)) -> Axes:
    """A fresh axes on its own Agg-backed figure (save with ``ax.figure.savefig(path)``)."""
    figure_mod = require("matplotlib.figure", purpose="plotting tracks")
    agg = require("matplotlib.backends.backend_agg", purpose="plotting tracks")
    fig = figure_mod.Figure(figsize=figsize, layout="constrained")
    agg.FigureCanvasAgg(fig)
    return fig.add_subplot()


def track_title(path: ReferencePath) -> str:
    """Title text; says "approximation" for tracks labelled as such (e.g. Putnam Park)."""
    title = path.name
    if path.name == "putnam":
        title = "Putnam Park Road Course"
    if "approximation" in path.labels:
        title += " (approximation, not surveyed geometry)"
    return f"{title}: {path.length:.0f} m"


def road_edges(path: ReferencePath) -> tuple[np.ndarray, np.ndarray]:
    """Left and right road edges ``(M, 2)`` [m] (closed paths repeat the first point)."""
    p = path.to(dtype=torch.float64)
    xy = p.xyz[:, :2].numpy()
    h = p.heading.numpy()
    normal = np.stack([-np.sin(h), np.cos(h)], axis=1)
    left = xy + p.width_left.numpy()[:, None] * normal
    right = xy - p.width_right.numpy()[:, None] * normal
    if path.closed:
        left, right = np.vstack([left, left[:1]]), np.vstack([right, right[:1]])
    return left, right


def _draw_road(ax: Axes, path: ReferencePath, colour: str) -> None:
    """Road surface between the edges, the edges, and the centreline."""
    polygon_cls = require("matplotlib.patches", purpose="plotting tracks").Polygon
    left, right = road_edges(path)
    outline = np.vstack([left, right[::-1]])
    ax.add_patch(polygon_cls(outline, closed=True, facecolor=colour, edgecolor="none", zorder=1))
    for edge in (left, right):
        ax.plot(edge[:, 0], edge[:, 1], color="black", linewidth=0.8, zorder=3)
    centre = path.xyz[:, :2].numpy()
    if path.closed:
        centre = np.vstack([centre, centre[:1]])
    ax.plot(
        centre[:, 0], centre[:, 1], color="white", linewidth=0.6, linestyle=(0, (6, 6)), zorder=3
    )


def _draw_layout(ax: Axes, path: ReferencePath, layout: SurfaceLayout) -> None:
    """Patch rectangles coloured by surface, outlined, and marked so small patches stay visible."""
    polygon_cls = require("matplotlib.patches", purpose="plotting tracks").Polygon
    for rect in layout.patches:
        c, s = np.cos(rect.yaw), np.sin(rect.yaw)
        hl, hw = rect.length / 2.0, rect.width / 2.0
        local = np.array([[hl, hw], [-hl, hw], [-hl, -hw], [hl, -hw]])
        world = local @ np.array([[c, s], [-s, c]]) + np.array([rect.cx, rect.cy])
        colour = SURFACE_COLOURS.get(rect.surface, "#ff00ff")
        ax.add_patch(
            polygon_cls(
                world,
                closed=True,
                facecolor=colour,
                edgecolor="#1f4e79",
                linewidth=0.6,
                alpha=0.95,
                zorder=2,
            )
        )
    if layout.bands:
        mids = torch.tensor([b.s_start + b.length / 2 for b in layout.bands], dtype=torch.float64)
        smp = path.to(dtype=torch.float64).sample(mids)
        ax.scatter(
            smp.x.numpy(),
            smp.y.numpy(),
            s=60,
            marker="o",
            facecolors="none",
            edgecolors="#1f4e79",
            linewidths=1.5,
            zorder=6,
            label="surface patch",
        )


def figsize_for(path: ReferencePath, *, width: float = 9.0) -> tuple[float, float]:
    """A figure size [in] whose aspect fits the path's bounding box (height 3-12 in)."""
    xy = path.xyz[:, :2]
    span = (xy.max(dim=0).values - xy.min(dim=0).values).clamp(min=1.0)
    height = width * float(span[1] / span[0]) + 1.0
    return width, float(min(max(height, 3.0), 12.0))


def _draw_start_and_direction(ax: Axes, path: ReferencePath) -> None:
    """A start line across the road at s = 0 and an arrow in the direction of travel."""
    p = path.to(dtype=torch.float64)
    smp = p.sample(torch.tensor([0.0, min(0.04 * p.length, 80.0)], dtype=torch.float64))
    x, y, h = smp.x.numpy(), smp.y.numpy(), smp.heading.numpy()
    n = np.array([-np.sin(h[0]), np.cos(h[0])])
    wl, wr = float(p.width_left[0]), float(p.width_right[0])
    a, b = np.array([x[0], y[0]]) + wl * n, np.array([x[0], y[0]]) - wr * n
    ax.plot([a[0], b[0]], [a[1], b[1]], color="black", linewidth=3.0, zorder=4)
    ax.plot(
        [a[0], b[0]],
        [a[1], b[1]],
        color="white",
        linewidth=3.0,
        zorder=4,
        linestyle=(0, (1, 1)),
        label="start line",
    )
    scale = max(0.03 * p.length, 10.0)
    ax.annotate(
        "",
        xy=(x[1] + scale * np.cos(h[1]), y[1] + scale * np.sin(h[1])),
        xytext=(x[1], y[1]),
        zorder=5,
        arrowprops={"arrowstyle": "-|>", "color": "crimson", "lw": 2.0},
    )


def _draw_features(ax: Axes, path: ReferencePath) -> None:
    """Number every corner / manoeuvre next to the road."""
    if not path.features:
        return
    p = path.to(dtype=torch.float64)
    mids = torch.tensor([(f.s_start + f.s_end) / 2 for f in path.features], dtype=torch.float64)
    smp = p.sample(mids)
    for i, feat in enumerate(path.features):
        h = float(smp.heading[i])
        side = -1.0 if feat.direction == "L" else 1.0  # outside of the turn
        off = side * (float(smp.width_left[i]) + 12.0)
        x = float(smp.x[i]) - off * np.sin(h)
        y = float(smp.y[i]) + off * np.cos(h)
        ax.text(
            x,
            y,
            str(i + 1),
            ha="center",
            va="center",
            fontsize=8,
            zorder=6,
            bbox={"boxstyle": "circle", "fc": "white", "ec": "0.3", "lw": 0.5},
        )


def plot_town(grid: TownGrid, *, ax: Axes | None = None) -> Axes:
    """Draw the streets of a town grid (background for town routes).

    Args:
        grid: the street grid.
        ax: axes to draw into (a new Agg figure when ``None``).

    Returns:
        The axes.
    """
    ax = ax if ax is not None else new_axes()
    rect_cls = require("matplotlib.patches", purpose="plotting tracks").Rectangle
    half = grid.road_width / 2.0
    x0, x1, y0, y1 = grid.xs[0] - half, grid.xs[-1] + half, grid.ys[0] - half, grid.ys[-1] + half
    style = {"facecolor": "#dcdcdc", "edgecolor": "#9a9a9a", "linewidth": 0.5, "zorder": 0}
    for x in grid.xs:
        ax.add_patch(rect_cls((x - half, y0), grid.road_width, y1 - y0, **style))
    for y in grid.ys:
        ax.add_patch(rect_cls((x0, y - half), x1 - x0, grid.road_width, **style))
    ax.set_aspect("equal")
    ax.autoscale_view()
    return ax


def plot_track(
    path: ReferencePath,
    *,
    layout: SurfaceLayout | None = None,
    trajectories: Mapping[str, Any] | Sequence[Any] | None = None,
    ax: Axes | None = None,
    title: str | None = None,
    show_features: bool = True,
) -> Axes:
    """Plot a path top-down with its road, surface patches, start line and direction.

    Args:
        path: the path.
        layout: optional surface layout; the road is filled with the base surface's colour and
            the patches are drawn on top.
        trajectories: optional ``(T, 2)`` world x, y arrays [m] (numpy or torch), as a sequence
            or a mapping from a legend name to the array.
        ax: axes to draw into (a new Agg figure when ``None``).
        title: title text; defaults to :func:`track_title` (which marks approximations).
        show_features: number the corners / manoeuvres.

    Returns:
        The axes.
    """
    ax = ax if ax is not None else new_axes()
    base = layout.base if layout is not None else "asphalt"
    _draw_road(ax, path, SURFACE_COLOURS.get(base, "#b0b0b0"))
    if layout is not None:
        _draw_layout(ax, path, layout)
    _draw_start_and_direction(ax, path)
    if show_features:
        _draw_features(ax, path)
    if trajectories is not None:
        items = (
            trajectories.items()
            if isinstance(trajectories, Mapping)
            else ((None, t) for t in trajectories)
        )
        for name, traj in items:
            xy = np.asarray(torch.as_tensor(traj).detach().cpu(), dtype=np.float64)
            ax.plot(xy[:, 0], xy[:, 1], linewidth=1.2, zorder=7, label=name)
    ax.set_aspect("equal")
    ax.autoscale_view()
    ax.set_xlabel("x [m]")
    ax.set_ylabel("y [m]")
    ax.set_title(title if title is not None else track_title(path), fontsize=10)
    if trajectories is not None and isinstance(trajectories, Mapping):
        ax.legend(loc="best", fontsize=8)
    return ax


def save_plot(ax: Axes, filename: str, *, dpi: int = 150) -> None:
    """Save the figure that holds ``ax`` (PNG, PDF or SVG by extension)."""
    ax.figure.savefig(filename, dpi=dpi)
