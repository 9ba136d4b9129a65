"""``gym.make_vec("S3Distilled-v0", num_envs=N)``: the :class:`gymnasium.vector.VectorEnv` face."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import torch
from gymnasium.vector import AutoresetMode, VectorEnv

from gym_s3.envs.config import DistilledConfig
from gym_s3.envs.core import DistilledCore
from gym_s3.envs.faces import (
    RENDER_FPS,
    RENDER_MODES,
    check_render_envs,
    check_render_mode,
    check_reset_options,
    make_config,
    numpy_infos,
    parse_autoreset,
    torch_infos,
    view_title,
)
from gym_s3.envs.view import CarSnapshot, CoreView
from gym_s3.errors import ConfigError
from gym_s3.spec import (
    batched_action_space,
    batched_observation_space,
    single_action_space,
    single_observation_space,
)


class S3DistilledVectorEnv(VectorEnv):
    """N cars of ``S3Distilled-v0`` as a :class:`gymnasium.vector.VectorEnv`.

    Returns numpy arrays (``array_type="numpy"``, the gymnasium convention) or torch tensors on
    the env device (``array_type="torch"``). ``infos`` is a dict of ``(N, ...)`` arrays, each with
    its ``_key`` validity mask; ``episode/*`` summaries are valid where the car finished.

    Autoreset (``autoreset_mode``, also in ``metadata``):

    * ``DISABLED`` (default, what TorchRL's ``GymWrapper`` prefers): finished cars keep their
      state until ``reset(options={"reset_mask": mask})`` with a ``(N,)`` bool numpy array or
      tensor; that call returns the observation of every car (fresh for the masked ones).
      Stepping a finished car without resetting it continues its episode (no error).
    * ``SAME_STEP``: finished cars restart inside ``step``; ``infos["final_obs"]`` is a dense
      ``(N, F)`` array of last observations valid where ``infos["_final_obs"]``, and
      ``infos["final_info"]`` (mask ``_final_info``) holds the step's infos.

    Args:
        num_envs: number of cars N.
        max_episode_steps: episode length override (``gym.make_vec`` passes the registered
            value; ``None`` keeps the config's).
        render_mode: ``None`` or ``"rgb_array"``; ``render()`` returns one frame per car of
            ``render_envs`` (the other cars are never drawn).
        render_envs: car indices drawn by ``render()``.
        autoreset_mode: ``AutoresetMode.DISABLED`` or ``AutoresetMode.SAME_STEP`` (or names).
        array_type: ``"numpy"`` or ``"torch"``.
        config: base config (keyword arguments override its fields).
        **kwargs: see :meth:`gym_s3.envs.config.DistilledConfig.from_kwargs`.
    """

    metadata = {
        "render_modes": RENDER_MODES,
        "render_fps": RENDER_FPS,
        "autoreset_mode": AutoresetMode.DISABLED,
    }

    def __init__(
        self,
        num_envs: int = 1,
        *,
        max_episode_steps: int | None = None,
        render_mode: str | None = None,
        render_envs: Sequence[int] | int = (0,),
        autoreset_mode: AutoresetMode | str = AutoresetMode.DISABLED,
        array_type: Literal["numpy", "torch"] = "numpy",
        config: DistilledConfig | None = None,
        **kwargs: Any,
    ) -> None:
        if max_episode_steps is not None:
            kwargs["max_episode_steps"] = max_episode_steps
        if array_type not in ("numpy", "torch"):
            raise ConfigError(f"array_type must be 'numpy' or 'torch', got {array_type!r}")
        self.config = make_config(config, kwargs)
        self.render_mode = check_render_mode(render_mode)
        self.autoreset_mode = parse_autoreset(
            autoreset_mode, (AutoresetMode.DISABLED, AutoresetMode.SAME_STEP)
        )
        self.metadata = {**type(self).metadata, "autoreset_mode": self.autoreset_mode}
        self.array_type = array_type
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

    # ------------------------------------------------------------------ conversion
    def _out(self, t: torch.Tensor):
        """A tensor in the face's array type (numpy arrays are fresh host copies)."""
        if self.array_type == "torch":
            return t
        arr = t.detach().cpu().numpy()
        return arr.copy() if t.device.type == "cpu" else arr

    def _infos(self, info: dict[str, torch.Tensor], done: torch.Tensor) -> dict[str, Any]:
        if self.array_type == "torch":
            return torch_infos(info, done)
        return numpy_infos(info, done.cpu().numpy())

    # ------------------------------------------------------------------ API
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Reset all cars, or the cars of ``options["reset_mask"]``.

        Args:
            seed: reseeds the env generator (same seed, same scenarios and start states).
            options: ``reset_mask`` (``(N,)`` bool numpy array or tensor) and/or ``scenario``
                (``(N,)`` scenario ids).

        Returns:
            ``(obs (N, F), infos)``; ``infos["scenario"]`` with mask ``_scenario`` = reset cars.
        """
        super().reset(seed=seed)
        options = check_reset_options(options)
        mask = options.get("reset_mask")
        first = not self.core.started
        obs = self.core.reset(mask, seed=seed, scenario=options.get("scenario"))
        self.last_snapshot = self._view.snapshot()
        if mask is None or first:
            mask = torch.ones(self.num_envs, dtype=torch.bool, device=self.device)
        mask = torch.as_tensor(mask, device=self.device)
        info = {"scenario": self.core.task.scenario, "_scenario": mask}
        if self.array_type == "numpy":
            info = {k: v.cpu().numpy() for k, v in info.items()}
        return self._out(obs), info

    def step(self, actions):
        """Advance every car by 0.05 s; ``actions`` is ``(N, 2)`` (numpy or torch)."""
        out = self.core.step(actions)
        done = out.done
        infos = self._infos(out.info, done)
        self.last_snapshot = self._view.snapshot()
        obs = out.obs
        if self.autoreset_mode == AutoresetMode.SAME_STEP:
            infos["final_info"] = dict(infos)
            infos["_final_info"] = self._out(done)
            infos["final_obs"] = self._out(out.obs)
            infos["_final_obs"] = self._out(done)
            obs = self.core.autoreset(done)
        return (
            self._out(obs),
            self._out(out.reward),
            self._out(out.terminated),
            self._out(out.truncated),
            infos,
        )

    def render(self):
        """One ``(H, W, 3)`` uint8 frame per car of ``render_envs`` (a tuple)."""
        if self.render_mode is None:
            return None
        return tuple(self._view.frames(self.render_envs))

    def render_frames(self, indices: Sequence[int], *, final: bool = False) -> list[np.ndarray]:
        """Frames of the cars ``indices``; ``final=True`` draws the state before the autoreset."""
        snap = self.last_snapshot if final else None
        return self._view.frames(check_render_envs(indices, self.num_envs), snap)
