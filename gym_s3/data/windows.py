"""History windows for the learned dynamics models, and their normalisation statistics.

A window anchored at row ``k`` with history ``H`` and horizon ``K`` is (batch dimension B first):

* ``history`` ``(B, H, 9)``: rows ``k-H+1 .. k`` of :data:`~gym_s3.dynamics.base.HISTORY_FEATURES`
  (row ``k``'s action is the one applied from ``k`` to ``k+1``);
* ``future_action`` ``(B, K, 2)`` and ``future_mu`` ``(B, K, 4)``: rows ``k .. k+K-1``;
* ``target_vel`` ``(B, K, 3)``: ``[v_long, v_lat, yaw_rate]`` of rows ``k+1 .. k+K``;
* ``pose`` ``(B, K+1, 3)``: ``[x, y, yaw]`` of rows ``k .. k+K``;
* ``labels`` ``(B,)`` int64 scenario bitmask over rows ``k .. k+max(K, L-1)`` (``L`` the
  labelling horizon, cut at the end of the segment);
* ``surface`` ``(B,)`` base surface id of the episode, ``session`` ``(B,)`` session index,
  ``row`` ``(B,)`` the anchor's row in the concatenated dataset.

Windows never cross a *segment* boundary (an episode boundary, or a gap in time inside a file) and
contain no faulted row.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from gym_s3.data.labelling import LABEL_ROWS, labels_at
from gym_s3.dynamics.base import HISTORY_FEATURES
from gym_s3.errors import ConfigError, DataFormatError

#: Columns of the ``target_vel`` tensor (and of the target statistics).
TARGET_FEATURES: tuple[str, ...] = ("v_long", "v_lat", "yaw_rate")
ACTION_FEATURES: tuple[str, ...] = ("steer", "accel")
MU_FEATURES: tuple[str, ...] = ("mu_fl", "mu_fr", "mu_rl", "mu_rr")
POSE_FEATURES: tuple[str, ...] = ("x", "y", "yaw")
#: Standard deviations are floored at this value so constant features do not blow up.
STD_FLOOR = 1e-3


@dataclass(frozen=True)
class RowTable:
    """Concatenated rows of many episodes, as tensors (R rows).

    Attributes:
        features: ``(R, 9)`` float32 :data:`HISTORY_FEATURES`.
        pose: ``(R, 3)`` float32 ``[x, y, yaw]``.
        segment: ``(R,)`` int64 segment index (windows never cross segments).
        segment_end: ``(R,)`` int64 first row after the row's segment.
        fault_count: ``(R + 1,)`` int64 cumulative count of faulted rows (prefix sums).
        surface: ``(R,)`` int64 base surface id of the row's episode.
        session: ``(R,)`` int64 session index of the row's episode.
        label_inputs: per-row inputs of the scenario labeller (see
            :func:`gym_s3.data.labelling.label_inputs`).
    """

    features: Tensor
    pose: Tensor
    segment: Tensor
    segment_end: Tensor
    fault_count: Tensor
    surface: Tensor
    session: Tensor
    label_inputs: Mapping[str, Tensor]

    @property
    def num_rows(self) -> int:
        """Number of rows R."""
        return int(self.features.shape[0])


def check_window_sizes(history: int, horizon: int) -> None:
    """Raise :class:`ConfigError` unless ``history >= 1`` and ``horizon >= 1``."""
    if history < 1 or horizon < 1:
        raise ConfigError(f"need history >= 1 and horizon >= 1, got {history}, {horizon}")


def valid_anchors(table: RowTable, history: int, horizon: int, stride: int = 1) -> Tensor:
    """Rows ``k`` at which a full window fits (same segment, no fault); ``(B,)`` int64."""
    check_window_sizes(history, horizon)
    if stride < 1:
        raise ConfigError(f"stride must be >= 1, got {stride}")
    r = table.num_rows
    k = torch.arange(history - 1, max(r - horizon, history - 1), stride)  # empty if too short
    first, last = k - history + 1, k + horizon
    ok = table.segment[first] == table.segment[last]
    ok &= (table.fault_count[last + 1] - table.fault_count[first]) == 0
    return k[ok]


def gather_windows(
    table: RowTable,
    anchors: Tensor,
    history: int,
    horizon: int,
    label_rows: int = LABEL_ROWS,
) -> dict[str, Tensor]:
    """Build the window tensors of the given anchor rows (see the module docstring).

    Args:
        table: the rows.
        anchors: ``(B,)`` int64 anchor rows (from :func:`valid_anchors`).
        history: history length H.
        horizon: rollout horizon K.
        label_rows: labelling horizon L [rows].
    """
    check_window_sizes(history, horizon)
    k = anchors.to(torch.int64)
    hist_idx = k[:, None] + torch.arange(-history + 1, 1)[None, :]
    fut_idx = k[:, None] + torch.arange(0, horizon)[None, :]
    f = table.features
    return {
        "history": f[hist_idx],
        "future_action": f[fut_idx][..., 3:5],
        "future_mu": f[fut_idx][..., 5:9],
        "target_vel": f[fut_idx + 1][..., 0:3],
        "pose": table.pose[k[:, None] + torch.arange(0, horizon + 1)[None, :]],
        "labels": labels_at(
            table.label_inputs, k, table.segment_end[k], max(horizon + 1, label_rows)
        ),
        "surface": table.surface[k],
        "session": table.session[k],
        "row": k,
    }


@dataclass(frozen=True)
class NormStats:
    """Mean and standard deviation of the model inputs and targets (from the train split).

    Attributes:
        history_mean: ``(9,)`` mean of each history feature.
        history_std: ``(9,)`` standard deviation (floored at :data:`STD_FLOOR`).
        target_mean: ``(3,)`` mean of ``[v_long, v_lat, yaw_rate]`` targets.
        target_std: ``(3,)`` their standard deviation.
        delta_mean: ``(3,)`` mean of the one-step velocity change (target minus current).
        delta_std: ``(3,)`` its standard deviation.
        count: number of rows the statistics were computed from.
    """

    history_mean: Tensor
    history_std: Tensor
    target_mean: Tensor
    target_std: Tensor
    delta_mean: Tensor
    delta_std: Tensor
    count: int

    @staticmethod
    def from_table(table: RowTable, anchors: Tensor) -> NormStats:
        """Statistics over the one-step windows anchored at ``anchors`` (e.g. the train split).

        Raises:
            DataFormatError: there is no anchor to compute statistics from.
        """
        if anchors.numel() == 0:
            raise DataFormatError("cannot compute normalisation statistics of an empty split")
        x = table.features[anchors].double()
        y = table.features[anchors + 1][:, 0:3].double()
        delta = y - x[:, 0:3]

        def ms(v: Tensor) -> tuple[Tensor, Tensor]:
            """Mean and floored standard deviation over the rows of ``v``."""
            std = v.std(dim=0, unbiased=False).clamp(min=STD_FLOOR) if len(v) > 1 else None
            std = torch.ones(v.shape[1], dtype=v.dtype) if std is None else std
            return v.mean(dim=0).float(), std.float()

        (hm, hs), (tm, ts), (dm, dsd) = ms(x), ms(y), ms(delta)
        return NormStats(hm, hs, tm, ts, dm, dsd, int(anchors.numel()))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict with the feature names (for checkpoint sidecars)."""
        return {
            "history_features": list(HISTORY_FEATURES),
            "target_features": list(TARGET_FEATURES),
            "history_mean": self.history_mean.tolist(),
            "history_std": self.history_std.tolist(),
            "target_mean": self.target_mean.tolist(),
            "target_std": self.target_std.tolist(),
            "delta_mean": self.delta_mean.tolist(),
            "delta_std": self.delta_std.tolist(),
            "count": self.count,
        }

    @staticmethod
    def from_dict(data: Mapping[str, Any]) -> NormStats:
        """Inverse of :meth:`to_dict`.

        Raises:
            DataFormatError: missing keys, wrong sizes or other feature names.
        """
        try:
            if list(data["history_features"]) != list(HISTORY_FEATURES):
                raise DataFormatError(
                    f"normalisation statistics are for features {data['history_features']}, "
                    f"expected {list(HISTORY_FEATURES)}"
                )
            t = {k: torch.tensor(data[k], dtype=torch.float32) for k in (
                "history_mean", "history_std", "target_mean", "target_std", "delta_mean",
                "delta_std")}  # fmt: skip
            stats = NormStats(**t, count=int(data["count"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise DataFormatError(f"malformed normalisation statistics: {exc}") from exc
        sizes = [(stats.history_mean, 9), (stats.history_std, 9)] + [
            (v, 3) for v in (stats.target_mean, stats.target_std, stats.delta_mean, stats.delta_std)
        ]
        if any(tuple(v.shape) != (n,) for v, n in sizes):
            raise DataFormatError("normalisation statistics have the wrong sizes")
        return stats


def label_counts(labels: Tensor, names: Sequence[str]) -> dict[str, int]:
    """How many of the ``(B,)`` bitmasks carry each label."""
    return {name: int(((labels >> i) & 1).sum()) for i, name in enumerate(names)}
