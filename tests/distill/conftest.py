"""Fixtures of the distillation tests: a tiny generated dataset and logs of a known model."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from gym_s3.data.dataset import DrivingDataset
from gym_s3.data.generate import generate_dataset, preset
from gym_s3.data.windows import NormStats
from gym_s3.dynamics import DynamicsBackend


@pytest.fixture(autouse=True)
def _one_thread():
    """Run single-threaded (small tensors; OpenMP hand-offs dominate on a shared CPU)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``s3 data generate``'s ``tiny`` preset with 24 sessions of 8 s (every surface), seed 0."""
    out = tmp_path_factory.mktemp("tiny") / "data"
    generate_dataset(out, preset("tiny", cars=24, episode_s=8.0), seed=0, preset_name="tiny")
    return out


@pytest.fixture(scope="session")
def tiny(tiny_dir: Path) -> DrivingDataset:
    """The tiny dataset, loaded (split by session)."""
    return DrivingDataset.load(tiny_dir)


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
    f, p = torch.stack(rows, 1), torch.stack(poses, 1)
    ks = torch.arange(history - 1, steps - horizon + 1)
    hist = ks[:, None] + torch.arange(-history + 1, 1)
    fut = ks[:, None] + torch.arange(horizon)
    flat = {
        "history": f[:, hist], "future_action": f[:, fut][..., 3:5],
        "future_mu": f[:, fut][..., 5:9], "target_vel": f[:, fut + 1][..., :3],
        "pose": p[:, ks[:, None] + torch.arange(horizon + 1)],
        "surface": (torch.arange(n) % 6)[:, None].expand(n, len(ks)),
        "labels": (torch.arange(n) % 3)[:, None].expand(n, len(ks)),
    }  # fmt: skip
    return {k: v.reshape(-1, *v.shape[2:]) for k, v in flat.items()}


def stats_of(windows: dict[str, torch.Tensor]) -> NormStats:
    """Normalisation statistics of synthetic windows (rows of the history, one-step dv)."""
    rows = windows["history"].reshape(-1, 9)
    dv = windows["target_vel"][:, 0] - windows["history"][:, -1, :3]
    vel = windows["target_vel"][:, 0]

    def std(x: torch.Tensor) -> torch.Tensor:
        return x.std(0).clamp(min=1e-3)

    return NormStats(rows.mean(0), std(rows), vel.mean(0), std(vel), dv.mean(0), std(dv), len(rows))
