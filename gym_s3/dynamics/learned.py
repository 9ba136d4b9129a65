"""Shared machinery of the learned backends (``ddm``, ``trans``, ``dytr``).

A learned backend normalises its inputs with train-split statistics (:class:`Normalizer`),
carries whatever it needs between steps in ``BackendState.extra`` (tensors with leading N, so the
environments' row-wise ``where`` reset keeps working) and can rebuild that state from any window
of past rows (:meth:`LearnedBackend.extra_from_history`), which is how dataset windows and the
training loop start; fresh cars in steady motion start from :meth:`LearnedBackend.steady_extra`
(the same state, from the one repeated row).
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any

import torch
from torch import Tensor

from gym_s3.data.windows import NormStats
from gym_s3.dynamics.base import BackendState, DynamicsBackend
from gym_s3.dynamics.normalization import Normalizer
from gym_s3.errors import ConfigError
from gym_s3.spec import CONTROL_DT_S


def check_positive_int(name: str, value: Any, minimum: int = 1) -> int:
    """Return ``value`` if it is an int >= ``minimum``, else raise ConfigError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return value


def pad_front(rows: Tensor, length: int) -> Tensor:
    """Keep the last ``length`` rows of ``(N, P, F)``; repeat the oldest row if ``P < length``."""
    p = rows.shape[1]
    if p >= length:
        return rows[:, p - length :]
    if p == 0:
        raise ConfigError("at least one history row is needed to build a backend state")
    pad = rows[:, :1].expand(-1, length - p, -1)
    return torch.cat([pad, rows], dim=1)


class LearnedBackend(DynamicsBackend):
    """Base class of the learned backends: normalisation and history-derived state."""

    def __init__(self, dt: float = CONTROL_DT_S) -> None:
        super().__init__(dt)
        self.norm = Normalizer()

    @property
    def norm_stats(self) -> NormStats:
        """The normalisation statistics in use."""
        return self.norm.stats

    def set_norm_stats(self, stats: NormStats) -> None:
        """Install train-split statistics (before training; stored in checkpoints)."""
        self.norm.set(stats)

    @abstractmethod
    def extra_from_history(self, past: Tensor) -> dict[str, Tensor]:
        """Backend state after the complete rows ``past`` have been stepped through.

        Args:
            past: ``(N, P, 9)`` history rows, oldest first (each with the action that was applied
                and the friction under the wheels); rows older than the backend needs are
                ignored, missing ones are taken equal to the oldest given row.

        Returns:
            The ``extra`` dict that, together with ``history = past[:, -H:]``, lets the next
            :meth:`step` predict exactly what :meth:`predict` would on the full window.
        """

    def steady_extra(self, row: Tensor) -> dict[str, Tensor]:
        """The ``extra`` after a history whose rows all equal ``row`` ``(N, 9)``.

        The same as :meth:`extra_from_history` on ``history_length`` copies of ``row``; backends
        that can compute it from the one row (the attention caches of ``trans`` and ``dytr``)
        override this.
        """
        return self.extra_from_history(row[:, None].expand(-1, self.history_length, -1))

    def initial_state(self, pose: Tensor, speed: Tensor, wheel_mu: Tensor) -> BackendState:
        """Cars in steady straight motion; the carried state matches the steady history."""
        state = super().initial_state(pose, speed, wheel_mu)
        state.extra = self.steady_extra(state.history[:, -1])
        return state


def bounded(x: Tensor, bound: Tensor) -> Tensor:
    """Smoothly limit ``x`` to ``(-bound, bound)`` (``bound * tanh(x / bound)``, slope 1 at 0)."""
    b = bound.to(x.dtype)
    return b * torch.tanh(x / b)
