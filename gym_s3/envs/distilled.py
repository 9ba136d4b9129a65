"""``S3Distilled-v0``: track reference trajectories with cars driven by a distilled dynamics model.

One core (:class:`~gym_s3.envs.core.DistilledCore`), three faces:

* ``gym.make("S3Distilled-v0")`` (``num_envs=1``): :class:`S3DistilledEnv`, a plain
  :class:`gymnasium.Env` of one car returning fresh numpy arrays; it passes
  :func:`gymnasium.utils.env_checker.check_env`.
* ``gym.make("S3Distilled-v0", num_envs=4096, device="cuda")``: :class:`S3DistilledBatchEnv`, a
  batched :class:`gymnasium.Env` (Isaac Lab style) whose observations, rewards and flags are
  ``(N, ...)`` torch tensors on the device, with same-step autoreset.
* ``gym.make_vec("S3Distilled-v0", num_envs=4096)``: :class:`S3DistilledVectorEnv`, a real
  :class:`gymnasium.vector.VectorEnv` (numpy by default, DISABLED autoreset with ``reset_mask``).

Spaces, observations, rewards, terminations and metrics are those of ``S3BeamNG-v0``
(:mod:`gym_s3.spec`, :class:`gym_s3.task.TrackingTask`). Keyword arguments are those of
:meth:`gym_s3.envs.config.DistilledConfig.from_kwargs` (``backend``, ``checkpoint``, ``device``,
``obs_mode``, ``max_episode_steps``, ``tracks``, ``scenarios``, ``layout``, ``seed``, ...) plus
``render_mode`` and, for the batched faces, ``render_envs`` and ``autoreset_mode``.

Version history: v0 (spec version 1), first release.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from gymnasium.vector import AutoresetMode

from gym_s3.envs.config import DistilledConfig
from gym_s3.envs.core import DistilledCore
from gym_s3.envs.faces import (
    RENDER_FPS,
    RENDER_MODES,
    check_render_envs,
    check_render_mode,
    check_reset_options,
    make_config,
    parse_autoreset,
    torch_infos,
    view_title,
)
from gym_s3.envs.render import tile_frames
from gym_s3.envs.vector import S3DistilledVectorEnv
from gym_s3.envs.view import CarSnapshot, CoreView
from gym_s3.observations import EgoState
from gym_s3.plausibility import check_seed
from gym_s3.spec import (
    batched_action_space,
    batched_observation_space,
    single_action_space,
    single_observation_space,
)
from gym_s3.task import TrackingTask
from gym_s3.tracks.path import ReferencePath
from gym_s3.tracks.surfaces import SurfaceLayout

__all__ = [
    "S3DistilledBatchEnv",
    "S3DistilledEnv",
    "S3DistilledVectorEnv",
    "make_distilled_env",
]


def make_distilled_env(num_envs: int = 1, *, batched: bool | None = None, **kwargs: Any) -> gym.Env:
    """Entry point of ``gym.make("S3Distilled-v0", ...)``.

    Args:
        num_envs: number of cars N.
        batched: force the batched torch face even for N = 1 (default: batched iff N > 1).
        **kwargs: env arguments (see the module docstring).

    Returns:
        :class:`S3DistilledEnv` for one car, :class:`S3DistilledBatchEnv` otherwise.
    """
    if batched is None:
        batched = num_envs != 1
    if batched:
        return S3DistilledBatchEnv(num_envs=num_envs, **kwargs)
    return S3DistilledEnv(**kwargs)


# gym.make reads the render modes of the entry point from this attribute.
make_distilled_env.metadata = {"render_modes": RENDER_MODES, "render_fps": RENDER_FPS}  # type: ignore[attr-defined]


class S3DistilledEnv(gym.Env):
    """One car of ``S3Distilled-v0`` as a standard :class:`gymnasium.Env` (numpy in and out).

    Observation ``Box((F,), float32)`` and action ``Box(-1, 1, (2,), float32)`` from
    :mod:`gym_s3.spec`. ``info`` holds the reward terms (``reward/<term>``), the pose and
    tracking errors, the termination reasons and the ``episode/<metric>`` summaries of the
    episode so far (final on its last step), as Python scalars (``wheel_mu`` as a ``(4,)``
    array). :attr:`reference` and :attr:`layout` describe the current episode.

    Args:
        render_mode: ``None`` or ``"rgb_array"``.
        config: base config (keyword arguments override its fields).
        **kwargs: see :meth:`DistilledConfig.from_kwargs`.
    """

    metadata = {"render_modes": RENDER_MODES, "render_fps": RENDER_FPS}

    def __init__(
        self, *, render_mode: str | None = None, config: DistilledConfig | None = None, **kwargs
    ) -> None:
        self.config = make_config(config, kwargs)
        self.render_mode = check_render_mode(render_mode)
        self.core = DistilledCore(1, self.config)
        self.observation_space = single_observation_space(self.config.task.obs_mode)
        self.action_space = single_action_space()
        self._view = CoreView(self.core, title=view_title(self.config))

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Start a new episode (``options={"scenario": id}`` picks the scenario)."""
        super().reset(seed=None if seed is None else check_seed(seed))
        scenario = None
        if options and "scenario" in options:
            scenario = torch.tensor([int(options["scenario"])])
        obs = self.core.reset(seed=seed, scenario=scenario)
        return _numpy(obs[0]), {"scenario": int(self.core.task.scenario[0])}

    def step(self, action):
        """Advance the car by 0.05 s; see :mod:`gym_s3.envs.actions` for action rules."""
        out = self.core.step(action, allow_flat=True)
        info: dict[str, Any] = {}
        for key, value in out.info.items():
            row = value[0]
            info[key] = _numpy(row) if row.ndim else row.item()
        terminated, truncated = bool(out.terminated[0]), bool(out.truncated[0])
        return _numpy(out.obs[0]), float(out.reward[0]), terminated, truncated, info

    @property
    def ego(self) -> EgoState:
        """The car's state (pose and body velocities) after the last reset or step."""
        return self.core.ego()

    @property
    def task(self) -> TrackingTask:
        """The car's tracking task (reference, target speeds, friction, episode ends)."""
        return self.core.task

    @property
    def reference(self) -> ReferencePath:
        """The reference path of the current episode."""
        variant = int(self.core.task.variant[0])
        return self.core.paths[int(self.core.pool.variant_path[variant])]

    @property
    def layout(self) -> SurfaceLayout:
        """The surface layout of the current episode."""
        return self.core.pool.layouts[int(self.core.task.variant[0])]

    def render(self):
        """``(H, W, 3)`` uint8 top-down frame of the car (``render_mode="rgb_array"``)."""
        if self.render_mode is None:
            gym.logger.warn("render() called without render_mode; pass render_mode='rgb_array'")
            return None
        return self._view.frames([0])[0]

    def render_frames(self, indices: Sequence[int], *, final: bool = False) -> list[np.ndarray]:
        """Frames of the car (``indices`` must be ``[0]``; ``final`` changes nothing here)."""
        return self._view.frames(check_render_envs(indices, 1))


class S3DistilledBatchEnv(gym.Env):
    """N cars as one batched :class:`gymnasium.Env` with torch tensors on the device.

    ``reset()`` returns ``(obs (N, F), info)``; ``step(action (N, 2))`` returns ``obs (N, F)``,
    ``reward (N,)``, ``terminated (N,)``, ``truncated (N,)`` and ``info``, all torch tensors on
    ``device``. Truncation is per car (the env counts steps itself; do not add a ``TimeLimit``).
    ``info`` is a dict of ``(N, ...)`` tensors with gymnasium-style ``_key`` validity masks (the
    ``episode/*`` summaries are valid where the car finished).

    Autoreset (``autoreset_mode``):

    * ``SAME_STEP`` (default): finished cars restart inside ``step``; the returned ``obs`` is
      the first observation of their new episode, the last one is in ``info["final_obs"]``
      (valid where ``info["_final_obs"]``).
    * ``DISABLED``: nothing restarts by itself; call ``reset(options={"reset_mask": mask})``.

    Args:
        num_envs: number of cars N.
        render_mode: ``None`` or ``"rgb_array"``; ``render()`` draws only ``render_envs``.
        render_envs: car indices drawn by ``render()`` (tiled into one frame).
        autoreset_mode: ``AutoresetMode.SAME_STEP`` or ``AutoresetMode.DISABLED`` (or names).
        config: base config (keyword arguments override its fields).
        **kwargs: see :meth:`DistilledConfig.from_kwargs`.
    """

    metadata = {
        "render_modes": RENDER_MODES,
        "render_fps": RENDER_FPS,
        "autoreset_mode": AutoresetMode.SAME_STEP,
    }
    is_vector_env = True

    def __init__(
        self,
        num_envs: int = 1,
        *,
        render_mode: str | None = None,
        render_envs: Sequence[int] | int = (0,),
        autoreset_mode: AutoresetMode | str = AutoresetMode.SAME_STEP,
        config: DistilledConfig | None = None,
        **kwargs,
    ) -> None:
        self.config = make_config(config, kwargs)
        self.render_mode = check_render_mode(render_mode)
        self.autoreset_mode = parse_autoreset(
            autoreset_mode, (AutoresetMode.SAME_STEP, AutoresetMode.DISABLED)
        )
        self.metadata = {**type(self).metadata, "autoreset_mode": self.autoreset_mode}
        self.core = DistilledCore(num_envs, self.config)
        self.num_envs = num_envs
        self.device = self.core.device
        self.render_envs = check_render_envs(render_envs, num_envs)
        mode = self.config.task.obs_mode
        self.single_observation_space = single_observation_space(mode)
        self.single_action_space = single_action_space()
        self.observation_space = batched_observation_space(mode, num_envs)
        self.action_space = batched_action_space(num_envs)
        self._view = CoreView(self.core, title=view_title(self.config))
        self.last_snapshot: CarSnapshot | None = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Reset all cars, or those of ``options["reset_mask"]`` (``(N,)`` bool, numpy or torch).

        ``options["scenario"]`` (``(N,)`` ints) picks the scenarios instead of random draws.
        """
        super().reset(seed=None if seed is None else check_seed(seed))
        options = check_reset_options(options)
        mask, scenario = options.get("reset_mask"), options.get("scenario")
        obs = self.core.reset(mask, seed=seed, scenario=scenario)
        self.last_snapshot = self._view.snapshot()
        return obs, {"scenario": self.core.task.scenario, "episode_id": self.core.episode_id}

    def step(self, action):
        """Advance every car by 0.05 s (see the class docstring for autoreset)."""
        out = self.core.step(action)
        done = out.done
        info = torch_infos(out.info, done)
        self.last_snapshot = self._view.snapshot()  # the state that ended each episode
        obs = out.obs
        if self.autoreset_mode == AutoresetMode.SAME_STEP:
            info["final_obs"] = out.obs
            info["_final_obs"] = done
            obs = self.core.autoreset(done)
        return obs, out.reward, out.terminated, out.truncated, info

    def render(self):
        """One ``(H, W, 3)`` uint8 frame tiling the cars of ``render_envs``."""
        if self.render_mode is None:
            gym.logger.warn("render() called without render_mode; pass render_mode='rgb_array'")
            return None
        return tile_frames(self.render_frames(self.render_envs))

    def render_frames(self, indices: Sequence[int], *, final: bool = False) -> list[np.ndarray]:
        """Frames of the cars ``indices``; ``final=True`` draws the state before the autoreset."""
        snap = self.last_snapshot if final else None
        return self._view.frames(check_render_envs(indices, self.num_envs), snap)


def _numpy(t: torch.Tensor) -> np.ndarray:
    """A fresh float32/bool numpy copy of a tensor."""
    arr = t.detach().cpu().numpy()
    return arr.astype(np.float32) if arr.dtype.kind == "f" else arr.copy()
