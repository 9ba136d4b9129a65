"""Determinism on the CPU (issue 11): the same seed gives bitwise-identical results.

Covered: ``S3Distilled-v0`` through all three faces and every shipped backend (rollouts that
cross autoresets, on layouts with ice patches), ``S3BeamNG-v0`` on the open stand-in (two separate
servers), ``s3 data generate --preset tiny`` (content hash and, with the clock pinned, the bytes
of every episode file) and the reference vehicle simulator. Each test also checks that another
seed gives a different result, so a generator that ignored its seed would fail. Where GPU results
may differ is documented in ``docs/reliability.md``.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from badinput_support import run_cli

import gym_s3  # noqa: F401  (registers the env ids)
from gym_s3.envs.distilled import S3DistilledBatchEnv
from gym_s3.task import TaskConfig
from gym_s3.tracks.layouts import LayoutConfig, PatchConfig

pytestmark = pytest.mark.timeout(300)
BACKENDS = ("bicycle", "ddm", "trans", "dytr")
#: a small pool with ice patches on mixed surfaces; 25-step episodes so rollouts cross resets
ENV_KWARGS: dict[str, Any] = {
    "tracks": ("putnam", "town:0"),
    "layouts_per_track": 3,
    "layout": LayoutConfig(base=("asphalt", "snow", "gravel"), patches=PatchConfig(count=(1, 3))),
    "task": TaskConfig(max_episode_steps=25),
}
N, STEPS = 6, 60


def _actions(seed: int, steps: int, n: int) -> torch.Tensor:
    """``(steps, n, 2)`` reproducible random actions in [-1, 1]."""
    gen = torch.Generator().manual_seed(seed)
    return torch.rand(steps, n, 2, generator=gen) * 2 - 1


def _batched_rollout(backend: str, seed: int) -> list[torch.Tensor]:
    """Observations, rewards, flags and final observations of a batched-face rollout."""
    env = S3DistilledBatchEnv(num_envs=N, backend=backend, **ENV_KWARGS)
    obs, info = env.reset(seed=seed)
    out = [obs, info["scenario"]]
    for action in _actions(seed, STEPS, N):
        obs, reward, term, trunc, info = env.step(action)
        out += [obs, reward, term, trunc, info["final_obs"], info["reward/progress"]]
    assert bool(torch.cat([t for t in out if t.dtype == torch.bool]).any()), "no episode ended"
    return out


def _single_rollout(backend: str, seed: int) -> list[np.ndarray]:
    """A single-car rollout (``gym.make``), resetting itself when an episode ends."""
    env = gym.make("S3Distilled-v0", backend=backend, **ENV_KWARGS)
    obs, _ = env.reset(seed=seed)
    out = [obs]
    for action in _actions(seed, STEPS, 1)[:, 0].numpy():
        obs, reward, term, trunc, _ = env.step(action)
        out += [obs, np.float32(reward)]
        if term or trunc:
            obs, _ = env.reset()
            out.append(obs)
    return out


def _vector_rollout(backend: str, seed: int) -> list[np.ndarray]:
    """A ``gym.make_vec`` rollout (DISABLED autoreset: ``reset_mask`` of the finished cars)."""
    env = gym.make_vec("S3Distilled-v0", num_envs=N, vectorization_mode="vector_entry_point",
                       backend=backend, autoreset_mode="disabled", **ENV_KWARGS)  # fmt: skip
    obs, _ = env.reset(seed=seed)
    out = [obs]
    for action in _actions(seed, STEPS, N).numpy():
        obs, reward, term, trunc, _ = env.step(action)
        out += [obs, reward]
        done = term | trunc
        if done.any():
            obs, _ = env.reset(options={"reset_mask": done})
            out.append(obs)
    return out


def _same(a: list[Any], b: list[Any]) -> bool:
    """Whether two rollouts are bitwise identical (same length, every array equal)."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        x, y = torch.as_tensor(np.asarray(x)), torch.as_tensor(np.asarray(y))
        if x.shape != y.shape or x.dtype != y.dtype or not torch.equal(x, y):
            return False
    return True


def _check_repeats(rollout: Any, backend: str) -> None:
    """Seed 7 twice gives the same rollout bit for bit; seed 8 gives another."""
    first, again, other = rollout(backend, 7), rollout(backend, 7), rollout(backend, 8)
    assert _same(first, again), f"{rollout.__name__} of {backend} is not repeatable"
    assert not _same(first, other), f"{rollout.__name__} of {backend} ignores the seed"


@pytest.mark.parametrize("backend", BACKENDS)
def test_batched_face_repeats_bitwise(backend: str) -> None:
    """The batched face of each backend repeats its rollout bit for bit; another seed differs."""
    _check_repeats(_batched_rollout, backend)


@pytest.mark.parametrize("rollout", [_single_rollout, _vector_rollout], ids=["single", "vector"])
def test_single_and_vector_faces_repeat_bitwise(rollout: Any) -> None:
    """The single-car and ``make_vec`` faces (``dytr``) repeat bit for bit; another seed differs."""
    _check_repeats(rollout, "dytr")


@pytest.mark.slow
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("rollout", [_single_rollout, _vector_rollout], ids=["single", "vector"])
def test_every_face_of_every_backend_repeats_bitwise(rollout: Any, backend: str) -> None:
    """The single-car and ``make_vec`` faces of every backend repeat bit for bit."""
    _check_repeats(rollout, backend)


def test_reseeding_a_used_env_repeats_its_rollout() -> None:
    """``reset(seed=s)`` on an env that already ran gives the rollout of a fresh env."""
    env = S3DistilledBatchEnv(num_envs=N, backend="trans", **ENV_KWARGS)
    runs = []
    for _ in range(2):
        obs, _ = env.reset(seed=3)
        seq = [obs]
        for action in _actions(3, STEPS, N):
            seq.append(env.step(action)[0])
        runs.append(torch.stack(seq))
    assert torch.equal(runs[0], runs[1])


def _beamng_env() -> Any:
    """``S3BeamNG-v0`` on its own in-process stand-in, two ice patches, randomised starts."""
    pytest.importorskip("beamngpy")
    from gym_s3.envs.beamng import BeamNGEnvConfig, S3BeamNGEnv

    task = TaskConfig(max_episode_steps=400, start_lateral_m=1.0, start_heading_rad=0.05,
                      start_speed_fraction=(0.3, 0.6))  # fmt: skip
    return S3BeamNGEnv(config=BeamNGEnvConfig(task=task), standin=True, ice_patches=2)


def _beamng_episode(env: Any, seed: int) -> np.ndarray:
    """``(21, F + 1)`` observations and rewards of a 20-step episode with seeded actions."""
    obs, _ = env.reset(seed=seed)
    rows = [np.append(obs, 0.0)]
    for action in _actions(seed, 20, 1)[:, 0].numpy():
        obs, reward, *_ = env.step(action)
        rows.append(np.append(obs, reward))
    return np.stack(rows)


def test_beamng_standin_episode_repeats_bitwise() -> None:
    """Two stand-in servers give the same episode bit for bit; another seed changes it."""
    first_env, second_env = _beamng_env(), _beamng_env()
    try:
        first = _beamng_episode(first_env, 5)
        again, other = _beamng_episode(second_env, 5), _beamng_episode(second_env, 6)
    finally:
        first_env.close()
        second_env.close()
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, other)


def _generate(out: Path, seed: int) -> dict[str, Any]:
    """``s3 data generate --preset tiny`` into ``out``; returns the manifest."""
    run_cli(["data", "generate", "--out", str(out), "--preset", "tiny", "--seed", str(seed),
             "--no-progress"])  # fmt: skip
    return json.loads((out / "manifest.json").read_text())


def _episode_bytes(folder: Path) -> dict[str, bytes]:
    """Every episode file of a dataset folder, by name."""
    return {p.name: p.read_bytes() for p in sorted(folder.glob("*.parquet"))}


class _PinnedClock(datetime):
    """``datetime`` whose ``now`` is a fixed instant (the creation time written into logs)."""

    @classmethod
    def now(cls, tz: Any = None) -> datetime:
        return datetime(2026, 1, 1, tzinfo=tz or timezone.utc)


@pytest.mark.slow  # ~15 s; its sibling: test_data_generate.py::test_same_seed_same_content
def test_data_generate_repeats_bitwise(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Same seed: same manifest entries and content hash, and byte-identical episode files.

    The files record their creation time, the only field that may differ between runs; the test
    pins the clock. ``tests/data/test_data_generate.py`` checks that another seed differs.
    """
    monkeypatch.setattr("gym_s3.data.schema.datetime", _PinnedClock)
    first, again = _generate(tmp_path / "a", 0), _generate(tmp_path / "b", 0)
    assert first["content_hash"] == again["content_hash"]
    assert first["files"] == again["files"]  # names, digests, rows, tracks of every episode
    files = _episode_bytes(tmp_path / "a")
    assert len(files) == len(first["files"]) and files == _episode_bytes(tmp_path / "b")


@pytest.mark.slow
def test_data_generate_seed_changes_every_episode(tmp_path: Path) -> None:
    """Another seed gives another content hash and a different digest for every episode."""
    first, other = _generate(tmp_path / "a", 0), _generate(tmp_path / "b", 1)
    assert first["content_hash"] != other["content_hash"]
    digests = {e["digest"] for e in first["files"]}
    assert digests.isdisjoint(e["digest"] for e in other["files"])


def _vehicle_rollout(seed: int) -> dict[str, torch.Tensor]:
    """The final state of 32 random cars after 10 random control steps (reference simulator)."""
    from soak_support import soak_vehicle_states

    return soak_vehicle_states(32, 10, seed=seed)


def test_vehicle_simulator_repeats_bitwise() -> None:
    """Same seed: the same final vehicle states bit for bit; another seed: different ones."""
    first, again, other = _vehicle_rollout(4), _vehicle_rollout(4), _vehicle_rollout(5)
    assert first.keys() == again.keys()
    assert all(torch.equal(first[k], again[k]) for k in first)
    assert not torch.equal(first["x"], other["x"])
