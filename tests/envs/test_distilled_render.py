"""Top-down rendering of ``S3Distilled-v0`` (and the generic renderer shared with BeamNG)."""

from __future__ import annotations

import sys

import gymnasium as gym
import numpy as np
import pytest
import torch

import gym_s3  # noqa: F401
from gym_s3.envs.distilled import S3DistilledBatchEnv
from gym_s3.envs.render import SURFACE_COLOURS, TopDownRenderer, tile_frames
from gym_s3.errors import MissingDependencyError
from gym_s3.tracks.putnam import putnam_park
from gym_s3.tracks.surfaces import SurfaceLayout

pytest.importorskip("pygame")
pytestmark = pytest.mark.timeout(120)


def _count_calls(renderer: TopDownRenderer) -> list[int]:
    """Record the number of frames drawn by ``renderer`` (instrumentation, not a fake)."""
    calls = [0]
    draw = renderer.render

    def counted(**kwargs):
        calls[0] += 1
        return draw(**kwargs)

    renderer.render = counted  # type: ignore[method-assign]
    return calls


def test_single_env_frames_are_rgb_and_change_as_the_car_moves(small_kwargs, driver):
    """render() gives (H, W, 3) uint8 frames that differ once the car has moved."""
    env = gym.make("S3Distilled-v0", render_mode="rgb_array", **small_kwargs)
    obs, _ = env.reset(seed=0)
    first = env.render()
    assert first.shape == (480, 480, 3) and first.dtype == np.uint8
    for _ in range(10):
        obs, *_ = env.step(driver(torch.from_numpy(obs)[None])[0].numpy())
    later = env.render()
    assert not np.array_equal(first, later)
    assert (np.abs(first.astype(int) - later.astype(int)).sum(-1) > 0).mean() > 0.01


def test_batched_render_draws_only_the_chosen_cars(small_kwargs):
    """The batched face draws render_envs only, tiled into one frame."""
    env = gym.make("S3Distilled-v0", num_envs=16, render_mode="rgb_array", render_envs=[1, 3],
                   **small_kwargs)  # fmt: skip
    calls = _count_calls(env.unwrapped._view.renderer)
    env.reset(seed=0)
    env.step(torch.zeros(16, 2))
    assert calls[0] == 0  # nothing is drawn unless asked
    frame = env.render()
    assert calls[0] == 2
    assert frame.shape == (480, 960, 3)


def test_vector_render_returns_one_frame_per_chosen_car(small_kwargs):
    """The vector face's render() returns a tuple with one frame per render_envs index."""
    env = gym.make_vec("S3Distilled-v0", num_envs=8, render_mode="rgb_array", render_envs=[0, 5, 7],
                       **small_kwargs)  # fmt: skip
    env.reset(seed=0)
    frames = env.render()
    assert isinstance(frames, tuple) and len(frames) == 3
    assert not np.array_equal(frames[0], frames[1])


def test_car_on_an_ice_patch_is_drawn_on_ice(ice_kwargs):
    """A car starting on the ice patch is surrounded by ice-coloured road; far away it is not."""
    env = S3DistilledBatchEnv(num_envs=2, render_mode="rgb_array", render_envs=[0, 1], **ice_kwargs)
    band = env.core.pool.layouts[0].bands[0]
    starts = env.core.pool.scenario_start
    inside = int(torch.nonzero((starts > band.s_start + 10) & (starts < band.s_start + 20))[0])
    far = int(torch.nonzero((starts - band.s_start).abs() > 300)[0])
    env.reset(seed=0, options={"scenario": [inside, far]})
    on_ice, far_away = env.render_frames([0, 1])
    ice = np.array(SURFACE_COLOURS["ice"])

    def ice_share(frame: np.ndarray) -> float:
        centre = frame[200:280, 200:280].reshape(-1, 3)
        return float((np.abs(centre - ice).sum(-1) == 0).mean())

    assert ice_share(on_ice) > 0.2
    assert ice_share(far_away) == 0.0


def test_renderer_generic_inputs_and_whole_track_view():
    """The renderer works from a path, a layout, a pose and a trail (as S3BeamNG-v0 uses it)."""
    path = putnam_park()
    x, y, yaw = (float(v) for v in (path.xyz[100, 0], path.xyz[100, 1], path.heading[100]))
    trail = path.xyz[60:100, :2].numpy()
    follow = TopDownRenderer(320, 240).render(
        path=path, layout=SurfaceLayout.uniform("snow"), pose=(x, y, yaw), trail=trail,
        speed=12.0, title="S3BeamNG-v0 (open stand-in)",
    )  # fmt: skip
    assert follow.shape == (240, 320, 3)
    snow = np.array(SURFACE_COLOURS["snow"])
    assert (np.abs(follow.reshape(-1, 3) - snow).sum(-1) == 0).mean() > 0.05
    whole = TopDownRenderer(300, 300, follow=False).render(path=path, pose=(x, y, yaw))
    assert whole.shape == (300, 300, 3)
    tiled = tile_frames([whole, whole, whole])
    assert tiled.shape == (600, 600, 3)


def test_frames_of_an_approximate_track_say_so():
    """Frames of Putnam Park carry an "(approximation)" HUD line; other tracks' frames do not."""
    import dataclasses

    path = putnam_park()
    assert "approximation" in path.labels
    exact = dataclasses.replace(path, labels=tuple(x for x in path.labels if x != "approximation"))
    pose = (float(path.xyz[100, 0]), float(path.xyz[100, 1]), float(path.heading[100]))
    renderer = TopDownRenderer(320, 240)
    shown = renderer.render(path=path, pose=pose, title="S3BeamNG-v0 (open stand-in)")
    plain = renderer.render(path=exact, pose=pose, title="S3BeamNG-v0 (open stand-in)")
    differs = np.abs(shown.astype(int) - plain.astype(int)).sum(-1) > 0
    rows = np.flatnonzero(differs.any(1))
    assert len(rows) and rows.max() < 80  # the extra HUD line, near the top of the frame


def test_missing_pygame_gives_an_install_hint(monkeypatch):
    """Without pygame, rendering raises MissingDependencyError naming the package to install."""
    monkeypatch.setitem(sys.modules, "pygame", None)
    with pytest.raises(MissingDependencyError, match="pip install"):
        TopDownRenderer().render(path=putnam_park(), pose=(0.0, 0.0, 0.0))


def test_a_snapshot_keeps_the_last_pose_through_an_autoreset(small_kwargs):
    """The final frame of an episode draws where the car ended, not its next start.

    A partial reset writes the backend state's reset rows in place; a snapshot taken before it
    must not see that write.
    """
    from gym_s3.envs.view import CoreView

    env = S3DistilledBatchEnv(num_envs=16, max_episode_steps=8, seed=1, **small_kwargs)
    env.reset(seed=1)
    view = CoreView(env.core, title="t")
    action = torch.tensor([[0.3, 1.0]]).expand(16, 2)
    for _ in range(8):
        out = env.core.step(action)
    assert bool(out.done.any())
    snap = view.snapshot()
    last = snap.pose.clone()
    env.core.autoreset(out.done)
    torch.testing.assert_close(snap.pose, last, rtol=0, atol=0)
    now = env.core.ego()
    moved = (torch.stack([now.x, now.y], -1) - last[:, :2]).norm(dim=-1)
    assert bool((moved[out.done] > 1.0).any())  # the reset cars did move back to a start
