"""Write frames as an animated GIF (moviepy; ``pip install "sim2sim2sim[video]"``)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from gym_s3._optional import require
from gym_s3.errors import ConfigError


def write_gif(
    frames: np.ndarray | Sequence[np.ndarray], path: str | os.PathLike[str], *, fps: float = 20.0
) -> Path:
    """Write ``frames`` to ``path`` as a looping GIF.

    Args:
        frames: ``(T, H, W, 3)`` uint8 RGB frames (an array or a sequence of ``(H, W, 3)``).
        path: output file (its folder is created).
        fps: frames per second (the envs render at 20, one frame per control step).

    Returns:
        The path written.

    Raises:
        ConfigError: fewer than one frame, or frames that are not equal-sized RGB images.
        MissingDependencyError: moviepy is not installed (the message names the extra).
    """
    items = list(frames)
    if not items:
        raise ConfigError("write_gif needs at least one frame")
    shape = np.shape(items[0])
    if len(shape) != 3 or shape[2] != 3 or any(np.shape(f) != shape for f in items):
        raise ConfigError(f"frames must be equal-sized (H, W, 3) RGB images, got first {shape}")
    if fps <= 0:
        raise ConfigError(f"fps must be positive, got {fps}")
    require("moviepy", purpose="writing GIFs")
    from moviepy import ImageSequenceClip

    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    clip = ImageSequenceClip([np.asarray(f, dtype=np.uint8) for f in items], fps=fps)
    clip.write_gif(str(out), logger=None)
    return out
