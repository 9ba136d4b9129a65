"""Action validation of every ``S3Distilled-v0`` face, in one place.

Rules (also in the env docstrings):

* shape ``(N, 2)`` (``(2,)`` is accepted for the single-car face), else
  :class:`~gym_s3.errors.ActionError` naming the expected and received shape;
* a floating dtype (float16/32/64, bfloat16), else :class:`~gym_s3.errors.ActionError`; integer
  or boolean actions are refused rather than silently cast;
* non-finite entries: with ``nonfinite="raise"`` (default) an :class:`ActionError` names the
  first bad car and its values; with ``nonfinite="zero"`` they are replaced by 0 inside the step
  and the car is flagged in ``info["action_nonfinite"]`` (no host synchronisation);
* values outside ``[-1, 1]`` are clipped (inside the step, :func:`sanitize_action`).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from gym_s3.errors import ActionError
from gym_s3.spec import ACTION_SIZE


def validate_action(
    action: Tensor | np.ndarray | list | tuple,
    num_envs: int,
    *,
    device: torch.device,
    dtype: torch.dtype,
    nonfinite: str = "raise",
    allow_flat: bool = False,
) -> Tensor:
    """Check an action batch and return it as a ``(N, 2)`` tensor on ``device`` in ``dtype``.

    Args:
        action: ``(N, 2)`` tensor or array (``(2,)`` allowed when ``allow_flat`` and ``N == 1``).
        num_envs: N.
        device: env device (CPU arrays are moved there).
        dtype: simulation dtype.
        nonfinite: ``"raise"`` or ``"zero"`` (see the module docstring).
        allow_flat: accept ``(2,)`` for a single car.

    Raises:
        ActionError: wrong type, shape or dtype, or non-finite values with ``nonfinite="raise"``.
    """
    if isinstance(action, list | tuple):
        action = np.asarray(action)
    if isinstance(action, np.ndarray):
        if not np.issubdtype(action.dtype, np.floating):
            raise ActionError(_dtype_message(str(action.dtype)))
        tensor = torch.from_numpy(np.ascontiguousarray(action))
    elif isinstance(action, Tensor):
        if not action.is_floating_point():
            raise ActionError(_dtype_message(str(action.dtype).removeprefix("torch.")))
        tensor = action
    else:
        raise ActionError(
            f"action must be a torch tensor or numpy array of shape ({num_envs}, {ACTION_SIZE}), "
            f"got {type(action).__name__}"
        )
    if allow_flat and num_envs == 1 and tuple(tensor.shape) == (ACTION_SIZE,):
        tensor = tensor[None, :]
    if tuple(tensor.shape) != (num_envs, ACTION_SIZE):
        flat = f" or ({ACTION_SIZE},)" if allow_flat and num_envs == 1 else ""
        raise ActionError(
            f"action must have shape ({num_envs}, {ACTION_SIZE}){flat} = (num_envs, [steer, "
            f"accel]), got {tuple(tensor.shape)}"
        )
    tensor = tensor.to(device=device, dtype=dtype)
    if nonfinite == "raise" and not bool(torch.isfinite(tensor).all()):
        bad = (~torch.isfinite(tensor).all(dim=1)).nonzero()[:, 0]
        first = int(bad[0])
        raise ActionError(
            f"action of car {first} is not finite: {tensor[first].tolist()} ({len(bad)} car(s) "
            "with NaN/inf actions); check the policy output, or construct the env with "
            "nonfinite_action='zero' to replace them by 0 and flag them in info"
        )
    return tensor


def sanitize_action(action: Tensor) -> tuple[Tensor, Tensor]:
    """Replace non-finite entries by 0 and clip to ``[-1, 1]`` (sync-free, compilable).

    Args:
        action: ``(N, 2)`` validated action.

    Returns:
        ``(clean (N, 2), nonfinite (N,) bool)``.
    """
    finite = torch.isfinite(action)
    clean = torch.where(finite, action, torch.zeros_like(action)).clamp(-1.0, 1.0)
    return clean, ~finite.all(dim=-1)


def _dtype_message(got: str) -> str:
    """Error text for a non-floating action dtype."""
    return (
        f"action must have a floating dtype (float32 recommended), got {got}; "
        "cast it with .float() / .astype(np.float32)"
    )
