"""Record GIFs of chosen cars of ``S3Distilled-v0`` every k episodes, rendering nothing else.

:class:`RecordEpisodeGif` wraps the single-car or the batched :class:`gymnasium.Env` face,
:class:`RecordEpisodeGifVector` the :class:`gymnasium.vector.VectorEnv` face. Both follow the
episode counter of each chosen car (``core.episode_id``, 0 for the first episode): episode ``e``
of car ``i`` is recorded when ``e % every_k_episodes == 0`` and written as
``<folder>/<name_prefix>-env<i>-episode<e>.gif``. Only the recorded cars are drawn, and only
while they are recorded; the last frame of an episode that ended by a same-step autoreset is
drawn from the state before the reset. Reading the episode counters of the chosen cars is one
small host transfer per step.

GIFs are written with moviepy (``pip install "sim2sim2sim[video]"``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import gymnasium as gym
import numpy as np
from gymnasium.vector import VectorWrapper

from gym_s3._optional import require
from gym_s3.envs.gif import write_gif
from gym_s3.errors import ConfigError


class _GifRecorder:
    """The recording logic shared by the wrappers (see the module docstring)."""

    def __init__(
        self,
        env,
        folder: str | Path,
        env_indices: Sequence[int],
        every_k_episodes: int,
        fps: float | None,
        name_prefix: str,
        max_frames: int,
    ) -> None:
        require("moviepy", purpose="writing GIFs of S3Distilled-v0 episodes")
        base = env.unwrapped
        if not hasattr(base, "core") or not hasattr(base, "render_frames"):
            raise ConfigError("RecordEpisodeGif wraps S3Distilled-v0 environments only")
        if getattr(base, "render_mode", None) != "rgb_array":
            raise ConfigError("RecordEpisodeGif needs the env built with render_mode='rgb_array'")
        n = base.core.num_envs
        self.indices = tuple(int(i) for i in env_indices)
        if not self.indices or any(not 0 <= i < n for i in self.indices):
            raise ConfigError(f"env_indices must be indices in [0, {n}), got {env_indices}")
        if every_k_episodes < 1 or max_frames < 2:
            raise ConfigError("every_k_episodes must be >= 1 and max_frames >= 2")
        self.base = base
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.every = int(every_k_episodes)
        self.fps = float(fps or base.metadata.get("render_fps", 20))
        self.prefix = name_prefix
        self.max_frames = int(max_frames)
        self.recording: dict[int, int] = {}  # car index -> episode being recorded
        self.frames: dict[int, list[np.ndarray]] = {}
        self.seen: dict[int, int] = {}  # car index -> latest episode id seen
        self.written: list[Path] = []

    def _episode_ids(self) -> list[int]:
        """Episode counters of the chosen cars (one small host transfer)."""
        core = self.base.core
        return core.episode_id[list(self.indices)].cpu().tolist()

    def after(self, *, stepped: bool) -> None:
        """Update the recordings after a reset (``stepped=False``) or a step."""
        ids = self._episode_ids()
        ended = [
            i
            for i, e in zip(self.indices, ids, strict=True)
            if i in self.recording and self.recording[i] != e
        ]
        if ended and stepped:  # ended inside this step: draw the state before the autoreset
            for i, frame in zip(ended, self.base.render_frames(ended, final=True), strict=True):
                self.frames[i].append(frame)
        for i in ended:
            self._write(i)
        draw = []
        for i, e in zip(self.indices, ids, strict=True):
            new = self.seen.get(i) != e
            self.seen[i] = e
            if new and i not in self.recording and e % self.every == 0:
                self.recording[i] = e
                self.frames[i] = []
            if i in self.recording:
                draw.append(i)
        if draw:
            for i, frame in zip(draw, self.base.render_frames(draw), strict=True):
                self.frames[i].append(frame)
                if len(self.frames[i]) >= self.max_frames:
                    self._write(i)

    def _write(self, i: int) -> None:
        """Write the GIF of car ``i``'s recorded episode and stop recording it."""
        episode = self.recording.pop(i)
        frames = self.frames.pop(i, [])
        if len(frames) < 2:
            return
        path = self.folder / f"{self.prefix}-env{i}-episode{episode}.gif"
        self.written.append(write_gif(frames, path, fps=self.fps))

    def close(self) -> None:
        """Write the episodes still being recorded."""
        for i in list(self.recording):
            self._write(i)


class _GifRecording:
    """Recording behaviour shared by the single-env and vector GIF wrappers (a mixin)."""

    def __init__(
        self,
        env,
        folder: str | Path,
        *,
        env_indices: Sequence[int] = (0,),
        every_k_episodes: int = 1,
        fps: float | None = None,
        name_prefix: str = "s3distilled",
        max_frames: int = 2000,
    ) -> None:
        super().__init__(env)
        self._recorder = _GifRecorder(
            env, folder, env_indices, every_k_episodes, fps, name_prefix, max_frames
        )

    @property
    def written(self) -> list[Path]:
        """Paths of the GIFs written so far."""
        return self._recorder.written

    def reset(self, **kwargs):
        """Reset the env, then start or finish recordings."""
        out = self.env.reset(**kwargs)
        self._recorder.after(stepped=False)
        return out

    def step(self, action):
        """Step the env, then draw the recorded cars."""
        out = self.env.step(action)
        self._recorder.after(stepped=True)
        return out

    def close(self, **kwargs) -> None:
        """Write unfinished recordings and close the env."""
        self._recorder.close()
        super().close(**kwargs)


class RecordEpisodeGif(_GifRecording, gym.Wrapper):
    """Record GIFs of chosen cars of the single-car or batched ``S3Distilled-v0`` env.

    Args:
        env: an ``S3Distilled-v0`` env built with ``render_mode="rgb_array"``.
        folder: output folder (created).
        env_indices: cars to record (``(0,)`` for the single-car env).
        every_k_episodes: record episode ``e`` of a car when ``e % every_k_episodes == 0``.
        fps: frames per second of the GIFs (default: the env's ``render_fps``, 20).
        name_prefix: file name prefix.
        max_frames: longest GIF; a longer episode is cut there.

    Attributes:
        written: paths of the GIFs written so far.
    """


class RecordEpisodeGifVector(_GifRecording, VectorWrapper):
    """:class:`RecordEpisodeGif` for the ``gym.make_vec`` face (same arguments)."""
