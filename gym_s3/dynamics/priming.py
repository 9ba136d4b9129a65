"""Starting any backend from recorded rows: the state a window of history implies.

Dataset windows, open-loop evaluation and the training loop start a backend from logged history
instead of steady motion. :func:`state_from_window` builds the :class:`BackendState` whose next
:meth:`~gym_s3.dynamics.base.DynamicsBackend.step` with the window's newest action and friction
predicts exactly what ``predict`` would on the window. Learned backends rebuild their carried
state directly (``extra_from_history``); other backends (the ``bicycle``) are teacher-forced
through the older rows with their own ``predict``.
"""

from __future__ import annotations

import torch
from torch import Tensor

from gym_s3.dynamics.base import NUM_HISTORY_FEATURES, BackendState, DynamicsBackend
from gym_s3.errors import ConfigError


def extra_from_history(backend: DynamicsBackend, past: Tensor) -> dict[str, Tensor]:
    """Backend-specific state after the complete rows ``past`` ``(N, P, 9)`` (oldest first).

    Learned backends compute it directly; any other backend starts from ``initial_extra`` and is
    teacher-forced through the rows (its ``predict`` sees the recorded rows, not its own output).
    """
    own = getattr(backend, "extra_from_history", None)
    if own is not None:
        return own(past)
    n, p, _ = past.shape
    extra = backend.initial_extra(n, past.device, past.dtype)
    h = backend.history_length
    for j in range(p):
        rows = past[:, max(0, j - h + 1) : j + 1]
        if rows.shape[1] < h:
            rows = torch.cat([rows[:, :1].expand(-1, h - rows.shape[1], -1), rows], dim=1)
        _, extra = backend.predict(rows, extra)
    return extra


def state_from_window(backend: DynamicsBackend, window: Tensor, pose: Tensor) -> BackendState:
    """The state from which ``step(window[:, -1, 3:5], window[:, -1, 5:9])`` continues the log.

    Args:
        backend: any dynamics backend.
        window: ``(N, H, 9)`` recorded history rows ``k-H+1 .. k`` (row k holds the current
            velocities and the action applied next); ``H`` must be at least the backend's
            history length.
        pose: ``(N, 3)`` pose ``[x, y, yaw]`` at row k.

    Returns:
        A state with ``vel`` = row k's velocities, ``history`` = the rows before k (front-padded
        with a copy of the oldest, which ``step`` drops) and the matching ``extra``.
    """
    if window.ndim != 3 or window.shape[-1] != NUM_HISTORY_FEATURES:
        raise ConfigError(
            f"window must have shape (N, H, {NUM_HISTORY_FEATURES}), got {tuple(window.shape)}"
        )
    h = backend.history_length
    if window.shape[1] < h:
        raise ConfigError(
            f"backend '{backend.name}' needs windows of at least {h} history rows, got "
            f"{window.shape[1]}; build the dataset windows with history >= {h}"
        )
    past = window[:, :-1]
    history = torch.cat([window[:, :1], past], dim=1)[:, -h:]
    return BackendState(
        pose=pose,
        vel=window[:, -1, :3],
        history=history,
        extra=extra_from_history(backend, past),
        fault=torch.zeros(window.shape[0], dtype=torch.bool, device=window.device),
    )
