"""Track plots: road, patches, trajectories and the approximation label."""

from __future__ import annotations

import matplotlib
import numpy as np
import torch

from gym_s3.tracks.layouts import LayoutConfig, PatchConfig, sample_layout
from gym_s3.tracks.plot import new_axes, plot_town, plot_track, track_title
from gym_s3.tracks.town import town_grid, town_route


def test_putnam_plot_has_road_patches_trajectories_and_label(putnam):
    """The plot draws the road, one polygon per patch rectangle, the trajectories and the label.

    Fails if patches or trajectories are dropped or Putnam is not marked as an approximation.
    """
    backend = matplotlib.get_backend()
    layout = sample_layout(
        putnam, LayoutConfig(patches=PatchConfig(count=(3, 3))), np.random.default_rng(0)
    )
    traj = {"car 0": putnam.xyz[:100, :2], "car 1": putnam.xyz[200:300, :2].numpy()}
    ax = plot_track(putnam, layout=layout, trajectories=traj)
    assert "approximation" in ax.get_title() and "approximation" in track_title(putnam)
    assert len(ax.patches) == 1 + len(layout.patches)  # road surface + patch rectangles
    labels = [line.get_label() for line in ax.get_lines()]
    assert "car 0" in labels and "car 1" in labels
    assert matplotlib.get_backend() == backend  # no global backend switch


def test_plot_into_given_axes_with_town_background():
    """plot_town + plot_track draw into the axes they are given and return it.

    Fails if a new figure is created instead of reusing ``ax``.
    """
    ax = new_axes((4.0, 4.0))
    grid = town_grid(0)
    assert plot_town(grid, ax=ax) is ax
    route = town_route(0)
    assert plot_track(route, ax=ax) is ax
    assert len(ax.patches) == len(grid.xs) + len(grid.ys) + 1
    assert "approximation" not in ax.get_title()
    ax.figure.canvas.draw()  # renders without error
    xlim = ax.get_xlim()
    assert xlim[0] <= float(torch.min(route.xyz[:, 0])) and xlim[1] >= float(
        torch.max(route.xyz[:, 0])
    )
