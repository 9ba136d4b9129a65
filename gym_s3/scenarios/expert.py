"""Expert trajectories from driving logs, as reference paths of the scenario pool.

A logged episode (scripted expert, racing wheel or keyboard; :mod:`gym_s3.data`) becomes a
reference to track: the line the expert drove (smoothed and resampled to a uniform spacing), the
speed the expert drove along it as the target speed, the surface layout of the episode, and the
road edges of the track it was driven on (the logged lateral offset ``d`` moves them, so the
road stays where it was). ``S3Distilled-v0(logs=[...])`` and ``S3BeamNG-v0`` then track these
expert trajectories exactly as they track the built-in tracks.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from gym_s3.data.schema import EpisodeMeta
from gym_s3.errors import ConfigError
from gym_s3.tracks.analysis import detect_corners
from gym_s3.tracks.path import ReferencePath
from gym_s3.tracks.registry import cached_track
from gym_s3.tracks.resample import interp_along, smooth_centreline
from gym_s3.tracks.surfaces import SurfaceLayout

#: Road half-width used when the track of a log is unknown to this installation [m].
FALLBACK_HALF_WIDTH_M = 3.5
#: Narrowest road half-width kept after moving the edges by the driven offset [m].
MIN_HALF_WIDTH_M = 1.0


@dataclass(frozen=True)
class ExpertTrajectory:
    """One logged episode as a reference to track.

    Attributes:
        path: the driven line as an open :class:`ReferencePath` (name ``log:<session>/<episode>``).
        layout: the episode's surface layout.
        speed: ``(M,)`` the expert's speed at every path sample [m/s].
    """

    path: ReferencePath
    layout: SurfaceLayout
    speed: np.ndarray


def expert_trajectory(
    columns: dict[str, np.ndarray],
    meta: EpisodeMeta,
    *,
    ds: float = 1.0,
    smoothing_m: float = 1.0,
    min_length_m: float = 60.0,
) -> ExpertTrajectory | None:
    """The expert trajectory of one episode, or ``None`` if it is shorter than ``min_length_m``.

    Rows after the first simulator fault are dropped; so are points closer than ``ds / 2`` to the
    previously kept one (standing still adds nothing to a path).

    Args:
        columns: the episode's columns (:data:`gym_s3.data.schema.COLUMNS`; ``(T,)`` arrays).
        meta: its metadata (track, layout, ids).
        ds: sample spacing of the path [m].
        smoothing_m: Gaussian smoothing of the driven line along its length [m].
        min_length_m: shortest driven distance worth a scenario [m].
    """
    n = len(columns["x"])
    fault = np.flatnonzero(np.asarray(columns["fault"], dtype=bool))
    end = int(fault[0]) if len(fault) else n
    if end < 4:  # empty, or a fault from the first rows: nothing to follow
        return None
    xy = np.column_stack([columns["x"][:end], columns["y"][:end]]).astype(np.float64)
    keep = _spaced(xy, ds / 2)
    if len(keep) < 4:
        return None
    pts = xy[keep]
    driven = float(np.hypot(*np.diff(pts, axis=0).T).sum())
    if driven < min_length_m:
        return None
    res = smooth_centreline(pts, closed=False, ds=ds, smoothing_m=smoothing_m)
    s = np.arange(len(res.xy)) * res.ds
    length = float(s[-1])

    def along(values: np.ndarray) -> np.ndarray:
        return interp_along(s, res.source_s, np.asarray(values, np.float64)[keep], closed=False,
                            length=length)  # fmt: skip

    z = along(columns["z"][:end])
    speed = np.maximum(along(np.hypot(columns["v_long"][:end], columns["v_lat"][:end])), 0.0)
    wl, wr = _road_edges(meta.track, columns, end, along, len(s))
    name = f"log:{meta.session_id}/{meta.episode_id}"
    args = (np.column_stack([res.xy, z]), res.heading, res.curvature, wl, wr)
    draft = ReferencePath.from_arrays(name, *args, ds=res.ds, closed=False)
    path = ReferencePath.from_arrays(
        name, *args, ds=res.ds, closed=False,
        description=f"expert trajectory ({meta.device}) on {meta.track}, session "
        f"{meta.session_id}, episode {meta.episode_id}",
        labels=("expert", "log", *meta.track_labels), features=detect_corners(draft),
    )  # fmt: skip
    return ExpertTrajectory(path=path, layout=meta.surface_layout, speed=speed)


def expert_trajectories(
    source: str | Path, *, max_episodes: int | None = None, **kwargs: float
) -> list[ExpertTrajectory]:
    """The expert trajectories of every episode of a dataset folder or episode file.

    Args:
        source: a dataset folder (``s3 data generate``, ``s3 collect``) or one episode file.
        max_episodes: use at most this many episodes (in file order).
        **kwargs: :func:`expert_trajectory` options (``ds``, ``smoothing_m``, ``min_length_m``).

    Raises:
        DataFormatError: the logs are missing, damaged or foreign (named, with the fix).
        ConfigError: no episode of ``source`` is long enough to track.
    """
    from gym_s3.data.dataset import DrivingDataset

    dataset = DrivingDataset.load(source)
    out = []
    for episode in dataset.episodes[:max_episodes]:
        cols = {k: v[episode.start : episode.stop].numpy() for k, v in dataset.columns.items()}
        traj = expert_trajectory(cols, episode.meta, **kwargs)
        if traj is not None:
            out.append(traj)
    if not out:
        raise ConfigError(
            f"no episode in {source} drives far enough to be a reference (at least "
            f"{kwargs.get('min_length_m', 60.0):g} m); record longer episodes"
        )
    return out


def _spaced(xy: np.ndarray, min_step: float) -> np.ndarray:
    """Indices of the points kept when each must be ``min_step`` from the last kept one [m]."""
    kept = [0]
    last = xy[0]
    for i in range(1, len(xy)):  # one pass over the T rows of one episode (not per car)
        if np.hypot(*(xy[i] - last)) >= min_step:
            kept.append(i)
            last = xy[i]
    return np.asarray(kept)


def _road_edges(
    track: str, columns: dict[str, np.ndarray], end: int, along, m: int
) -> tuple[np.ndarray, np.ndarray]:
    """``(M,)`` left and right half-widths of the road around the driven line [m].

    The edges of the logged track at the logged arc length ``s``, moved by the logged lateral
    offset ``d`` (the driven line is ``d`` left of the track's centreline); a constant width when
    the track is unknown here.
    """
    try:
        ref = cached_track(track)
    except ConfigError:
        half = np.full(m, FALLBACK_HALF_WIDTH_M)
        return half, half.copy()
    smp = ref.sample(torch.as_tensor(columns["s"][:end], dtype=torch.float64))
    d = np.asarray(columns["d"][:end], np.float64)
    wl = along(smp.width_left.numpy() - d)
    wr = along(smp.width_right.numpy() + d)
    return np.maximum(wl, MIN_HALF_WIDTH_M), np.maximum(wr, MIN_HALF_WIDTH_M)
