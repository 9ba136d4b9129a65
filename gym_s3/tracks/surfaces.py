"""Road surfaces, per-episode surface layouts (base surface + ice patches) and friction lookup.

A layout is a base surface plus patches. Patches are stored as oriented rectangles in world
coordinates (:class:`RectPatch`); a patch that follows a curved road is split into short pieces.
Rectangles are what a real BeamNG.tech scene can hold (``ProceduralCube`` slabs whose material has
an ICE ground type), so the same rectangles drive the distilled env, the vehicle simulator and the
stand-in server, and the friction under a wheel is computed by one function,
:meth:`SurfaceBatch.friction_at`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import Tensor

from gym_s3.errors import ConfigError
from gym_s3.tracks.path import ReferencePath
from gym_s3.tracks.surface_table import (
    SURFACE_ALIASES,
    SURFACE_NAMES,
    SURFACES,
    PatchBand,
    RectPatch,
    Surface,
    get_surface,
)

__all__ = [
    "SURFACES",
    "SURFACE_ALIASES",
    "SURFACE_NAMES",
    "PatchBand",
    "RectPatch",
    "Surface",
    "SurfaceBatch",
    "SurfaceLayout",
    "friction_along",
    "get_surface",
]


@dataclass(frozen=True)
class SurfaceLayout:
    """The surfaces of one episode: a base surface and patches.

    Attributes:
        base: name of the base surface.
        base_mu: peak friction of the base surface [-].
        patches: rectangles of other surfaces; where patches overlap, the later one wins.
        bands: the Frenet description the patches were made from (empty for hand-made layouts).
    """

    base: str = "asphalt"
    base_mu: float = 1.0
    patches: tuple[RectPatch, ...] = ()
    bands: tuple[PatchBand, ...] = field(default_factory=tuple)

    @staticmethod
    def uniform(surface: str) -> SurfaceLayout:
        """A layout with one surface everywhere."""
        surf = get_surface(surface)
        return SurfaceLayout(base=surf.name, base_mu=surf.mu)

    def batch(
        self, device: torch.device | str | None = None, dtype: torch.dtype = torch.float32
    ) -> SurfaceBatch:
        """This layout as a one-row :class:`SurfaceBatch` (broadcast to every car)."""
        return SurfaceBatch.stack([self], device=device, dtype=dtype)

    def friction_at(self, points: Tensor) -> Tensor:
        """Peak friction at world points ``(N, Q, 2)`` -> ``(N, Q)`` (all rows use this layout)."""
        return self.batch(points.device, points.dtype).friction_at(points)


@dataclass(frozen=True)
class SurfaceBatch:
    """B surface layouts as padded tensors (a :class:`~gym_s3.tracks.friction.FrictionField`).

    Attributes:
        base_mu: ``(B,)`` base friction [-].
        base_id: ``(B,)`` int64 index into :data:`SURFACE_NAMES` of the base surface.
        rects: ``(B, P, 6)`` patch rectangles as ``[cx, cy, cos yaw, sin yaw, half length,
            half width]`` [m]; padding rows have negative half sizes (contain nothing).
        rect_mu: ``(B, P)`` patch friction [-].
        rect_id: ``(B, P)`` int64 surface index of each patch.
    """

    base_mu: Tensor
    base_id: Tensor
    rects: Tensor
    rect_mu: Tensor
    rect_id: Tensor

    @staticmethod
    def stack(
        layouts: Sequence[SurfaceLayout],
        *,
        max_patches: int | None = None,
        device: torch.device | str | None = None,
        dtype: torch.dtype = torch.float32,
    ) -> SurfaceBatch:
        """Stack layouts into padded tensors with ``P = max_patches`` (default: the most used)."""
        if not layouts:
            raise ConfigError("SurfaceBatch.stack needs at least one layout")
        p = max_patches if max_patches is not None else max(len(lay.patches) for lay in layouts)
        p = max(p, 1)
        b = len(layouts)
        rects = np.zeros((b, p, 6))
        rects[:, :, 2] = 1.0
        rects[:, :, 4:] = -1.0  # padding: negative half sizes contain no point
        mu = np.zeros((b, p))
        rid = np.zeros((b, p), dtype=np.int64)
        for i, lay in enumerate(layouts):
            if len(lay.patches) > p:
                raise ConfigError(f"layout {i} has {len(lay.patches)} patches, max_patches is {p}")
            for j, r in enumerate(lay.patches):
                rects[i, j] = (r.cx, r.cy, np.cos(r.yaw), np.sin(r.yaw), r.length / 2, r.width / 2)
                mu[i, j] = r.mu
                rid[i, j] = SURFACE_NAMES.index(get_surface(r.surface).name)
        base_ids = [SURFACE_NAMES.index(get_surface(lay.base).name) for lay in layouts]
        kw = {"device": device}
        return SurfaceBatch(
            base_mu=torch.tensor([lay.base_mu for lay in layouts], dtype=dtype, **kw),
            base_id=torch.tensor(base_ids, dtype=torch.int64, **kw),
            rects=torch.as_tensor(rects, dtype=dtype, **kw),
            rect_mu=torch.as_tensor(mu, dtype=dtype, **kw),
            rect_id=torch.as_tensor(rid, **kw),
        )

    @property
    def num_layouts(self) -> int:
        """Number of layouts B."""
        return int(self.base_mu.shape[0])

    def index(self, idx: Tensor) -> SurfaceBatch:
        """Select layouts (e.g. one per car from a bank of layouts): ``idx`` ``(N,)`` int64."""
        return SurfaceBatch(
            self.base_mu[idx],
            self.base_id[idx],
            self.rects[idx],
            self.rect_mu[idx],
            self.rect_id[idx],
        )

    def index_copy(self, rows: Tensor, other: SurfaceBatch) -> SurfaceBatch:
        """A copy with rows ``rows`` ``(R,)`` replaced by the ``R`` layouts of ``other``."""
        return SurfaceBatch(
            self.base_mu.index_copy(0, rows, other.base_mu),
            self.base_id.index_copy(0, rows, other.base_id),
            self.rects.index_copy(0, rows, other.rects),
            self.rect_mu.index_copy(0, rows, other.rect_mu),
            self.rect_id.index_copy(0, rows, other.rect_id),
        )

    def index_copy_(self, rows: Tensor, other: SurfaceBatch) -> SurfaceBatch:
        """Write the ``R`` layouts of ``other`` into rows ``rows`` ``(R,)`` in place."""
        for name in ("base_mu", "base_id", "rects", "rect_mu", "rect_id"):
            getattr(self, name).index_copy_(0, rows, getattr(other, name))
        return self

    def where(self, mask: Tensor, other: SurfaceBatch) -> SurfaceBatch:
        """Row-wise ``mask ? other : self`` for equal-sized batches (sync-free partial reset)."""
        m1 = mask[:, None]
        return SurfaceBatch(
            torch.where(mask, other.base_mu, self.base_mu),
            torch.where(mask, other.base_id, self.base_id),
            torch.where(mask[:, None, None], other.rects, self.rects),
            torch.where(m1, other.rect_mu, self.rect_mu),
            torch.where(m1, other.rect_id, self.rect_id),
        )

    def lookup(
        self, points: Tensor, *, centre: Tensor | None = None, reach: float = 0.0
    ) -> tuple[Tensor, Tensor]:
        """Friction and surface id at world points.

        Args:
            points: ``(N, Q, 2)`` world x, y [m]; ``N`` equals ``B`` or ``B == 1``.
            centre: optional ``(N, 2)`` [m] with every point of row ``i`` within ``reach`` of
                ``centre[i]`` (a car's wheels around its centre): eager CPU calls then test only
                the rows whose centre is within ``reach`` of one of their patches (identical
                values; the others stand on their base surface). Compiled and accelerator calls
                test every row.
            reach: the largest distance of a row's points from its centre [m].

        Returns:
            ``(mu, surface_id)``, each ``(N, Q)``: friction [-] (points dtype) and int64 index into
            :data:`SURFACE_NAMES`. Where patches overlap, the one listed last wins.
        """
        if points.ndim != 3 or points.shape[-1] != 2:
            raise ConfigError(f"points must have shape (N, Q, 2), got {tuple(points.shape)}")
        if self.num_layouts not in (1, points.shape[0]):
            raise ConfigError(
                f"{self.num_layouts} layouts cannot serve {points.shape[0]} cars: use one layout "
                "per car (SurfaceBatch.index) or a single layout for all"
            )
        if centre is not None and tuple(centre.shape) != (points.shape[0], 2):
            raise ConfigError(
                f"centre must have shape ({points.shape[0]}, 2), got {tuple(centre.shape)}"
            )
        if centre is None or points.device.type != "cpu" or torch.compiler.is_compiling():
            return self._lookup_all(points)
        rows = self._near(centre.to(points.dtype), reach).nonzero()[:, 0]
        n, q = points.shape[0], points.shape[1]
        mu = self.base_mu.to(points.dtype).expand(n)[:, None].expand(n, q)
        sid = self.base_id.expand(n)[:, None].expand(n, q)
        if rows.numel() == 0:
            return mu.clone(), sid.clone()
        near = self if self.num_layouts == 1 else self.index(rows)
        near_mu, near_id = near._lookup_all(points[rows])
        return mu.index_copy(0, rows, near_mu), sid.index_copy(0, rows, near_id)

    def _lookup_all(self, points: Tensor) -> tuple[Tensor, Tensor]:
        """:meth:`lookup` testing every row against every patch."""
        # one contiguous (B, 1, P) tensor per rectangle parameter keeps the (N, Q, P) kernels fast
        cx, cy, c, s, hl, hw = (
            t.contiguous()[:, None, :] for t in self.rects.to(points.dtype).unbind(-1)
        )
        rel_x = points[..., 0:1] - cx
        rel_y = points[..., 1:2] - cy
        along = rel_x * c + rel_y * s
        across = rel_y * c - rel_x * s
        inside = (along.abs() <= hl) & (across.abs() <= hw)  # (N, Q, P)
        p = inside.shape[-1]
        rank = torch.arange(1, p + 1, device=points.device, dtype=torch.int32)
        best, arg = torch.where(inside, rank, 0).max(dim=-1)  # last patch containing the point
        hit = best > 0
        n = points.shape[0]
        rect_mu = self.rect_mu.to(points.dtype).expand(n, -1)
        rect_id = self.rect_id.expand(n, -1)
        mu_patch = rect_mu.gather(1, arg)
        id_patch = rect_id.gather(1, arg)
        base_mu = self.base_mu.to(points.dtype).expand(n)[:, None]
        base_id = self.base_id.expand(n)[:, None]
        return torch.where(hit, mu_patch, base_mu), torch.where(hit, id_patch, base_id)

    def friction_at(
        self, points: Tensor, *, centre: Tensor | None = None, reach: float = 0.0
    ) -> Tensor:
        """Peak friction [-] at world points ``(N, Q, 2)`` -> ``(N, Q)`` (see :meth:`lookup`)."""
        return self.lookup(points, centre=centre, reach=reach)[0]

    def _near(self, centre: Tensor, reach: float) -> Tensor:
        """``(N,)`` bool: a real patch of the row lies within ``reach`` [m] of ``centre``.

        Conservative: a point within ``reach`` of the centre can only be inside a rectangle whose
        along and across distances from the centre are within its half sizes plus ``reach``.
        """
        cx, cy, c, s, hl, hw = self.rects.to(centre.dtype).unbind(-1)  # (B, P) each
        rel_x, rel_y = centre[:, 0:1] - cx, centre[:, 1:2] - cy
        reach = reach + 1e-3  # rounding margin
        along = (rel_x * c + rel_y * s).abs() <= hl + reach
        across = (rel_y * c - rel_x * s).abs() <= hw + reach
        return (along & across & (hl >= 0)).any(dim=1)


def friction_along(
    path: ReferencePath,
    layouts: SurfaceBatch,
    *,
    lateral_offsets: Sequence[float] = (-1.0, 0.0, 1.0),
) -> Tensor:
    """Lowest friction across a strip around the centreline at every path sample.

    Args:
        path: the path (M samples).
        layouts: B layouts.
        lateral_offsets: offsets of the probe points from the centreline [m].

    Returns:
        ``(B, M)`` friction [-] at each sample: the minimum over the probe points, so a patch that
        covers only part of the lane still slows the speed profile down.
    """
    p = path.to(dtype=layouts.rects.dtype, device=layouts.rects.device)
    h = p.heading
    normal = torch.stack([-torch.sin(h), torch.cos(h)], dim=-1)  # (M, 2)
    offs = torch.as_tensor(lateral_offsets, dtype=p.dtype, device=p.device)
    probes = p.xyz[None, :, :2] + offs[:, None, None] * normal[None]  # (K, M, 2)
    flat = probes.reshape(1, -1, 2).expand(layouts.num_layouts, -1, -1)
    mu = layouts.friction_at(flat).reshape(layouts.num_layouts, len(offs), -1)
    return mu.min(dim=1).values
