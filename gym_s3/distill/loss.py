"""The training objective: open-loop rollouts through ``step``, errors in normalised units.

From each window the backend starts in the state the history implies
(:func:`~gym_s3.dynamics.priming.state_from_window`) and is stepped K times with the recorded
actions and wheel friction, feeding its own predictions back (K = 1 is the one-step loss). The
loss is the mean squared velocity error divided by the standard deviation of the one-step
velocity change, so at K = 1 it is exactly the MSE of the normalised ``dv`` targets.
"""

from __future__ import annotations

import torch
from torch import Tensor

from gym_s3.dynamics.base import BackendState, DynamicsBackend
from gym_s3.dynamics.priming import state_from_window


def rollout(
    backend: DynamicsBackend, batch: dict[str, Tensor], horizon: int
) -> tuple[Tensor, Tensor, Tensor]:
    """Open-loop rollout of ``horizon`` steps from each window.

    Args:
        backend: the model.
        batch: window tensors (``history``, ``future_action``, ``future_mu``, ``pose``).
        horizon: steps K (at most the windows' horizon).

    Returns:
        ``vel (B, K, 3)``, ``pose (B, K, 3)`` after each step and ``fault (B, K)`` flags.
    """
    state: BackendState = state_from_window(backend, batch["history"], batch["pose"][:, 0])
    vels, poses, faults = [], [], []
    for j in range(horizon):
        state = backend.step(state, batch["future_action"][:, j], batch["future_mu"][:, j])
        vels.append(state.vel)
        poses.append(state.pose)
        faults.append(state.fault)
    return torch.stack(vels, 1), torch.stack(poses, 1), torch.stack(faults, 1)


def rollout_loss(
    backend: DynamicsBackend, batch: dict[str, Tensor], horizon: int, delta_std: Tensor
) -> Tensor:
    """Mean squared velocity error over a K-step rollout, in units of ``delta_std``.

    Args:
        backend: the model.
        batch: window tensors with ``target_vel (B, >=K, 3)``.
        horizon: rollout steps K.
        delta_std: ``(3,)`` standard deviation of the one-step velocity change.
    """
    vel, _, _ = rollout(backend, batch, horizon)
    err = (vel - batch["target_vel"][:, :horizon]) / delta_std.to(vel.dtype)
    return err.square().mean()
