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
from typing import Literal

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
    "LayoutConfig",
    "LayoutMix",
    "PatchBand",
    "PatchConfig",
    "RectPatch",
    "Surface",
    "SurfaceBatch",
    "SurfaceLayout",
    "band_to_rects",
    "friction_along",
    "get_surface",
    "sample_layout",
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

    def lookup(self, points: Tensor) -> tuple[Tensor, Tensor]:
        """Friction and surface id at world points.

        Args:
            points: ``(N, Q, 2)`` world x, y [m]; ``N`` equals ``B`` or ``B == 1``.

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
        """Peak friction [-] at world points ``(N, Q, 2)`` -> ``(N, Q)``.

        With ``centre`` ``(N, 2)`` and ``reach`` [m] such that every point of row ``i`` lies
        within ``reach`` of ``centre[i]`` (a car's wheels around its centre), eager CPU calls test
        only the rows whose centre is within ``reach`` of one of their patches (identical values;
        the others stand on their base surface). Compiled and accelerator calls test every row.
        """
        if centre is None or points.device.type != "cpu" or torch.compiler.is_compiling():
            return self.lookup(points)[0]
        rows = self._near(centre.to(points.dtype), reach).nonzero()[:, 0]
        n = points.shape[0]
        mu = self.base_mu.to(points.dtype).expand(n)[:, None].expand(n, points.shape[1])
        if rows.numel() == 0:
            return mu.clone()
        near = self if self.num_layouts == 1 else self.index(rows)
        return mu.index_copy(0, rows, near.lookup(points[rows])[0])

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


#: Most patches one episode may have (a road of 5 km holds 200 patches 25 m apart).
MAX_PATCHES = 200


@dataclass(frozen=True)
class PatchConfig:
    """How ice (or other) patches are drawn along a path for each episode.

    Attributes:
        count: inclusive range of the number of patches per episode.
        length_m: range of patch length along the path [m].
        coverage: range of the fraction of the road width a patch covers [-]; a patch touches one
            edge, the other edge or sits in the middle with equal probability.
        surface: surface of the patches.
        mu: optional range of the patch friction [-], drawn uniformly per patch; ``None`` uses the
            surface's tabulated value (e.g. 0.10 for ice).
        piece_length_m: longest rectangle a patch is made of [m]; on curves the pieces are
            shorter, so the rectangles follow the band within 5 cm (see :func:`band_to_rects`).
        margin_m: distance kept free after the start of an open path [m].
        placement: ``"anywhere"`` (uniform along the path) or ``"corners"``: where ice hurts,
            each patch in the braking zone before a corner apex (ending 0-20 m before it), on
            the apex (centred on it) or on the exit (starting 0-20 m after it), with equal
            probability; apexes are the curvature peaks sharper than 1/200 m (uniform placement
            on a path without corners).
    """

    count: tuple[int, int] = (0, 0)
    length_m: tuple[float, float] = (8.0, 30.0)
    coverage: tuple[float, float] = (0.4, 1.0)
    surface: str = "ice"
    mu: tuple[float, float] | None = None
    piece_length_m: float = 30.0
    margin_m: float = 30.0
    placement: Literal["anywhere", "corners"] = "anywhere"

    def __post_init__(self) -> None:
        """Validate the fields (raises :class:`~gym_s3.errors.ConfigError`)."""
        if self.placement not in ("anywhere", "corners"):
            raise ConfigError(
                f"patch placement must be 'anywhere' or 'corners', got {self.placement!r}"
            )
        lo, hi = self.count
        if not 0 <= lo <= hi:
            raise ConfigError(f"patch count range must satisfy 0 <= min <= max, got {self.count}")
        if hi > MAX_PATCHES:
            raise ConfigError(
                f"patch count {hi} is more than {MAX_PATCHES} patches per episode (every patch "
                f"costs time on every step); use at most {MAX_PATCHES}"
            )
        if not 0 < self.length_m[0] <= self.length_m[1]:
            raise ConfigError(f"patch length range must be positive and ordered: {self.length_m}")
        if not 0 < self.coverage[0] <= self.coverage[1] <= 1.0:
            raise ConfigError(f"patch coverage must be within (0, 1] and ordered: {self.coverage}")
        if self.mu is not None and not 0.0 <= self.mu[0] <= self.mu[1] <= 3.0:
            raise ConfigError(f"patch friction range must lie in [0, 3] and be ordered: {self.mu}")
        if self.piece_length_m <= 0 or self.margin_m < 0:
            raise ConfigError("piece_length_m must be positive and margin_m non-negative")
        get_surface(self.surface)


@dataclass(frozen=True)
class LayoutConfig:
    """The per-episode surface distribution: base surfaces with weights, plus patches.

    Attributes:
        base: candidate base surfaces.
        weights: sampling weights of ``base`` (uniform when empty).
        patches: patch distribution.
    """

    base: tuple[str, ...] = ("asphalt",)
    weights: tuple[float, ...] = ()
    patches: PatchConfig = field(default_factory=PatchConfig)

    def __post_init__(self) -> None:
        """Validate the fields (raises :class:`~gym_s3.errors.ConfigError`)."""
        if not self.base:
            raise ConfigError("LayoutConfig.base needs at least one surface")
        for name in self.base:
            get_surface(name)
        if self.weights and (len(self.weights) != len(self.base) or min(self.weights) < 0):
            raise ConfigError("LayoutConfig.weights must be non-negative, one per base surface")


@dataclass(frozen=True)
class LayoutMix:
    """A mixture of surface distributions: each layout is drawn from one of ``options``.

    Attributes:
        options: the distributions (e.g. full-ice laps, asphalt with ice at the corners,
            asphalt -> ice transitions).
        weights: sampling weights of ``options`` (uniform when empty).
    """

    options: tuple[LayoutConfig, ...]
    weights: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        """Validate the fields (raises :class:`~gym_s3.errors.ConfigError`)."""
        if not self.options or not all(isinstance(o, LayoutConfig) for o in self.options):
            raise ConfigError("LayoutMix.options needs at least one LayoutConfig")
        if self.weights and (len(self.weights) != len(self.options) or min(self.weights) < 0):
            raise ConfigError("LayoutMix.weights must be non-negative, one per option")


def _pick(rng: np.random.Generator, count: int, weights: tuple[float, ...]) -> int:
    """Index drawn from ``count`` choices with ``weights`` (uniform when empty)."""
    probs = None
    if weights:
        w = np.asarray(weights, dtype=np.float64)
        probs = w / w.sum()
    return int(rng.choice(count, p=probs))


def corner_apexes(path: ReferencePath, min_curvature: float = 1.0 / 200.0) -> np.ndarray:
    """Arc lengths [m] of the corner apexes: local peaks of ``|curvature|`` above the threshold."""
    k = path.curvature.abs().detach().cpu().numpy()
    prev, nxt = np.roll(k, 1), np.roll(k, -1)
    if not path.closed:
        prev[0], nxt[-1] = np.inf, np.inf
    peak = (k >= prev) & (k > nxt) & (k > min_curvature)
    return np.flatnonzero(peak) * path.ds


def _patch_start(path: ReferencePath, pc: PatchConfig, length: float, rng, apexes) -> float:
    """Start arc length [m] of one patch of ``length`` (see ``PatchConfig.placement``)."""
    lo_s = 0.0 if path.closed else pc.margin_m
    hi_s = path.length - (0.0 if path.closed else length)
    if pc.placement == "corners" and len(apexes):
        apex = float(apexes[int(rng.integers(len(apexes)))])
        phase = int(rng.integers(0, 3))  # 0: braking zone, 1: apex, 2: exit
        gap = float(rng.uniform(0.0, 20.0))
        s0 = (apex - length - gap, apex - length / 2, apex + gap)[phase]
        return s0 % path.length if path.closed else float(np.clip(s0, lo_s, max(lo_s, hi_s)))
    return float(rng.uniform(lo_s, max(lo_s, hi_s)))


def band_to_rects(
    path: ReferencePath, band: PatchBand, piece_length_m: float, *, sagitta_m: float = 0.05
) -> list[RectPatch]:
    """Split a Frenet band into world rectangles that follow the path.

    The pieces are as long as possible (at most ``piece_length_m``) while the band's curved edges
    stay within ``sagitta_m`` of each rectangle: one rectangle on a straight, short ones in a
    hairpin. Consecutive rectangles overlap slightly so no gap opens on the outside of a curve.

    Args:
        path: the path the band is drawn along.
        band: the patch in Frenet coordinates.
        piece_length_m: longest rectangle [m].
        sagitta_m: largest gap between a rectangle and the curved band edge [m].
    """
    probe = torch.linspace(
        band.s_start,
        band.s_start + band.length,
        max(2, int(band.length / 0.5) + 1),
        dtype=torch.float64,
    )
    kappa = float(path.to(dtype=torch.float64).sample(probe).curvature.abs().max())
    reach = max(abs(band.d_min), abs(band.d_max))
    k_edge = kappa / max(1.0 - kappa * reach, 0.2)  # curvature of the band's inner edge
    longest = np.sqrt(8.0 * sagitta_m / k_edge) if k_edge > 1e-12 else np.inf
    pieces = max(1, int(np.ceil(band.length / min(piece_length_m, longest))))
    edges = band.s_start + np.linspace(0.0, band.length, pieces + 1)
    mids = torch.tensor(0.5 * (edges[:-1] + edges[1:]), dtype=torch.float64)
    smp = path.to(dtype=torch.float64).sample(mids)
    d_mid = 0.5 * (band.d_min + band.d_max)
    rects = []
    for i in range(pieces):
        h = float(smp.heading[i])
        k = float(smp.curvature[i])
        seg = float(edges[i + 1] - edges[i])
        # Outer edge of a curved band is longer than the centreline piece; small overlap hides
        # the gaps between consecutive rectangles.
        stretch = 1.0 + abs(k) * max(abs(band.d_min), abs(band.d_max))
        rects.append(
            RectPatch(
                cx=float(smp.x[i]) - d_mid * np.sin(h),
                cy=float(smp.y[i]) + d_mid * np.cos(h),
                yaw=h,
                length=seg * stretch + 0.2,
                width=band.d_max - band.d_min,
                mu=band.mu,
                surface=band.surface,
            )
        )
    return rects


def sample_layout(
    path: ReferencePath, config: LayoutConfig | LayoutMix, rng: np.random.Generator
) -> SurfaceLayout:
    """Draw one episode's surface layout along ``path`` (deterministic for a seeded ``rng``)."""
    if isinstance(config, LayoutMix):
        config = config.options[_pick(rng, len(config.options), config.weights)]
    base = get_surface(config.base[_pick(rng, len(config.base), config.weights)])
    pc = config.patches
    count = int(rng.integers(pc.count[0], pc.count[1] + 1))
    patch_surface = get_surface(pc.surface)
    bands: list[PatchBand] = []
    rects: list[RectPatch] = []
    apexes = corner_apexes(path) if pc.placement == "corners" and count else np.zeros(0)
    for _ in range(count):
        length = float(rng.uniform(*pc.length_m))
        s0 = _patch_start(path, pc, length, rng, apexes)
        smp = path.sample(torch.tensor([s0 + length / 2], dtype=path.dtype))
        w_left, w_right = float(smp.width_left[0]), float(smp.width_right[0])
        width = (w_left + w_right) * float(rng.uniform(*pc.coverage))
        side = int(rng.integers(0, 3))  # 0: right edge, 1: middle, 2: left edge
        if side == 0:
            d_min = -w_right
        elif side == 2:
            d_min = w_left - width
        else:
            d_min = 0.5 * (w_left - w_right) - width / 2
        mu = patch_surface.mu if pc.mu is None else float(rng.uniform(*pc.mu))
        band = PatchBand(s0, length, d_min, d_min + width, patch_surface.name, mu)
        bands.append(band)
        rects.extend(band_to_rects(path, band, pc.piece_length_m))
    return SurfaceLayout(base=base.name, base_mu=base.mu, patches=tuple(rects), bands=tuple(bands))


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
