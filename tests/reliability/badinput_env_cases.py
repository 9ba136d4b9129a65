"""Catalogue cases of the environments: constructors, ``step`` and ``reset`` of both envs.

``S3Distilled-v0`` cases use a small scenario pool (Putnam Park, two surface layouts; built once
per process). The ``S3BeamNG-v0`` constructor cases never connect; the action case drives the
in-process stand-in (see :mod:`badinput_sim_cases` for the connection failures).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from badinput_support import Case
from gymnasium.error import ResetNeeded

import gym_s3  # noqa: F401  (registers the env ids)
from gym_s3.errors import ActionError, ConfigError, TrackFormatError

#: keyword arguments of a small, quick S3Distilled-v0
SMALL: dict[str, Any] = {"tracks": ("putnam",), "layouts_per_track": 2}
#: cars of the batched cases
N = 4


def _batched(**kwargs: Any) -> Any:
    """A reset batched ``S3Distilled-v0`` of :data:`N` cars."""
    env = gym.make("S3Distilled-v0", num_envs=N, **{**SMALL, **kwargs})
    env.reset(seed=0)
    return env


def _single() -> Any:
    """A reset single-car ``S3Distilled-v0``."""
    env = gym.make("S3Distilled-v0", **SMALL)
    env.reset(seed=0)
    return env


def _vector() -> Any:
    """A reset ``gym.make_vec`` face of :data:`N` cars."""
    env = gym.make_vec("S3Distilled-v0", num_envs=N, vectorization_mode="vector_entry_point",
                       **SMALL)  # fmt: skip
    env.reset(seed=0)
    return env


def _nan_action() -> torch.Tensor:
    """An ``(N, 2)`` action whose car 2 has a NaN accelerator and car 3 an infinite steer."""
    action = torch.zeros(N, 2)
    action[2, 1] = float("nan")
    action[3, 0] = float("inf")
    return action


def _write_bad_track(work: Path) -> str:
    """A TUMFTM file whose third point is NaN; returns its track name ``file:<path>``."""
    path = work / "bad.csv"
    rows = ["# x_m,y_m,w_tr_right_m,w_tr_left_m", "0,0,4,4", "100,0,4,4", "nan,50,4,4", "0,50,4,4"]
    path.write_text("\n".join(rows) + "\n")
    return f"file:{path}"


def _beamng_nan_action(work: Path) -> None:
    """Send a NaN action to ``S3BeamNG-v0`` on the in-process stand-in."""
    from gym_s3.envs.beamng import S3BeamNGEnv

    env = S3BeamNGEnv(standin=True, socket_timeout=10.0)
    try:
        env.reset(seed=0)
        env.step(np.array([0.0, np.nan], dtype=np.float32))
    finally:
        env.close()


def _beamng(**kwargs: Any) -> None:
    """Construct ``S3BeamNG-v0`` (nothing connects before ``reset``)."""
    from gym_s3.envs.beamng import S3BeamNGEnv

    S3BeamNGEnv(**kwargs).close()


def _beamng_step(work: Path, *, reset_and_close: bool) -> None:
    """Step ``S3BeamNG-v0`` (on an own stand-in) that was never reset, or reset and closed."""
    from gym_s3.envs.beamng import S3BeamNGEnv

    env = S3BeamNGEnv(standin=True, socket_timeout=10.0)
    try:
        if reset_and_close:
            env.reset(seed=0)
            env.close()
        env.step(np.zeros(2, dtype=np.float32))
    finally:
        env.close()


def _beamng_huge_seed(work: Path) -> None:
    """Reset ``S3BeamNG-v0`` with a seed beyond 64 bits (nothing connects first)."""
    from gym_s3.envs.beamng import S3BeamNGEnv

    env = S3BeamNGEnv(standin=True, socket_timeout=10.0)
    try:
        env.reset(seed=2**70)
    finally:
        env.close()


#: what a seed beyond 63 bits must say
HUGE_SEED = r"seed 1180591620717411303424 is outside \[0, 2\*\*63 - 1\]"

CASES: tuple[Case, ...] = (
    Case("env-unknown-backend",
         lambda w: gym.make("S3Distilled-v0", backend="transformr", **SMALL),
         ConfigError, r"unknown dynamics backend 'transformr'", r"valid backends: bicycle.*dytr"),
    Case("env-unknown-kwarg",
         lambda w: gym.make("S3Distilled-v0", obs_mod="oracle", **SMALL),
         ConfigError, r"unknown S3Distilled-v0 argument.*obs_mod", r"valid arguments:.*obs_mode"),
    Case("env-bad-num-envs",
         lambda w: gym.make("S3Distilled-v0", num_envs=0, batched=True, **SMALL),
         ConfigError, r"num_envs must be .*got 0", r"positive integer"),
    Case("env-bad-device",
         lambda w: gym.make("S3Distilled-v0", device="gpu0", **SMALL),
         ConfigError, r"invalid or unavailable device 'gpu0'", r"pass device='cpu', or 'cuda'"),
    Case("env-device-unavailable",
         lambda w: gym.make("S3Distilled-v0", device="cuda:63", **SMALL),
         ConfigError, r"unavailable device 'cuda:63'", r"pass device='cpu'"),
    Case("env-unknown-track",
         lambda w: gym.make("S3Distilled-v0", tracks=("monza",)),
         ConfigError, r"unknown track 'monza'", r"valid names: putnam, procedural:<seed>"),
    Case("env-track-file-with-nan",
         lambda w: gym.make("S3Distilled-v0", tracks=(_write_bad_track(w),)),
         TrackFormatError, r"bad\.csv, line 4: column 'x_m' is 'nan'", r"replace NaN/inf"),
    Case("env-unknown-label",
         lambda w: gym.make("S3Distilled-v0", scenarios=("drifting",), **SMALL),
         ConfigError, r"unknown scenario label 'drifting'", r"valid labels: .*hard_braking"),
    Case("step-before-reset",
         lambda w: gym.make("S3Distilled-v0", num_envs=N, **SMALL).step(torch.zeros(N, 2)),
         ResetNeeded, r"step\(\) before", r"calling env\.reset\(\)"),
    Case("step-wrong-shape",
         lambda w: _batched().step(torch.zeros(N, 3)),
         ActionError, r"got \(4, 3\)",
         r"must have shape \(4, 2\) = \(num_envs, \[steer, accel\]\)"),
    Case("step-integer-dtype",
         lambda w: _batched().step(torch.zeros(N, 2, dtype=torch.int64)),
         ActionError, r"floating dtype.*got int64", r"cast it with \.float\(\)"),
    Case("step-nan-inf-batched",
         lambda w: _batched().step(_nan_action()),
         ActionError, r"car 2 is not finite.*2 car\(s\) with NaN/inf",
         r"check the policy output.*nonfinite_action='zero'"),
    Case("step-inf-single",
         lambda w: _single().step(np.array([np.inf, 0.0], dtype=np.float32)),
         ActionError, r"car 0 is not finite: \[inf, 0\.0\]", r"check the policy output"),
    Case("step-flat-wrong-size-single",
         lambda w: _single().step(np.zeros(3, dtype=np.float32)),
         ActionError, r"got \(3,\)", r"shape \(1, 2\) or \(2,\)"),
    Case("step-wrong-shape-vector",
         lambda w: _vector().step(np.zeros((N + 1, 2), dtype=np.float32)),
         ActionError, r"got \(5, 2\)", r"must have shape \(4, 2\)"),
    Case("reset-mask-int-dtype",
         lambda w: _batched().reset(options={"reset_mask": np.ones(N, dtype=np.int64)}),
         ConfigError, r"got int64 \(4,\)", r"reset_mask must be a bool array of shape \(4,\)"),
    Case("reset-mask-wrong-shape-vector",
         lambda w: _vector().reset(options={"reset_mask": np.ones(N - 1, dtype=bool)}),
         ConfigError, r"got bool \(3,\)", r"reset_mask must be a bool array of shape \(4,\)"),
    Case("reset-unknown-option",
         lambda w: _batched().reset(options={"mask": np.ones(N, dtype=bool)}),
         ConfigError, r"unknown reset options \['mask'\]", r"valid options: reset_mask, scenario"),
    Case("beamng-env-unknown-option",
         lambda w: _beamng(prot=25252),
         ConfigError, r"unknown S3BeamNG-v0 option.*'prot'", r"valid:.*'port'"),
    Case("beamng-env-unknown-surface",
         lambda w: _beamng(surface="lava"),
         ConfigError, r"unknown surface 'lava'", r"valid surfaces: asphalt"),
    Case("reset-seed-2-70", lambda w: _batched().reset(seed=2**70),
         ConfigError, HUGE_SEED, r"pass a smaller seed"),
    Case("reset-seed-2-70-single", lambda w: gym.make("S3Distilled-v0", **SMALL).reset(seed=2**70),
         ConfigError, HUGE_SEED, r"pass a smaller seed"),
    Case("beamng-env-reset-seed-2-70", _beamng_huge_seed,
         ConfigError, HUGE_SEED, r"pass a smaller seed"),
    Case("beamng-env-step-before-reset", lambda w: _beamng_step(w, reset_and_close=False),
         ResetNeeded, r"S3BeamNG-v0 is not reset yet", r"call reset\(\) before step\(\)"),
    Case("beamng-env-step-after-close", lambda w: _beamng_step(w, reset_and_close=True),
         ResetNeeded, r"S3BeamNG-v0 is closed", r"call reset\(\) before step\(\)",
         timeout_s=120.0),
    Case("beamng-env-nan-action", _beamng_nan_action,
         ActionError, r"contains NaN or inf", r"check the policy output", timeout_s=120.0),
)  # fmt: skip
