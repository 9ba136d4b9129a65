"""Render chosen cars of a :class:`~gym_s3.envs.core.DistilledCore` (and only those).

Rendering reads the state and never produces it: a :class:`CarSnapshot` holds references to the
core's per-car tensors at one instant (no copy; the core replaces, never overwrites, them), and
:meth:`CoreView.frames` copies only the rows of the requested cars to the host.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from gym_s3.envs.render import TopDownRenderer
from gym_s3.tracks.surfaces import SURFACE_NAMES


@dataclass(frozen=True)
class CarSnapshot:
    """The drawable state of every car at one instant (``(N, ...)`` tensors).

    Attributes:
        pose: ``(N, 3)`` ``[x, y, yaw]`` [m, m, rad].
        speed: ``(N,)`` longitudinal speed [m/s].
        variant: ``(N,)`` int64 scenario variant (path + surface layout) of each car.
        episode_id: ``(N,)`` int64 episode counter of each car.
        steps: ``(N,)`` int64 steps taken in the episode.
    """

    pose: Tensor
    speed: Tensor
    variant: Tensor
    episode_id: Tensor
    steps: Tensor


class CoreView:
    """Draw cars of a core with a :class:`TopDownRenderer`, keeping a trail per drawn car.

    Args:
        core: the batched core.
        title: HUD title, e.g. ``"S3Distilled-v0 / bicycle"``.
        renderer: the renderer (default: 480 x 480 px, 80 m window following the car).
        max_trail: positions kept per trail.
    """

    def __init__(
        self, core, *, title: str, renderer: TopDownRenderer | None = None, max_trail: int = 800
    ) -> None:
        self.core = core
        self.title = title
        self.renderer = renderer or TopDownRenderer()
        self.max_trail = max_trail
        self._trails: dict[int, tuple[int, list[tuple[float, float]]]] = {}
        self._speed_cache: dict[int, np.ndarray] = {}

    def snapshot(self) -> CarSnapshot:
        """The current per-car state, kept through a later autoreset (no host transfer).

        Pose and speed are new ``(N, 3)`` and ``(N,)`` tensors: a partial reset writes the
        backend state's reset rows in place, which would otherwise redraw the episode's last
        frame at the next start. The other fields are tensors that resets replace, never write.
        """
        core = self.core
        ego = core.ego()
        return CarSnapshot(
            pose=torch.stack([ego.x, ego.y, ego.yaw], dim=-1),
            speed=ego.v_long.clone(),
            variant=core.task.variant,
            episode_id=core.episode_id,
            steps=core.task.steps,
        )

    def frames(
        self, indices: Sequence[int], snapshot: CarSnapshot | None = None
    ) -> list[np.ndarray]:
        """One ``(H, W, 3)`` uint8 frame per car index (trails advance by one point each).

        Args:
            indices: car indices to draw.
            snapshot: state to draw (default: now); pass the one taken before an autoreset to
                draw the last state of an episode.
        """
        snap = snapshot or self.snapshot()
        idx = torch.as_tensor(list(indices), dtype=torch.int64, device=snap.pose.device)
        pose = snap.pose[idx].double().cpu().numpy()
        speed = snap.speed[idx].double().cpu().numpy()
        variant = snap.variant[idx]
        surface_id = self._surface_ids(variant, snap.pose[idx, :2]).tolist()
        rows = zip(
            indices,
            pose.tolist(),
            speed.tolist(),
            variant.cpu().tolist(),
            snap.episode_id[idx].cpu().tolist(),
            snap.steps[idx].cpu().tolist(),
            surface_id,
            strict=True,
        )
        out = []
        pool = self.core.pool
        for i, p, v, var, episode, step, sid in rows:
            trail = self._trail(int(i), int(episode), (p[0], p[1]))
            path = self.core.paths[int(pool.variant_path[var])]
            out.append(
                self.renderer.render(
                    path=path,
                    layout=pool.layouts[var],
                    pose=p,
                    trail=np.asarray(trail),
                    speed=v,
                    title=self.title,
                    step=int(step),
                    surface=SURFACE_NAMES[sid],
                    reference_speed=self._reference_speed(var, path.num_samples),
                )
            )
        return out

    def _trail(self, index: int, episode: int, xy: tuple[float, float]) -> list:
        """Append ``xy`` to the trail of car ``index`` (a new episode starts a new trail)."""
        ep, trail = self._trails.get(index, (episode, []))
        if ep != episode:
            trail = []
        if not trail or trail[-1] != xy:
            trail.append(xy)
        del trail[: max(0, len(trail) - self.max_trail)]
        self._trails[index] = (episode, trail)
        return trail

    def _surface_ids(self, variant: Tensor, xy: Tensor) -> np.ndarray:
        """Surface index under each car's centre."""
        batch = self.core.pool.surfaces.index(variant)
        _, sid = batch.lookup(xy[:, None, :].to(batch.rects.dtype))
        return sid[:, 0].cpu().numpy()

    def _reference_speed(self, variant: int, num_samples: int) -> np.ndarray:
        """Target speed at each sample of the variant's path (cached)."""
        if variant not in self._speed_cache:
            v = self.core.pool.speed[variant, :num_samples]
            self._speed_cache[variant] = v.double().cpu().numpy()
        return self._speed_cache[variant]
