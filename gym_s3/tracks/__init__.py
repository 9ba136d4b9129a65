"""Reference paths, built-in tracks, Frenet projection, surface layouts and speed profiles.

Main entry points:

* :func:`get_track` builds a track by name (``"putnam"``, ``"procedural:<seed>"``,
  ``"town:<seed>"``, ``"file:<csv>"``, ``"boundaries:<left>,<right>"``);
* :class:`ReferencePath` is the path type with batched Frenet projection
  (:meth:`ReferencePath.project`);
* :class:`SurfaceLayout` / :class:`SurfaceBatch` describe the surfaces of an episode and look up
  the friction under wheels (:meth:`SurfaceBatch.friction_at`);
* :func:`speed_profile` gives friction-aware target speeds along a path.

Importing this package needs only numpy and torch (plots import matplotlib when called).
"""

from gym_s3.tracks.friction import FrictionField, UniformFriction
from gym_s3.tracks.layouts import LayoutConfig, PatchConfig, sample_layout
from gym_s3.tracks.loaders import load_boundaries, load_tumftm_csv
from gym_s3.tracks.path import Frenet, PathFeature, PathSample, ReferencePath, wrap_angle
from gym_s3.tracks.procedural import ProceduralConfig, procedural_circuit
from gym_s3.tracks.putnam import putnam_park
from gym_s3.tracks.registry import get_track, list_tracks
from gym_s3.tracks.speed_profile import SpeedProfileConfig, lap_time, speed_profile
from gym_s3.tracks.surfaces import (
    SURFACE_NAMES,
    SURFACES,
    PatchBand,
    RectPatch,
    Surface,
    SurfaceBatch,
    SurfaceLayout,
    friction_along,
    get_surface,
)
from gym_s3.tracks.town import TownConfig, town_route

__all__ = [
    "SURFACES",
    "SURFACE_NAMES",
    "Frenet",
    "FrictionField",
    "LayoutConfig",
    "PatchBand",
    "PatchConfig",
    "PathFeature",
    "PathSample",
    "ProceduralConfig",
    "RectPatch",
    "ReferencePath",
    "SpeedProfileConfig",
    "Surface",
    "SurfaceBatch",
    "SurfaceLayout",
    "TownConfig",
    "UniformFriction",
    "friction_along",
    "get_surface",
    "get_track",
    "lap_time",
    "list_tracks",
    "load_boundaries",
    "load_tumftm_csv",
    "procedural_circuit",
    "putnam_park",
    "sample_layout",
    "speed_profile",
    "town_route",
    "wrap_angle",
]
