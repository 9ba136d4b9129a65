"""Scenario labels of recorded driving, from measured quantities.

The labeller is :func:`gym_s3.scenarios.labels.label_windows` (the one the scenario pool uses for
reference trajectories); this module only turns log rows into its inputs: measured speed
``v_long``, longitudinal acceleration ``ax``, curvature ``yaw_rate / max(v_long, 1)`` and the mean
friction under the wheels, and, where the log has them, the body side-slip
``|v_lat| / max(|v_long|, 1)`` and the slip ratio ``(omega r - v) / max(v, 1)`` of the fastest
wheel (``r`` the sedan's rolling radius). A sample is in an intersection when the track is a
route with intersections (``"intersection"`` in its labels) and the car turns tighter than a
40 m radius, the same rule the scenario pool applies to reference paths.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import torch
from torch import Tensor

from gym_s3.scenarios.labels import LABELS, LabelThresholds, label_names, label_windows
from gym_s3.vehicle.params import SEDAN

#: Default labelling horizon: rows per labelled window (1 s at 20 Hz).
LABEL_ROWS = 20
#: Curvature above which a sample of an intersection route counts as a manoeuvre [1/m].
INTERSECTION_CURVATURE = 1.0 / 40.0


def label_inputs(
    columns: Mapping[str, np.ndarray | Tensor], track_labels: Sequence[str] = ()
) -> dict[str, Tensor]:
    """Per-row labeller inputs of one or more concatenated episodes.

    Args:
        columns: log columns (at least ``v_long, ax, yaw_rate, mu_*``), each ``(T,)``.
        track_labels: labels of the track, or ignored when ``columns`` has an ``"intersection"``
            row mask already (concatenated episodes of several tracks).

    Returns:
        ``speed, accel, curvature, mu`` ``(T,)`` float32, ``intersection`` ``(T,)`` bool, and
        ``side_slip`` / ``wheel_slip`` ``(T,)`` float32 when the columns allow (``v_lat``;
        ``omega_*``, NaN where a wheel speed is not reported).
    """

    def col(name: str) -> Tensor:
        """Column ``name`` as a float32 tensor."""
        return torch.as_tensor(np.asarray(columns[name]), dtype=torch.float32)

    speed = col("v_long")
    curvature = col("yaw_rate") / speed.abs().clamp(min=1.0)
    mu = torch.stack([col(f"mu_{w}") for w in ("fl", "fr", "rl", "rr")], dim=-1).mean(-1)
    if "intersection" in columns:
        route = torch.as_tensor(np.asarray(columns["intersection"]), dtype=torch.bool)
    else:
        route = torch.full_like(speed, "intersection" in track_labels, dtype=torch.bool)
    out = {
        "speed": speed,
        "accel": col("ax"),
        "curvature": curvature,
        "mu": mu,
        "intersection": route & (curvature.abs() > INTERSECTION_CURVATURE),
    }
    if "v_lat" in columns:
        out["side_slip"] = col("v_lat").abs() / speed.abs().clamp(min=1.0)
    wheels = [f"omega_{w}" for w in ("fl", "fr", "rl", "rr")]
    if all(w in columns for w in wheels):
        rim = torch.stack([col(w) for w in wheels], dim=-1).nan_to_num(0.0).amax(-1)
        out["wheel_slip"] = (rim * SEDAN.wheel_radius - speed) / speed.abs().clamp(min=1.0)
    return out


def labels_at(
    inputs: Mapping[str, Tensor],
    start: Tensor,
    end: Tensor,
    length: int = LABEL_ROWS,
    thresholds: LabelThresholds | None = None,
) -> Tensor:
    """Label windows of rows ``start .. start + length - 1``, cut at ``end`` (exclusive).

    Args:
        inputs: per-row inputs from :func:`label_inputs`, each ``(T,)``.
        start: ``(B,)`` int64 first row of each window.
        end: ``(B,)`` int64 first row after the window's episode (windows never cross it).
        length: rows per window.
        thresholds: label thresholds (the defaults when ``None``).

    Returns:
        ``(B,)`` int64 bitmask over :data:`~gym_s3.scenarios.labels.LABELS`.
    """
    t = inputs["speed"].shape[0]
    if start.numel() == 0:
        return torch.zeros(0, dtype=torch.int64)
    rows = start[:, None] + torch.arange(length)[None, :]
    valid = rows < end[:, None]
    rows = rows.clamp(max=t - 1)
    return label_windows(
        inputs["speed"][rows],
        inputs["accel"][rows],
        inputs["curvature"][rows],
        inputs["mu"][rows],
        intersection=inputs["intersection"][rows],
        side_slip=inputs["side_slip"][rows] if "side_slip" in inputs else None,
        wheel_slip=inputs["wheel_slip"][rows] if "wheel_slip" in inputs else None,
        valid=valid,
        thresholds=thresholds or LabelThresholds(),
    )


def episode_label_mask(
    columns: Mapping[str, np.ndarray | Tensor],
    track_labels: Sequence[str] = (),
    length: int = LABEL_ROWS,
) -> int:
    """Bitmask of every label found in consecutive ``length``-row windows of one episode."""
    inputs = label_inputs(columns, track_labels)
    t = int(inputs["speed"].shape[0])
    if t == 0:
        return 0
    start = torch.arange(0, t, length)
    mask = labels_at(inputs, start, torch.full_like(start, t), length)
    out = 0
    for i in range(len(LABELS)):
        if bool(((mask >> i) & 1).any()):
            out |= 1 << i
    return out


def episode_labels(
    columns: Mapping[str, np.ndarray | Tensor], track_labels: Sequence[str] = ()
) -> tuple[str, ...]:
    """Names of the labels present in one episode (see :func:`episode_label_mask`)."""
    return label_names(episode_label_mask(columns, track_labels))
