"""Driver controls of the reference vehicle and the mapping from the project's action layout.

Controls are ``(N, 3)`` = [steer, throttle, brake] as BeamNG takes them: ``steer`` in [-1, 1] with
**+1 = full right** (racing-wheel convention), throttle and brake in [0, 1]. The road-wheel angle
target is ``-steer * max_steer_rad`` (+ = left, CCW).
"""

from __future__ import annotations

import torch
from torch import Tensor

from gym_s3.errors import ActionError


def controls_from_action(action: Tensor) -> Tensor:
    """Map the policy action layout to vehicle controls.

    Args:
        action: ``(N, 2)`` = [steer in [-1, 1] (+1 = right), accel in [-1, 1] (> 0 throttle,
            < 0 brake)], as defined in :mod:`gym_s3.spec`.

    Returns:
        ``(N, 3)`` = [steer, throttle = max(accel, 0), brake = max(-accel, 0)].
    """
    if action.ndim != 2 or action.shape[-1] != 2:
        raise ActionError(
            f"action must have shape (N, 2) = [steer, accel], got {tuple(action.shape)}"
        )
    accel = action[:, 1]
    return torch.stack((action[:, 0], accel.clamp_min(0.0), (-accel).clamp_min(0.0)), dim=-1)


def check_controls(controls: Tensor, n: int, *, check_finite: bool) -> None:
    """Raise :class:`ActionError` unless ``controls`` is a floating ``(n, 3)`` tensor.

    Args:
        controls: candidate ``(N, 3)`` controls [steer, throttle, brake].
        n: number of cars in the state being stepped.
        check_finite: also reject NaN/inf (one host synchronisation).
    """
    if not isinstance(controls, Tensor):
        raise ActionError(
            f"controls must be a torch.Tensor of shape ({n}, 3), got {type(controls).__name__}"
        )
    if controls.ndim != 2 or controls.shape != (n, 3):
        raise ActionError(
            f"controls must have shape (N, 3) = [steer, throttle, brake] with N = {n}, "
            f"got {tuple(controls.shape)}"
        )
    if not controls.dtype.is_floating_point:
        raise ActionError(f"controls must be a floating tensor, got dtype {controls.dtype}")
    if check_finite and not bool(torch.isfinite(controls).all()):
        bad = (~torch.isfinite(controls)).any(-1).nonzero().flatten().tolist()
        raise ActionError(
            f"controls contain NaN or inf for cars {bad[:10]}"
            f"{' ...' if len(bad) > 10 else ''}; pass finite [steer, throttle, brake]"
        )
