"""Sources of dataset windows for training and evaluation.

The trainer and the evaluator draw mini-batches of windows (the dict layout of
:mod:`gym_s3.data.windows`) by index from a :class:`WindowSource`: either tensors already in memory
(:class:`TensorWindows`) or anchors of a :class:`~gym_s3.data.dataset.DrivingDataset` gathered
lazily per batch (:class:`DatasetWindows`), so long horizons never materialise every window.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol, runtime_checkable

import torch
from torch import Tensor

from gym_s3.errors import ConfigError

#: Window tensors the trainer needs.
REQUIRED = ("history", "future_action", "future_mu", "target_vel", "pose")


@runtime_checkable
class WindowSource(Protocol):
    """Indexable set of windows with a fixed history H and horizon K."""

    history: int
    horizon: int

    def __len__(self) -> int:
        """Number of windows B."""
        ...

    def batch(self, index: Tensor) -> dict[str, Tensor]:
        """Window tensors of the ``(b,)`` int64 ``index`` (see :mod:`gym_s3.data.windows`)."""
        ...


class TensorWindows:
    """Windows held as tensors (e.g. the output of ``DrivingDataset.windows``).

    Args:
        windows: dict of ``(B, ...)`` tensors with at least :data:`REQUIRED`.
    """

    def __init__(self, windows: Mapping[str, Tensor]) -> None:
        missing = [k for k in REQUIRED if k not in windows]
        if missing:
            raise ConfigError(f"windows lack the tensors {missing}; expected {list(REQUIRED)}")
        sizes = {int(v.shape[0]) for v in windows.values()}
        if len(sizes) != 1:
            raise ConfigError(f"window tensors disagree on the batch size: {sorted(sizes)}")
        self.data = dict(windows)
        self.history = int(windows["history"].shape[1])
        self.horizon = int(windows["target_vel"].shape[1])

    def __len__(self) -> int:
        """Number of windows B."""
        return int(self.data["history"].shape[0])

    def batch(self, index: Tensor) -> dict[str, Tensor]:
        """Rows ``index`` of every tensor."""
        return {k: v[index] for k, v in self.data.items()}

    def subset(self, index: Tensor) -> TensorWindows:
        """A new source with the windows ``index``."""
        return TensorWindows(self.batch(index))


class DatasetWindows:
    """Windows of a driving dataset (or split) gathered per batch from their anchor rows.

    Args:
        dataset: a :class:`~gym_s3.data.dataset.DrivingDataset` (typically a split).
        history: history length H [rows].
        horizon: rollout horizon K [rows].
        stride: keep every ``stride``-th anchor.
    """

    def __init__(self, dataset, history: int, horizon: int, stride: int = 1) -> None:
        self.dataset = dataset
        self.history = history
        self.horizon = horizon
        self.anchors = dataset.anchors(history, horizon, stride=stride)
        if self.anchors.numel() == 0:
            raise ConfigError(
                f"the dataset has no window of history {history} and horizon {horizon} rows; "
                "use shorter windows or more data"
            )

    def __len__(self) -> int:
        """Number of windows B."""
        return int(self.anchors.numel())

    def batch(self, index: Tensor) -> dict[str, Tensor]:
        """Gathered windows of anchors ``index``."""
        return self.dataset.gather(self.anchors[index], self.history, self.horizon)


def fixed_subset(source: WindowSource, max_windows: int | None) -> Tensor:
    """Indices of at most ``max_windows`` windows of ``source``, evenly spread (deterministic)."""
    n = len(source)
    if max_windows is None or n <= max_windows:
        return torch.arange(n)
    return torch.linspace(0, n - 1, max_windows).round().to(torch.int64)
