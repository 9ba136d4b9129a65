"""GIF recording of chosen cars every k episodes (and nothing else rendered)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from PIL import Image

import gym_s3  # noqa: F401
from gym_s3.envs.distilled import S3DistilledBatchEnv
from gym_s3.envs.wrappers import RecordEpisodeGif, RecordEpisodeGifVector
from gym_s3.errors import ConfigError

pytest.importorskip("pygame")
pytest.importorskip("moviepy")
pytestmark = pytest.mark.timeout(120)


def _gif_frames(path) -> int:
    """Number of frames in a GIF file."""
    with Image.open(path) as im:
        return im.n_frames


def test_gifs_are_written_for_the_chosen_car_every_k_episodes(small_kwargs, tmp_path):
    """Car 1, every 2nd episode: episodes 0 and 2 become GIFs of reset + 4 steps; nothing else."""
    env = S3DistilledBatchEnv(num_envs=3, render_mode="rgb_array", max_episode_steps=4,
                              **small_kwargs)  # fmt: skip
    drawn: list[int] = []
    view = env._view
    frames = view.frames

    def counted(indices, snapshot=None):
        drawn.extend(indices)
        return frames(indices, snapshot)

    view.frames = counted  # instrumentation: which cars get drawn
    rec = RecordEpisodeGif(env, tmp_path, env_indices=[1], every_k_episodes=2, name_prefix="t")
    rec.reset(seed=0)
    for _ in range(14):  # episodes 0..3 of 4 steps end at steps 4, 8, 12
        rec.step(torch.zeros(3, 2))
    rec.close()
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["t-env1-episode0.gif", "t-env1-episode2.gif"]
    assert [p.name for p in rec.written] == names
    for name in names:
        assert _gif_frames(tmp_path / name) == 5  # start + 4 steps (last one before the reset)
    assert set(drawn) == {1}
    assert len(drawn) == 10  # only while recording


def test_unfinished_recording_is_written_on_close(small_kwargs, tmp_path):
    """Closing the wrapper writes the episode being recorded (single-car env)."""
    env = gym.make("S3Distilled-v0", render_mode="rgb_array", **small_kwargs)
    rec = RecordEpisodeGif(env, tmp_path)
    rec.reset(seed=1)
    for _ in range(3):
        rec.step(np.zeros(2, dtype=np.float32))
    rec.close()
    (gif,) = tmp_path.iterdir()
    assert gif.name == "s3distilled-env0-episode0.gif" and _gif_frames(gif) == 4


def test_vector_wrapper_with_disabled_autoreset(small_kwargs, tmp_path):
    """DISABLED autoreset: the GIF ends when the car is reset through reset_mask."""
    env = gym.make_vec("S3Distilled-v0", num_envs=2, render_mode="rgb_array",
                       max_episode_steps=3, **small_kwargs)  # fmt: skip
    rec = RecordEpisodeGifVector(env, tmp_path, env_indices=[0])
    rec.reset(seed=0)
    for _ in range(3):
        _, _, term, trunc, _ = rec.step(np.zeros((2, 2), dtype=np.float32))
    assert (term | trunc).all()
    assert not list(tmp_path.iterdir())
    rec.reset(options={"reset_mask": term | trunc})
    assert [p.name for p in tmp_path.iterdir()] == ["s3distilled-env0-episode0.gif"]
    assert _gif_frames(tmp_path / "s3distilled-env0-episode0.gif") == 4


def test_recorder_needs_rgb_array_and_valid_indices(small_kwargs, tmp_path):
    """The wrapper refuses envs without rgb_array rendering and out-of-range car indices."""
    with pytest.raises(ConfigError, match="rgb_array"):
        RecordEpisodeGif(S3DistilledBatchEnv(num_envs=2, **small_kwargs), tmp_path)
    env = S3DistilledBatchEnv(num_envs=2, render_mode="rgb_array", **small_kwargs)
    with pytest.raises(ConfigError, match="env_indices"):
        RecordEpisodeGif(env, tmp_path, env_indices=[2])


def test_write_gif_round_trip_and_bad_frames(tmp_path):
    """write_gif stores every frame; empty or non-RGB frame lists are refused."""
    from gym_s3.envs.gif import write_gif

    frames = np.stack([np.full((16, 24, 3), 20 * i, dtype=np.uint8) for i in range(6)])
    path = write_gif(frames, tmp_path / "sub" / "clip.gif", fps=10)
    assert path.is_file() and _gif_frames(path) == 6
    with pytest.raises(ConfigError, match="at least one frame"):
        write_gif([], tmp_path / "empty.gif")
    with pytest.raises(ConfigError, match="RGB"):
        write_gif(np.zeros((3, 8, 8)), tmp_path / "gray.gif")
