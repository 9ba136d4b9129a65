"""Surface layouts of evaluation laps: one base surface, ice patches, or a friction transition.

A lap's surface is named by a *lap surface*: a surface name (``"snow"``), or two joined by
``>`` (``"asphalt>ice"``): the lap is on the first surface and crosses one full-width stretch of
the second (:data:`TRANSITION_LENGTH_M` long, placed by the layout seed), so the car drives from
one grip level into the other and back out. ``s3 evaluate --surfaces asphalt,asphalt>ice`` and
``gym.make("S3BeamNG-v0", surface="asphalt>ice")`` take the same names, and the same name and
seed give the same lap in ``S3BeamNG-v0`` and ``S3Distilled-v0``.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from gym_s3.errors import ConfigError
from gym_s3.tracks.layouts import LayoutConfig, PatchConfig, sample_layout
from gym_s3.tracks.path import ReferencePath
from gym_s3.tracks.surface_table import Surface, get_surface
from gym_s3.tracks.surfaces import SurfaceLayout

__all__ = ["TRANSITION", "TRANSITION_LENGTH_M", "lap_layout", "parse_lap_surface"]

#: Joins the base surface and the surface of the stretch in a transition lap's name.
TRANSITION = ">"
#: Length of the stretch of a transition lap [m] (at most 40 % of the lap).
TRANSITION_LENGTH_M = 400.0


def parse_lap_surface(name: str) -> tuple[Surface, Surface | None]:
    """The base surface of a lap and the surface of its transition stretch (``None``: none).

    Raises:
        ConfigError: an unknown surface, or more than one ``>``.
    """
    parts = [p.strip() for p in name.split(TRANSITION)]
    if len(parts) > 2 or not all(parts):
        raise ConfigError(
            f"lap surface {name!r}: give one surface ('snow') or a transition of two "
            f"joined by '{TRANSITION}' ('asphalt{TRANSITION}ice')"
        )
    base = get_surface(parts[0])
    return base, get_surface(parts[1]) if len(parts) == 2 else None


def lap_layout(
    path: ReferencePath, surface: str, ice_patches: int = 0, seed: int = 0
) -> SurfaceLayout:
    """The surface layout of an evaluation lap along ``path``.

    Args:
        path: the lap's reference path.
        surface: a lap surface (see the module docstring).
        ice_patches: ice patches placed by ``seed`` (anywhere along the lap).
        seed: seed of the patch and stretch placement.

    Returns:
        the layout: the same lap in ``S3BeamNG-v0`` and ``S3Distilled-v0``.
    """
    base, stretch = parse_lap_surface(surface)
    config = LayoutConfig(base=(base.name,))
    if ice_patches:
        config = replace(config, patches=PatchConfig(count=(ice_patches, ice_patches)))
    rng = np.random.default_rng(seed)
    layout = sample_layout(path, config, rng)
    if stretch is None:
        return layout
    length = min(TRANSITION_LENGTH_M, 0.4 * float(path.length))
    margin = min(30.0, 0.1 * float(path.length))
    band = PatchConfig(count=(1, 1), length_m=(length, length), coverage=(1.0, 1.0),
                       surface=stretch.name, margin_m=margin)  # fmt: skip
    extra = sample_layout(path, LayoutConfig(base=(base.name,), patches=band), rng)
    # the stretch first: an ice patch on it (the later rectangle wins) stays ice
    return replace(layout, patches=extra.patches + layout.patches, bands=extra.bands + layout.bands)
