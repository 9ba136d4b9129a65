"""Left-right mirror images of dataset windows: the car's symmetry as data augmentation.

A car is left-right symmetric: driven with the opposite steering on the mirror image of its road
(the friction under its left wheels swapped with its right), it drives the mirror image of its
path. A learned model has no such prior, and one trained on finite data can carry a side bias
of its own; training on windows and their mirror images removes what the data cannot explain.
(Round 41 tried it on a `trans` seed that drifted 4.9 m sideways in 10 s of a standing start on
ice with the wheel nearly straight: the mirrored seeds drifted 1.0-2.8 m, both ways, so that
drift was the open loop compounding small heading errors, and the option changed nothing
measurable there; docs/experiments.md.)

The mirror image of a window (layout of :mod:`gym_s3.data.windows`, batch dimension B first):

* ``history`` ``(B, H, 9)``: ``v_lat``, ``yaw_rate`` and ``steer`` change sign, the friction
  under FL and FR swap, and under RL and RR;
* ``future_action`` ``(B, K, 2)``: the steering changes sign;
* ``future_mu`` ``(B, K, 4)``: FL <-> FR, RL <-> RR;
* ``target_vel`` ``(B, K, 3)``: ``v_lat`` and ``yaw_rate`` change sign;
* ``pose`` ``(B, K+1, 3)``: reflected across the line through the anchor row's position along its
  heading (the anchor pose itself is unchanged; later positions move to the other side of that
  line and their headings turn the other way, ``yaw' = 2 yaw_0 - yaw``, left unwrapped like the
  dataset's own yaw);
* everything else (``labels``, ``surface``, ``session``, ``row``) is unchanged.

Speeds, pedals and the longitudinal motion are unchanged, so the image of a window is a window
the same car could have driven. :func:`mirror_windows` is its own inverse. The normalisation
statistics of a mirrored training run are made symmetric too (:func:`symmetric_stats`), so a
model's zero output carries no sideways offset of the unmirrored data.

The symmetry is the car's: it holds for the stand-in's sedan (tested against its vehicle model)
and for any car built the same on both sides. Data of a car that is not (a one-sided load, a
steering offset) must not be mirrored.
"""

from __future__ import annotations

import torch
from torch import Tensor

from gym_s3.data.windows import ACTION_FEATURES, MU_FEATURES, TARGET_FEATURES, NormStats
from gym_s3.dynamics.base import HISTORY_FEATURES

__all__ = ["mirror_some", "mirror_windows", "symmetric_stats"]

#: history features that change sign in the mirror image (lateral velocity, yaw rate, steering)
_ODD_FEATURES = ("v_lat", "yaw_rate", "steer")
#: the wheels' order in the mirror image: FL, FR, RL, RR -> FR, FL, RR, RL
_MIRRORED_WHEELS = (1, 0, 3, 2)


def _sign(names: tuple[str, ...]) -> Tensor:
    """``(F,)`` +1 for features kept, -1 for those that change sign."""
    return torch.tensor([-1.0 if n in _ODD_FEATURES else 1.0 for n in names])


_HISTORY_SIGN = _sign(HISTORY_FEATURES)
_TARGET_SIGN = _sign(TARGET_FEATURES)
#: each history feature's column in the mirror image (the wheels' friction swapped side to side)
_HISTORY_ORDER = torch.tensor(
    [
        HISTORY_FEATURES.index(MU_FEATURES[_MIRRORED_WHEELS[MU_FEATURES.index(n)]])
        if n in MU_FEATURES
        else i
        for i, n in enumerate(HISTORY_FEATURES)
    ]
)
_STEER = ACTION_FEATURES.index("steer")


def _reflect_pose(pose: Tensor) -> Tensor:
    """``(B, K+1, 3)`` poses ``[x, y, yaw]`` [m, m, rad] reflected across the anchor's heading line.

    The anchor row's pose (index 0) is unchanged; yaw is not wrapped (continuous, as stored).
    """
    x0, y0, yaw0 = pose[:, :1, 0], pose[:, :1, 1], pose[:, :1, 2]
    c, s = torch.cos(yaw0), torch.sin(yaw0)
    dx, dy = pose[..., 0] - x0, pose[..., 1] - y0
    along, across = dx * c + dy * s, -dx * s + dy * c
    x = x0 + along * c + across * s
    y = y0 + along * s - across * c
    return torch.stack([x, y, 2 * yaw0 - pose[..., 2]], dim=-1)


def mirror_windows(batch: dict[str, Tensor]) -> dict[str, Tensor]:
    """The left-right mirror image of every window of ``batch`` (see the module docstring)."""
    out = dict(batch)
    if "history" in batch:
        h = batch["history"]
        out["history"] = h[..., _HISTORY_ORDER.to(h.device)] * _HISTORY_SIGN.to(h)
    if "future_action" in batch:
        a = batch["future_action"].clone()
        a[..., _STEER] = -a[..., _STEER]
        out["future_action"] = a
    if "future_mu" in batch:
        out["future_mu"] = batch["future_mu"][..., list(_MIRRORED_WHEELS)]
    if "target_vel" in batch:
        out["target_vel"] = batch["target_vel"] * _TARGET_SIGN.to(batch["target_vel"])
    if "pose" in batch:
        out["pose"] = _reflect_pose(batch["pose"])
    return out


def mirror_some(batch: dict[str, Tensor], generator: torch.Generator) -> dict[str, Tensor]:
    """``batch`` with each window replaced by its mirror image with probability 1/2.

    Args:
        batch: window tensors, batch dimension B first.
        generator: CPU generator of the draws (the trainer's shuffling generator, so a run
            stays deterministic and resumable from its seed).
    """
    first = next(iter(batch.values()))
    flip = torch.rand(first.shape[0], generator=generator) < 0.5
    mirrored = mirror_windows(batch)
    out = {}
    for key, value in batch.items():
        if mirrored[key] is value:  # labels, surface, ...: the same in the image
            out[key] = value
            continue
        mask = flip.to(value.device).view(-1, *([1] * (value.ndim - 1)))
        out[key] = torch.where(mask, mirrored[key], value)
    return out


def _symmetric(mean: Tensor, std: Tensor, sign: Tensor, order: Tensor) -> tuple[Tensor, Tensor]:
    """Mean and std of a feature vector pooled with its mirror image (``x' = sign * x[order]``)."""
    image_mean = mean[order] * sign
    image_std = std[order]
    pooled = (mean + image_mean) / 2
    var = (std.square() + image_std.square()) / 2 + ((mean - image_mean) / 2).square()
    return pooled, var.sqrt()


def symmetric_stats(stats: NormStats) -> NormStats:
    """Normalisation statistics of the data pooled with its mirror image.

    The odd features' means (lateral velocity, yaw rate, steering, and their changes) become 0
    and their spread takes up the mean; the left and right wheels' friction share one mean and
    spread. These are the statistics a mirrored training run sees in expectation.
    """
    identity = torch.arange(len(TARGET_FEATURES))
    hm, hs = _symmetric(stats.history_mean, stats.history_std, _HISTORY_SIGN, _HISTORY_ORDER)
    tm, ts = _symmetric(stats.target_mean, stats.target_std, _TARGET_SIGN, identity)
    dm, ds = _symmetric(stats.delta_mean, stats.delta_std, _TARGET_SIGN, identity)
    return NormStats(hm, hs, tm, ts, dm, ds, stats.count)
