"""Per-episode surface layouts drawn along a path: patch and layout settings, and the sampler.

:func:`sample_layout` draws one episode's :class:`~gym_s3.tracks.surfaces.SurfaceLayout` (a base
surface plus ice patches) from a :class:`LayoutConfig` or a :class:`LayoutMix`: patches are
Frenet bands along the path (:class:`PatchConfig`: how many, how long, how wide, where), split
into world rectangles that follow the road (:func:`band_to_rects`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import torch

from gym_s3.errors import ConfigError
from gym_s3.tracks.path import ReferencePath
from gym_s3.tracks.surface_table import PatchBand, RectPatch, get_surface
from gym_s3.tracks.surfaces import SurfaceLayout

__all__ = [
    "MAX_PATCHES",
    "LayoutConfig",
    "LayoutMix",
    "PatchConfig",
    "band_to_rects",
    "corner_apexes",
    "sample_layout",
]


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
