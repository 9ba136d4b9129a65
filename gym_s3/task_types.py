"""What the tracking task hands out: start poses, step results with end reasons, the road.

* :class:`StartPose`: where each car starts an episode (the source places it there);
* :class:`TaskStep`: observation, reward, termination, truncation and diagnostics of one step,
  with :meth:`TaskStep.end_reasons` naming why each episode ended (:data:`END_REASONS`);
* :class:`TrackSample`: what a logger or a driver knows about the road under each car (Frenet
  coordinates, target speed, friction and surface under each wheel), which no simulator reports.

All are batched: every tensor has leading dimension N (cars).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from gym_s3.observations import EgoState

__all__ = ["END_REASONS", "StartPose", "TaskStep", "TrackSample", "end_reason_codes"]

#: Why an episode ended, in the order of precedence when several hold at once; code ``i + 1`` in
#: :meth:`TaskStep.end_reasons` (``0``: still running). ``fault``: non-finite state or the
#: simulator flagged the car; ``off_track``: beyond a road edge by more than the margin;
#: ``spin_out``: heading error beyond the spin threshold; ``stalled``: slower than the stall speed
#: for the stall time; ``completed``: end of an open route or the lap count reached;
#: ``time_limit``: truncated at the car's step limit.
END_REASONS: tuple[str, ...] = (
    "fault",
    "off_track",
    "spin_out",
    "stalled",
    "completed",
    "time_limit",
)


@dataclass(frozen=True)
class StartPose:
    """Where each car starts an episode; every field ``(N,)``.

    Attributes:
        x: world x [m].
        y: world y [m].
        z: elevation [m].
        yaw: heading [rad].
        speed: forward speed [m/s].
    """

    x: Tensor
    y: Tensor
    z: Tensor
    yaw: Tensor
    speed: Tensor

    def ego(self) -> EgoState:
        """The cars standing at their poses, moving straight ahead at the start speed."""
        zero = torch.zeros_like(self.x)
        return EgoState(self.x, self.y, self.yaw, self.speed, zero, zero)


@dataclass(frozen=True)
class TaskStep:
    """What one task step returns; tensors have leading dimension N.

    Attributes:
        obs: ``(N, F)`` float32 observation.
        reward: ``(N,)`` float32 reward.
        terminated: ``(N,)`` bool: off road, spin-out, non-finite state, stalled or route
            completed.
        truncated: ``(N,)`` bool: time limit reached (never together with ``terminated``); the
            limit is per car (``TaskConfig.max_episode_steps`` or derived from the route's
            reference time, ``TaskConfig.time_limit_factor``).
        info: per-car diagnostics ``(N,)``: reward terms (``reward/<term>``), pose (``x``, ``y``,
            ``yaw``), tracking errors, termination reasons and ``episode/<metric>`` summaries
            (valid where done).
    """

    obs: Tensor
    reward: Tensor
    terminated: Tensor
    truncated: Tensor
    info: dict[str, Tensor]

    def end_reasons(self) -> Tensor:
        """``(N,)`` int64: ``0`` for a running car, else ``1 +`` index into :data:`END_REASONS`."""
        return end_reason_codes(self.info, self.truncated)


def end_reason_codes(info: dict[str, Tensor], truncated: Tensor) -> Tensor:
    """Why each episode ended, from a step's ``info`` flags and ``truncated`` (also env info).

    Returns:
        ``(N,)`` int64: ``0`` running, else ``1 +`` index into :data:`END_REASONS` (the first
        reason that holds, in that order).
    """
    flags = (
        info["non_finite"],
        info["off_track"],
        info["spin_out"],
        info["stalled"],
        info["completed"],
        truncated,
    )
    code = torch.zeros_like(truncated, dtype=torch.int64)
    for i in range(len(flags) - 1, -1, -1):  # the first reason in END_REASONS wins
        code = torch.where(flags[i], torch.full_like(code, i + 1), code)
    return code


@dataclass(frozen=True)
class TrackSample:
    """The road under N cars, as loggers record it and drivers see it; every field ``(N,)``.

    Attributes:
        s: arc length of the projection onto the car's reference path [m].
        d: lateral offset from the path, + left [m].
        heading: path heading at the projection [rad].
        curvature: path curvature at the projection [1/m].
        width_left: road width left of the centreline [m].
        width_right: road width right of the centreline [m].
        target_speed: friction-aware target speed at ``s`` [m/s].
        mu: ``(N, 4)`` peak friction under the FL, FR, RL, RR wheels [-].
        surface: ``(N, 4)`` int64 surface id under each wheel (index into ``SURFACE_NAMES``).
    """

    s: Tensor
    d: Tensor
    heading: Tensor
    curvature: Tensor
    width_left: Tensor
    width_right: Tensor
    target_speed: Tensor
    mu: Tensor
    surface: Tensor
