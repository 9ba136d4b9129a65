"""Helpers of the distillation tests: logs of a known model, statistics of synthetic windows."""

from __future__ import annotations

import torch

from gym_s3.data.windows import NormStats
from gym_s3.dynamics import DynamicsBackend


def model_log(
    model: DynamicsBackend, n: int, steps: int, history: int, horizon: int, seed: int = 0
) -> dict[str, torch.Tensor]:
    """Windows (contract layout) of a rollout of ``model`` itself, with random smooth inputs.

    Row j holds the velocities before step j and the action/friction applied in step j, so the
    windows describe exactly what ``model`` did; surfaces and labels are set per car.
    """
    g = torch.Generator().manual_seed(seed)
    state = model.initial_state(
        torch.zeros(n, 3), 8.0 + 10.0 * torch.rand(n, generator=g), torch.ones(n, 4)
    )
    mu = (0.1 + 0.9 * torch.rand(n, 1, generator=g)).expand(n, 4)
    action = torch.zeros(n, 2)
    rows, poses = [], []
    with torch.no_grad():
        for _ in range(steps + 1):
            action = (0.8 * action + 0.2 * (2 * torch.rand(n, 2, generator=g) - 1)).clamp(-1, 1)
            rows.append(torch.cat([state.vel, action, mu], -1))
            poses.append(state.pose)
            state = model.step(state, action, mu)
    flat = car_windows(torch.stack(rows, 1), torch.stack(poses, 1), history, horizon)
    count = flat["history"].shape[1]
    flat["surface"] = (torch.arange(n) % 6)[:, None].expand(n, count)
    flat["labels"] = (torch.arange(n) % 3)[:, None].expand(n, count)
    return {k: v.reshape(-1, *v.shape[2:]) for k, v in flat.items()}


def car_windows(
    rows: torch.Tensor, poses: torch.Tensor, history: int, horizon: int
) -> dict[str, torch.Tensor]:
    """Every window (contract layout, per car) of logged rows.

    Args:
        rows: ``(N, T, 9)`` history features of T rows per car (velocities before step j, the
            action and friction of step j).
        poses: ``(N, T, 3)`` ``[x, y, yaw]`` of the same rows.
        history: history rows H.
        horizon: rollout rows K.

    Returns:
        ``history (N, W, H, 9)``, ``future_action (N, W, K, 2)``, ``future_mu (N, W, K, 4)``,
        ``target_vel (N, W, K, 3)`` and ``pose (N, W, K+1, 3)`` for the W anchors of each car.
    """
    ks = torch.arange(history - 1, rows.shape[1] - horizon)
    hist = ks[:, None] + torch.arange(-history + 1, 1)
    fut = ks[:, None] + torch.arange(horizon)
    return {
        "history": rows[:, hist], "future_action": rows[:, fut][..., 3:5],
        "future_mu": rows[:, fut][..., 5:9], "target_vel": rows[:, fut + 1][..., :3],
        "pose": poses[:, ks[:, None] + torch.arange(horizon + 1)],
    }  # fmt: skip


def stats_of(windows: dict[str, torch.Tensor]) -> NormStats:
    """Normalisation statistics of synthetic windows (rows of the history, one-step dv)."""
    rows = windows["history"].reshape(-1, 9)
    dv = windows["target_vel"][:, 0] - windows["history"][:, -1, :3]
    vel = windows["target_vel"][:, 0]

    def std(x: torch.Tensor) -> torch.Tensor:
        return x.std(0).clamp(min=1e-3)

    return NormStats(rows.mean(0), std(rows), vel.mean(0), std(vel), dv.mean(0), std(dv), len(rows))
