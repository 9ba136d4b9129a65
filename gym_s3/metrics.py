"""Tracking metrics, defined once and used by rewards, env infos and evaluation reports.

Every function is pure and batched: inputs are tensors whose leading dimension is the number of
cars ``N`` (any extra leading dimensions broadcast), outputs have the same leading shape.
:class:`EpisodeStats` accumulates them per car over an episode without host synchronisation.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import torch
from torch import Tensor

from gym_s3.tracks.analysis import CORNER_CURVATURE
from gym_s3.tracks.path import wrap_angle


def cross_track_error(lateral_offset: Tensor) -> Tensor:
    """Absolute lateral distance from the reference [m]; input is the signed Frenet ``d`` [m]."""
    return lateral_offset.abs()


def heading_error(yaw: Tensor, reference_heading: Tensor) -> Tensor:
    """Signed heading error ``yaw - reference_heading`` wrapped into ``[-pi, pi)`` [rad]."""
    return wrap_angle(yaw - reference_heading)


def speed_error(speed: Tensor, reference_speed: Tensor) -> Tensor:
    """Signed speed-tracking error ``speed - reference_speed`` [m/s]."""
    return speed - reference_speed


def action_change(action: Tensor, previous_action: Tensor) -> Tensor:
    """Mean squared change of the action vector in one step, ``(..., A) -> (...)`` [1]."""
    return (action - previous_action).square().mean(dim=-1)


def action_smoothness(actions: Tensor) -> Tensor:
    """Action smoothness of a sequence: mean squared action change over time.

    Args:
        actions: ``(..., T, A)`` actions over T steps.

    Returns:
        ``(...)`` mean over the T - 1 changes of :func:`action_change` (lower is smoother).
    """
    return action_change(actions[..., 1:, :], actions[..., :-1, :]).mean(dim=-1)


def progress(
    s_prev: Tensor, s_now: Tensor, length: Tensor | float, closed: Tensor | bool
) -> Tensor:
    """Distance advanced along the reference in one step [m].

    On closed paths the difference is wrapped into ``[-length/2, length/2)`` so crossing the start
    line counts as progress; on open paths it is the plain difference.
    """
    diff = s_now - s_prev
    length = torch.as_tensor(length, dtype=diff.dtype, device=diff.device)
    wrapped = torch.remainder(diff + 0.5 * length, length) - 0.5 * length
    return torch.where(torch.as_tensor(closed, device=diff.device), wrapped, diff)


def completion(distance_travelled: Tensor, route_length: Tensor | float) -> Tensor:
    """Completed fraction of a route in ``[0, 1]`` from the distance progressed along it [m]."""
    route = torch.as_tensor(route_length, dtype=distance_travelled.dtype)
    return (distance_travelled / route.to(distance_travelled.device)).clamp(0.0, 1.0)


def corner_offset(lateral_offset: Tensor, curvature: Tensor) -> tuple[Tensor, Tensor]:
    """Signed offset towards the inside of the corner, and whether the step is cornering.

    Args:
        lateral_offset: ``(N,)`` signed Frenet ``d``, + left [m].
        curvature: ``(N,)`` reference curvature at the projection, + left (CCW) [1/m].

    Returns:
        ``(offset, cornering)``: ``offset (N,)`` is ``d * sign(curvature)`` [m] (+: inside, the
        car cuts the corner; -: wide), zero where ``cornering (N,)`` bool is false
        (``|curvature| <=`` :data:`CORNER_CURVATURE`).
    """
    cornering = curvature.abs() > CORNER_CURVATURE
    offset = torch.where(cornering, lateral_offset * torch.sign(curvature), 0.0)
    return offset, cornering


def off_track(
    lateral_offset: Tensor, width_left: Tensor, width_right: Tensor, margin: float = 0.0
) -> Tensor:
    """True where the car centre is beyond a road edge by more than ``margin`` [m]."""
    return (lateral_offset > width_left + margin) | (-lateral_offset > width_right + margin)


@dataclass
class EpisodeStats:
    """Per-car running sums over the current episode (all tensors ``(N,)`` on one device).

    Attributes:
        steps: number of steps taken.
        cte_sum: sum of cross-track errors [m].
        cte_max: maximum cross-track error [m].
        heading_abs_sum: sum of absolute heading errors [rad].
        speed_abs_sum: sum of absolute speed errors [m/s].
        smooth_sum: sum of per-step action changes [1].
        progress: distance progressed along the reference [m].
        off_track_steps: steps spent off the road.
        corner_steps: steps on a corner (reference ``|curvature| >`` :data:`CORNER_CURVATURE`).
        corner_offset_sum: sum over those steps of the offset towards the corner's inside [m].
    """

    steps: Tensor
    cte_sum: Tensor
    cte_max: Tensor
    heading_abs_sum: Tensor
    speed_abs_sum: Tensor
    smooth_sum: Tensor
    progress: Tensor
    off_track_steps: Tensor
    corner_steps: Tensor
    corner_offset_sum: Tensor

    @staticmethod
    def zeros(n: int, device: torch.device | str = "cpu", dtype=torch.float32) -> EpisodeStats:
        """Fresh statistics for ``n`` cars."""
        z = torch.zeros(n, device=device, dtype=dtype)
        return EpisodeStats(*(z.clone() for _ in fields(EpisodeStats)))

    def update(
        self,
        *,
        lateral_offset: Tensor,
        heading_err: Tensor,
        speed_err: Tensor,
        action_delta: Tensor,
        advanced: Tensor,
        is_off_track: Tensor,
        curvature: Tensor,
    ) -> None:
        """Add one step of every car (in place, no host synchronisation).

        ``curvature`` ``(N,)`` is the reference's at each car's projection [1/m] (it decides
        which steps count for ``corner_offset_mean``).
        """
        cte = cross_track_error(lateral_offset).to(self.cte_sum.dtype)
        self.steps += 1
        self.cte_sum += cte
        torch.maximum(self.cte_max, cte, out=self.cte_max)
        self.heading_abs_sum += heading_err.abs().to(self.cte_sum.dtype)
        self.speed_abs_sum += speed_err.abs().to(self.cte_sum.dtype)
        self.smooth_sum += action_delta.to(self.cte_sum.dtype)
        self.progress += advanced.to(self.cte_sum.dtype)
        self.off_track_steps += is_off_track.to(self.cte_sum.dtype)
        offset, cornering = corner_offset(lateral_offset, curvature)
        self.corner_offset_sum += offset.to(self.cte_sum.dtype)
        self.corner_steps += cornering.to(self.cte_sum.dtype)

    def reset(self, mask: Tensor) -> None:
        """Zero the statistics of the cars where ``mask`` ``(N,)`` is true (in place)."""
        keep = (~mask).to(self.cte_sum.dtype)
        for name in self.__dataclass_fields__:
            getattr(self, name).mul_(keep)

    def summary(self) -> dict[str, Tensor]:
        """Per-car episode metrics ``(N,)``: means over steps, maxima and totals.

        ``corner_offset_mean`` is the mean offset towards the inside over the cornering steps
        [m] (+: cuts corners, -: runs wide; 0 without a corner): a policy whose mean action
        is biased sits on one side of every corner, which ``cte_mean`` cannot tell from weaving.
        """
        steps = self.steps.clamp(min=1)
        return {
            "cte_mean": self.cte_sum / steps,
            "cte_max": self.cte_max.clone(),
            "heading_error_mean": self.heading_abs_sum / steps,
            "speed_error_mean": self.speed_abs_sum / steps,
            "action_smoothness": self.smooth_sum / steps,
            "progress": self.progress.clone(),
            "off_track_steps": self.off_track_steps.clone(),
            "steps": self.steps.clone(),
            "corner_offset_mean": self.corner_offset_sum / self.corner_steps.clamp(min=1),
        }
