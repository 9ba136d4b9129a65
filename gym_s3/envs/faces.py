"""Pieces shared by the faces of ``S3Distilled-v0``: kwargs split, autoreset mode, info masks.

A *face* is one of the API shapes in which the one batched core
(:class:`~gym_s3.envs.core.DistilledCore`) is offered: the batched ``gym.Env`` of
``gym.make("S3Distilled-v0", num_envs=N)`` (:mod:`gym_s3.envs.distilled`), the gymnasium
``VectorEnv`` of ``gym.make_vec`` (:mod:`gym_s3.envs.vector`) and the TorchRL ``EnvBase``
(:mod:`gym_s3.adapters.torchrl`). Faces only convert types and apply their autoreset convention.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from gymnasium.vector import AutoresetMode
from torch import Tensor

from gym_s3.envs.config import DistilledConfig
from gym_s3.errors import ConfigError
from gym_s3.spec import CONTROL_DT_S

ENV_ID = "S3Distilled-v0"
RENDER_FPS = round(1.0 / CONTROL_DT_S)
RENDER_MODES = ["rgb_array"]


def make_config(config: DistilledConfig | None, kwargs: dict[str, Any]) -> DistilledConfig:
    """The env config from an optional base config and ``gym.make`` keyword arguments."""
    if config is not None and not isinstance(config, DistilledConfig):
        raise ConfigError(f"config must be a DistilledConfig, got {type(config).__name__}")
    return DistilledConfig.from_kwargs(config, **kwargs)


def view_title(config: DistilledConfig) -> str:
    """First HUD line of the env's frames: ``"S3Distilled-v0 / dytr"``, and an ensemble's size."""
    k = config.ensemble_size
    return f"{ENV_ID} / {config.backend_name}" + (f" (ensemble of {k} models)" if k > 1 else "")


def parse_autoreset(mode: AutoresetMode | str, allowed: Sequence[AutoresetMode]) -> AutoresetMode:
    """An :class:`AutoresetMode` from an enum or its name (``"same_step"``, ``"disabled"``)."""
    if isinstance(mode, str):
        lookup = {m.name.lower(): m for m in AutoresetMode}
        lookup.update({str(m.value).lower(): m for m in AutoresetMode})
        mode = lookup.get(mode.lower(), mode)  # type: ignore[assignment]
    if mode not in allowed:
        names = ", ".join(m.name for m in allowed)
        raise ConfigError(
            f"autoreset_mode must be one of {names}, got {mode!r} (NEXT_STEP is not supported: "
            "it wastes a step per episode and TorchRL refuses it)"
        )
    return mode


def check_render_mode(render_mode: str | None) -> str | None:
    """Validate ``render_mode`` (``None`` or ``"rgb_array"``)."""
    if render_mode is not None and render_mode not in RENDER_MODES:
        raise ConfigError(f"render_mode must be None or one of {RENDER_MODES}, got {render_mode!r}")
    return render_mode


def check_render_envs(render_envs: Sequence[int] | int, num_envs: int) -> tuple[int, ...]:
    """Indices of the cars drawn by ``render()``; each must lie in ``[0, num_envs)``."""
    idx = (render_envs,) if isinstance(render_envs, int) else tuple(int(i) for i in render_envs)
    if not idx or any(not 0 <= i < num_envs for i in idx):
        raise ConfigError(
            f"render_envs must be a non-empty list of indices in [0, {num_envs}), got {render_envs}"
        )
    return idx


def check_reset_options(options: dict[str, Any] | None) -> dict[str, Any]:
    """Validate ``reset(options=...)`` of the batched faces (``reset_mask``, ``scenario``)."""
    options = dict(options or {})
    unknown = sorted(set(options) - {"reset_mask", "scenario"})
    if unknown:
        raise ConfigError(f"unknown reset options {unknown}; valid options: reset_mask, scenario")
    return options


def is_episode_key(key: str) -> bool:
    """Whether an info key is an end-of-episode summary (valid only where done)."""
    return key.startswith("episode/")


def torch_infos(info: dict[str, Tensor], done: Tensor) -> dict[str, Tensor]:
    """Gymnasium-style vector infos as tensors: every key with its ``_key`` validity mask.

    Per-step keys are valid for every car; ``episode/*`` summaries only where ``done``.
    """
    every = torch.ones_like(done)
    out: dict[str, Tensor] = {}
    for key, value in info.items():
        out[key] = value
        out[f"_{key}"] = done if is_episode_key(key) else every
    return out


def numpy_infos(info: dict[str, Tensor], done: np.ndarray) -> dict[str, Any]:
    """:func:`torch_infos` as fresh numpy arrays (one host copy per key)."""
    every = np.ones_like(done)
    out: dict[str, Any] = {}
    for key, value in info.items():
        out[key] = value.detach().cpu().numpy().copy()
        out[f"_{key}"] = done if is_episode_key(key) else every
    return out
