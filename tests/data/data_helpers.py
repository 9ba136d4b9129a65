"""Synthetic driving logs for the data-layer tests (values chosen so tests can recompute them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from gym_s3.data.files import write_episode
from gym_s3.data.schema import COLUMNS, EpisodeMeta, layout_to_dict
from gym_s3.tracks.surfaces import SURFACE_NAMES, SurfaceLayout

DT = 0.05


def straight_columns(n: int, *, speed: float = 10.0, mu: float = 1.0, surface: str = "asphalt",
                     start_row: int = 0) -> dict[str, np.ndarray]:  # fmt: skip
    """``n`` rows of a car driving straight along +x at ``speed``.

    ``yaw_rate`` holds the global row number (``start_row + i``) as a tag, so tests can tell which
    rows a window gathered; ``v_lat`` holds ``0.001 * row`` for the same purpose.
    """
    t = np.arange(n) * DT
    rows = start_row + np.arange(n)
    cols: dict[str, np.ndarray] = {}
    for c in COLUMNS:
        cols[c.name] = np.zeros(n, dtype=c.dtype)
    cols["t"] = t.astype(np.float32)
    cols["x"] = (speed * t).astype(np.float32)
    cols["v_long"] = np.full(n, speed, np.float32)
    cols["v_lat"] = (0.001 * rows).astype(np.float32)
    cols["yaw_rate"] = rows.astype(np.float32) * 1e-4
    cols["steer"] = (rows % 7 / 10.0).astype(np.float32)
    cols["accel"] = (rows % 5 / 10.0).astype(np.float32)
    cols["steer_cmd_raw"] = cols["steer"].copy()
    cols["throttle_cmd"] = cols["accel"].copy()
    for w in ("fl", "fr", "rl", "rr"):
        cols[f"omega_{w}"] = np.full(n, speed / 0.32, np.float32)
        cols[f"mu_{w}"] = np.full(n, mu, np.float32)
        cols[f"surface_{w}"] = np.full(n, SURFACE_NAMES.index(surface), np.int8)
    cols["s"] = cols["x"].copy()
    cols["target_speed"] = cols["v_long"].copy()
    return cols


def meta_for(session: str = "s0", episode: str = "e0", *, surface: str = "asphalt",
             **kwargs: Any) -> EpisodeMeta:  # fmt: skip
    """Metadata of a synthetic episode."""
    return EpisodeMeta(
        session_id=session,
        episode_id=episode,
        source="standin-batched",
        device="scripted-expert",
        track=kwargs.pop("track", "putnam"),
        layout=layout_to_dict(SurfaceLayout.uniform(surface)),
        **kwargs,
    )


def write_straight(folder: Path, session: str, episode: str, n: int, **kwargs: Any) -> Path:
    """Write a straight-driving episode into ``folder``; returns the file."""
    surface = kwargs.get("surface", "asphalt")
    cols = straight_columns(n, **kwargs)
    return write_episode(folder / f"{session}__{episode}.parquet", cols,
                         meta_for(session, episode, surface=surface))  # fmt: skip
