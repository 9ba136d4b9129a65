"""Rewards as named, weighted terms built from :mod:`gym_s3.metrics`.

``reward = sum_k weight_k * term_k``; every term is reported in the env's ``info`` so a user can see
what the policy is paid for. Units of the raw terms: progress [m], cross-track error [m], heading
error [rad], speed error and speed above the target [m/s], action change [1], squared throttle
command [1], precision
``exp(-(cte / precision_width)^2) * clamp(v / max(v_target, 1 m/s), 0, 1)`` [1]; the failure
penalty is paid once, on the step that terminates an episode by leaving the road, spinning out or
a non-finite state.

The linear cross-track penalty pays the same per centimetre at 2 m as at 2 cm, so it barely tells
a 15 cm lap from a 3 cm one; the precision bonus is a Gaussian kernel of the cross-track error
that pays most for the last centimetres (its slope peaks at ``precision_width / sqrt(2)``) and is
bounded, so it never makes a step worth less than failing. It is paid in proportion to the car's
speed as a share of the target speed (capped at 1): a car standing on the line earns none of it,
so stopping on an ice patch to collect it (what an ungated bonus taught policies) never pays.

The throttle penalty (``throttle * max(accel, 0)^2``, off by default) prices pedal the tyres cannot
use: on ice the car's acceleration is traction-limited at a few percent of throttle (the scripted
expert holds 0.05), so more only spins the driven wheels, which costs their lateral grip at corner
exits; without a price PPO has no reason to lift, since the extra pedal changes neither speed nor
progress. On grippy surfaces throttle buys acceleration and the penalty is small beside the speed
term. ``throttle_pace`` charges that penalty in full only from a pace (the car's speed as a share
of the target, as for the precision bonus) on: below it the charge falls linearly to nothing at
rest, ``clamp(pace / throttle_pace, 0, 1)``, so a car standing or crawling (a start, a recovery
after a stall) presses for free; at 0 (the default) every speed pays alike. (Trained from scratch
with full-ice laps, ``throttle_pace=1`` did not stall less than the unscaled penalty: README,
recipe table.)

The default weights make a step of reasonable tracking worth more than nothing (the ``alive``
bonus outweighs typical penalties), so ending an episode early by failing never pays: with
purely negative per-step rewards a policy learns to crash quickly to stop the penalties.
The same bonus also pays a car that stands still: 10 s standing before a tight corner on ice
earns about 60 in ``alive`` against 17 in speed and some 20 in cross-track penalties, far more
than the one-off failure penalty of a stall costs, so standing is never priced as the failure
it is. ``alive_pace`` pays the bonus in full only from that pace on, ``clamp(pace / alive_pace,
0, 1)``, as ``throttle_pace`` charges the pedal; at 0 (the default) every step is paid alike.
(Paying it at pace, ``alive_pace=1``, did not remove the stalls of two seeds trained from scratch,
and loosened their snow tracking: docs/experiments.md, recipe table.)
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

import torch
from torch import Tensor

from gym_s3.errors import ConfigError
from gym_s3.metrics import cross_track_error


@dataclass(frozen=True)
class RewardWeights:
    """Weights of the reward terms (all non-negative; penalties are subtracted).

    Attributes:
        progress: reward per metre advanced along the reference [1/m].
        cross_track: penalty per metre of cross-track error [1/m].
        heading: penalty per radian of heading error [1/rad].
        speed: penalty per m/s of speed-tracking error [s/m].
        overspeed: extra penalty per m/s above the target speed [s/m] (on top of ``speed``:
            arriving at a corner too fast, which on ice ends wide or stalled, costs more than
            arriving too slow).
        smoothness: penalty per unit of mean squared action change [1].
        throttle: penalty per unit of squared throttle command ``max(accel, 0)^2`` [1].
        throttle_pace: pace from which the throttle penalty is charged in full, in ``[0, 1]``;
            below it the penalty is scaled by ``pace / throttle_pace`` (0: no scaling) [1].
        failure: one-off penalty when an episode terminates by failure [1].
        alive: bonus per step survived [1].
        alive_pace: pace from which the alive bonus is paid in full, in ``[0, 1]``; below it the
            bonus is scaled by ``pace / alive_pace`` (0: no scaling) [1].
        precision: bonus per step for being on the line at speed,
            ``exp(-(cte / precision_width)^2) * clamp(v / max(v_target, 1 m/s), 0, 1)`` [1].
        precision_width: width of the precision kernel [m] (a scale, not a weight; > 0).
    """

    progress: float = 0.1
    cross_track: float = 0.2
    heading: float = 0.3
    speed: float = 0.03
    overspeed: float = 0.0
    smoothness: float = 0.2
    throttle: float = 0.0
    throttle_pace: float = 0.0
    failure: float = 10.0
    alive: float = 0.3
    alive_pace: float = 0.0
    precision: float = 0.0
    precision_width: float = 0.15

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if not (isinstance(value, int | float) and value >= 0.0):
                raise ConfigError(f"reward weight '{f.name}' must be a number >= 0, got {value!r}")
        if not self.precision_width > 0.0:
            raise ConfigError(f"precision_width must be > 0 [m], got {self.precision_width!r}")
        for name in ("throttle_pace", "alive_pace"):
            if not getattr(self, name) <= 1.0:
                raise ConfigError(f"{name} must be in [0, 1], got {getattr(self, name)!r}")

    @staticmethod
    def from_dict(values: dict[str, Any]) -> RewardWeights:
        """Build weights from a mapping; unknown names raise with the list of valid ones."""
        valid = {f.name for f in fields(RewardWeights)}
        unknown = sorted(set(values) - valid)
        if unknown:
            raise ConfigError(
                f"unknown reward term(s) {unknown}; valid terms: {', '.join(sorted(valid))}"
            )
        return RewardWeights(**values)

    def to_dict(self) -> dict[str, float]:
        """The weights as a plain dict (for checkpoints and logs)."""
        return asdict(self)


def _paced(full_pace: float, pace: Tensor) -> Tensor:
    """``(N,)`` scale ``clamp(pace / full_pace, 0, 1)`` of a term paid in full from ``full_pace``.

    ``full_pace = 0`` scales nothing (ones).
    """
    if full_pace == 0.0:
        return torch.ones_like(pace)
    return (pace / full_pace).clamp(max=1.0)


def compute_reward(
    weights: RewardWeights,
    *,
    advanced: Tensor,
    lateral_offset: Tensor,
    heading_err: Tensor,
    speed_err: Tensor,
    target_speed: Tensor,
    action_delta: Tensor,
    failed: Tensor,
    accel: Tensor,
) -> tuple[Tensor, dict[str, Tensor]]:
    """Reward of one step for every car.

    Args:
        weights: term weights.
        advanced: ``(N,)`` distance progressed along the reference this step [m].
        lateral_offset: ``(N,)`` signed cross-track error [m].
        heading_err: ``(N,)`` heading error [rad].
        speed_err: ``(N,)`` speed error ``v - v_target`` [m/s].
        target_speed: ``(N,)`` target speed ``v_target`` [m/s] (gates the precision bonus; a
            target under 1 m/s counts as 1 m/s).
        action_delta: ``(N,)`` mean squared action change [1].
        failed: ``(N,)`` bool, the episode terminated by failure this step.
        accel: ``(N,)`` accel command of this step in ``[-1, 1]`` (throttle where > 0).

    Returns:
        ``(reward, terms)``: reward ``(N,)`` and each weighted term ``(N,)`` by name (they sum to
        the reward).
    """
    cte = cross_track_error(lateral_offset)
    throttle = accel.clamp_min(0.0)
    pace = ((speed_err + target_speed) / target_speed.clamp_min(1.0)).clamp(0.0, 1.0)
    terms = {
        "progress": weights.progress * advanced,
        "cross_track": -weights.cross_track * cte,
        "precision": weights.precision * torch.exp(-((cte / weights.precision_width) ** 2)) * pace,
        "heading": -weights.heading * heading_err.abs(),
        "speed": -weights.speed * speed_err.abs(),
        "overspeed": -weights.overspeed * speed_err.clamp_min(0.0),
        "smoothness": -weights.smoothness * action_delta,
        "throttle": -weights.throttle * _paced(weights.throttle_pace, pace) * throttle**2,
        "failure": -weights.failure * failed.to(advanced.dtype),
        "alive": weights.alive * _paced(weights.alive_pace, pace),
    }
    reward = torch.stack(list(terms.values())).sum(dim=0)
    return reward, terms
