"""The episode loop: task + source of cars + driver (+ recorder), for N cars at once.

:func:`drive` runs the episodes the task has begun and the source has placed until the
:class:`~gym_s3.task.TrackingTask` ends each of them (or a row budget runs out), calling a
recorder with every row. ``s3 data generate`` is this loop with the vehicle-model cars and the
scripted expert; the gym faces and the collection session step the same task and sources one
call at a time (the gym API and the input devices decide when the next step happens).

Rows: row ``k`` is the state after ``k`` control steps and the action the driver chose there;
the state in which an episode ended is its last row.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from gym_s3.observations import EgoState
from gym_s3.sources import CarSource
from gym_s3.task import TrackingTask
from gym_s3.task_types import TrackSample

__all__ = ["Driver", "EpisodeEnds", "RowRecorder", "drive"]

#: A driver: ``(ego, road under the cars, task) -> (N, 2) [steer, accel]`` (the scripted expert's
#: :meth:`~gym_s3.drivers.expert.BatchedExpert.act`).
Driver = Callable[[EgoState, TrackSample, TrackingTask], Tensor]
#: A recorder of row ``k``: ``(k, action (N, 2), road under the cars)``; the source holds the state.
RowRecorder = Callable[[int, Tensor, TrackSample], None]


@dataclass(frozen=True)
class EpisodeEnds:
    """Where and why each car's episode ended.

    Attributes:
        rows: ``(N,)`` int64 rows of each episode (its states ``0 .. rows - 1``).
        reason: ``(N,)`` int64 :meth:`~gym_s3.task_types.TaskStep.end_reasons` code (``0``: the
            row budget ran out first).
    """

    rows: Tensor
    reason: Tensor


def drive(
    task: TrackingTask,
    cars: CarSource,
    driver: Driver,
    ego: EgoState,
    max_rows: int,
    *,
    record: RowRecorder | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> EpisodeEnds:
    """Drive every car's current episode to its end; at most ``max_rows`` rows.

    Args:
        task: the task, its episodes begun.
        cars: the source, its cars placed at the starts.
        driver: chooses the actions.
        ego: the cars' state at the start (what ``cars.place`` returned).
        max_rows: row budget (the loop stops earlier once every episode ended).
        record: called with every row of every car (rows past a car's end included; use
            :attr:`EpisodeEnds.rows` to cut them).
        progress: called with ``(control steps done, max_rows)``.
    """
    n = task.n
    sample = task.measure(ego)
    alive = torch.ones(n, dtype=torch.bool, device=task.device)
    ended = torch.zeros_like(alive)  # the task ends episodes after a step, never at row 0
    rows = torch.full((n,), max_rows, dtype=torch.int64, device=task.device)
    reason = torch.zeros_like(rows)
    for k in range(max_rows):
        action = driver(ego, sample, task)
        if record is not None:
            record(k, action, sample)
        stop = alive & ended
        rows = torch.where(stop, torch.full_like(rows, k + 1), rows)
        alive &= ~stop
        if not bool(alive.any()):
            break
        moved = cars.advance(action, task.surfaces, sample.mu)
        code = task.step(moved.ego, action, fault=moved.fault).end_reasons()
        reason = torch.where(alive, code, reason)
        ended = code > 0
        ego = moved.ego
        sample = task.measure(ego)
        if progress is not None:
            progress(k + 1, max_rows)
    return EpisodeEnds(rows, reason)
