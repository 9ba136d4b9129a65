"""The reference-path type and its batched Frenet projection.

A :class:`ReferencePath` is a centreline sampled at a uniform arc-length spacing ``ds`` with its
heading, curvature, elevation and left/right road widths. Between samples ``i`` and ``i + 1`` the
path is the circular arc that leaves sample ``i`` with its heading and arrives with the heading of
sample ``i + 1`` (curvature ``(heading[i+1] - heading[i]) / ds``). Interpolation
(:meth:`ReferencePath.sample`) and projection (:meth:`ReferencePath.project`) use the same arcs, so
``project(sample(s))`` returns ``s``; both are exact on straights and circles and accurate to
``|dκ| ds² / 12`` (far below a millimetre at ``ds = 1 m``) on clothoids.

Conventions: world frame x east, y north, z up [m]; heading is the tangent direction measured
counter-clockwise from +x [rad]; curvature is positive for left turns [1/m]; the lateral offset
``d`` of the Frenet frame is positive to the left of the direction of travel [m].
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import torch
from torch import Tensor

from gym_s3.errors import ConfigError
from gym_s3.tracks.arcs import arc_offset, project_on_arc, wrap_angle
from gym_s3.tracks.bank import PathBank
from gym_s3.tracks.features import PathFeature
from gym_s3.tracks.frenet import Frenet, PathSample

__all__ = [
    "Frenet",
    "PathFeature",
    "PathSample",
    "ReferencePath",
    "arc_offset",
    "project_on_arc",
    "wrap_angle",
]


@dataclass(frozen=True, eq=False)
class ReferencePath:
    """A centreline sampled every ``ds`` metres.

    Attributes:
        name: identifier, e.g. ``"putnam"``.
        xyz: ``(M, 3)`` sample positions [m].
        heading: ``(M,)`` tangent heading at each sample [rad] (continuous, not wrapped).
        curvature: ``(M,)`` curvature at each sample [1/m].
        width_left: ``(M,)`` drivable width left of the centreline [m].
        width_right: ``(M,)`` drivable width right of the centreline [m].
        ds: uniform sample spacing [m].
        closed: whether the path is a loop (sample ``M - 1`` connects back to sample 0).
        description: human-readable provenance, e.g. that a track is an approximation.
        labels: tags such as ``"circuit"``, ``"approximation"``, ``"intersection"``.
        features: corners or manoeuvres along the path, ordered by ``s_start``.
    """

    name: str
    xyz: Tensor
    heading: Tensor
    curvature: Tensor
    width_left: Tensor
    width_right: Tensor
    ds: float
    closed: bool
    description: str = ""
    labels: tuple[str, ...] = field(default_factory=tuple)
    features: tuple[PathFeature, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        """Validate shapes, spacing, finiteness and widths."""
        m = self.xyz.shape[0]
        if self.xyz.ndim != 2 or self.xyz.shape[1] != 3:
            raise ConfigError(
                f"path '{self.name}': xyz must have shape (M, 3), got {tuple(self.xyz.shape)}"
            )
        if m < 3:
            raise ConfigError(f"path '{self.name}': needs at least 3 samples, got {m}")
        for attr in ("heading", "curvature", "width_left", "width_right"):
            if getattr(self, attr).shape != (m,):
                raise ConfigError(
                    f"path '{self.name}': {attr} must have shape ({m},), "
                    f"got {tuple(getattr(self, attr).shape)}"
                )
        if not self.ds > 0.0:
            raise ConfigError(f"path '{self.name}': ds must be positive, got {self.ds}")
        for attr in ("xyz", "heading", "curvature", "width_left", "width_right"):
            if not bool(torch.isfinite(getattr(self, attr)).all()):
                raise ConfigError(f"path '{self.name}': {attr} contains non-finite values")
        if bool((self.width_left < 0).any() or (self.width_right < 0).any()):
            raise ConfigError(f"path '{self.name}': road widths must be non-negative")

    # ------------------------------------------------------------------ basic properties
    @property
    def num_samples(self) -> int:
        """Number of samples M."""
        return int(self.xyz.shape[0])

    @property
    def length(self) -> float:
        """Path length [m] (a closed path includes the closing segment)."""
        m = self.num_samples
        return self.ds * (m if self.closed else m - 1)

    @property
    def s(self) -> Tensor:
        """``(M,)`` arc length of every sample [m]."""
        n = self.num_samples
        return torch.arange(n, dtype=self.xyz.dtype, device=self.xyz.device) * self.ds

    @property
    def device(self) -> torch.device:
        """Device of the path tensors."""
        return self.xyz.device

    @property
    def dtype(self) -> torch.dtype:
        """Floating dtype of the path tensors."""
        return self.xyz.dtype

    @cached_property
    def segment_curvature(self) -> Tensor:
        """``(M,)`` curvature of the arc from sample ``i`` to ``i + 1`` [1/m].

        The last entry of an open path continues the last segment (used to extrapolate).
        """
        m = self.num_samples
        nxt = torch.remainder(torch.arange(1, m + 1, device=self.device), m)
        k = wrap_angle(self.heading[nxt] - self.heading) / self.ds
        if not self.closed:
            k = torch.cat([k[:-1], k[-2:-1]])
        return k

    def to(
        self, device: torch.device | str | None = None, dtype: torch.dtype | None = None
    ) -> ReferencePath:
        """Return a copy on another device and/or dtype (heading and geometry are kept)."""

        def conv(t: Tensor) -> Tensor:
            """Move one tensor."""
            return t.to(device=device, dtype=dtype or t.dtype)

        return ReferencePath(
            name=self.name,
            xyz=conv(self.xyz),
            heading=conv(self.heading),
            curvature=conv(self.curvature),
            width_left=conv(self.width_left),
            width_right=conv(self.width_right),
            ds=self.ds,
            closed=self.closed,
            description=self.description,
            labels=self.labels,
            features=self.features,
        )

    # ------------------------------------------------------------------ arc length helpers
    def wrap_s(self, s: Tensor) -> Tensor:
        """Map arc lengths into ``[0, length)`` on closed paths; identity on open paths."""
        if self.closed:
            return torch.remainder(s, self.length)
        return s

    @cached_property
    def bank(self) -> PathBank:
        """This path as a one-path :class:`~gym_s3.tracks.bank.PathBank` (the implementation)."""
        from gym_s3.tracks.bank import PathBank

        return PathBank.from_paths([self])

    def _pid(self, like: Tensor) -> Tensor:
        """Path index 0 for every row of ``like``."""
        return torch.zeros(like.shape[0], dtype=torch.int64, device=self.device)

    def sample(self, s: Tensor) -> PathSample:
        """Interpolate the path at arc lengths ``s`` of any shape [m].

        Positions and heading follow the segment arcs (see the module docstring); curvature, widths
        and elevation are interpolated linearly. On open paths, points before the start or past the
        end are extrapolated along the first or last arc.
        """
        s = torch.as_tensor(s).to(device=self.device, dtype=self.dtype)
        flat = s.reshape(-1)
        smp = self.bank.sample(self._pid(flat), flat)
        return PathSample(
            *(getattr(smp, f).reshape(s.shape) for f in PathSample.__dataclass_fields__)
        )

    # ------------------------------------------------------------------ projection
    def nearest_index(self, points: Tensor) -> Tensor:
        """Global nearest-sample search; ``points`` ``(N, 2)`` -> ``(N,)`` int64 indices."""
        pts = points.to(device=self.device, dtype=self.dtype)
        return self.bank.nearest_index(self._pid(pts), pts)

    def project(self, points: Tensor, hint: Tensor | None = None, *, window: int = 12) -> Frenet:
        """Project world points onto the path (batched, vectorised).

        Args:
            points: ``(N, 2)`` world x, y [m].
            hint: ``(N,)`` int64 sample index from the previous projection of the same points
                (``Frenet.index``). With a hint only ``2 * window + 1`` samples around it are
                searched, which keeps the cost O(N·window) and keeps a car on its own branch where
                a route crosses itself. Without a hint the search is global.
            window: half-width of the search window in samples; it must cover the distance a point
                can move between calls (``window * ds`` metres).

        Returns:
            The :class:`Frenet` coordinates of every point.
        """
        if points.ndim != 2 or points.shape[-1] != 2:
            raise ConfigError(
                f"project() expects points of shape (N, 2), got {tuple(points.shape)}"
            )
        pts = points.to(device=self.device, dtype=self.dtype)
        if hint is not None and 2 * window + 1 >= self.num_samples:
            hint = None
        return self.bank.project(self._pid(pts), pts, hint, window=window)

    def height_at(self, points: Tensor, hint: Tensor | None = None, *, window: int = 12) -> Tensor:
        """Terrain height [m] at world points: the elevation of the path at their projection.

        Args:
            points: ``(N, Q, 2)`` world x, y [m] (e.g. the Q wheel contact points of N cars).
            hint: optional ``(N,)`` sample index per car (``Frenet.index`` of the car's projection);
                it makes the lookup O(N·Q·window) instead of a global search.
            window: half-width of the search window in samples when ``hint`` is given.

        Returns:
            ``(N, Q)`` elevation [m].
        """
        flat = points.reshape(-1, 2)
        flat_hint = None
        if hint is not None:
            flat_hint = hint[:, None].expand(points.shape[:-1]).reshape(-1)
        fr = self.project(flat, flat_hint, window=window)
        return self.sample(fr.s).z.reshape(points.shape[:-1]).to(points.dtype)

    # ------------------------------------------------------------------ constructors
    @staticmethod
    def from_arrays(
        name: str,
        xyz: Tensor,
        heading: Tensor,
        curvature: Tensor,
        width_left: Tensor,
        width_right: Tensor,
        *,
        ds: float,
        closed: bool,
        description: str = "",
        labels: tuple[str, ...] = (),
        features: tuple[PathFeature, ...] = (),
    ) -> ReferencePath:
        """Build a path from already uniformly sampled arrays (numpy or torch), stored as float64.

        Args:
            name: identifier.
            xyz: ``(M, 3)`` positions [m].
            heading: ``(M,)`` continuous heading [rad].
            curvature: ``(M,)`` curvature [1/m].
            width_left: ``(M,)`` width left of the centreline [m].
            width_right: ``(M,)`` width right of the centreline [m].
            ds: sample spacing [m].
            closed: whether the path is a loop.
            description: provenance text.
            labels: tags.
            features: corners or manoeuvres along the path.
        """
        as64 = {"dtype": torch.float64}
        return ReferencePath(
            name=name,
            xyz=torch.as_tensor(xyz, **as64),
            heading=torch.as_tensor(heading, **as64),
            curvature=torch.as_tensor(curvature, **as64),
            width_left=torch.as_tensor(width_left, **as64),
            width_right=torch.as_tensor(width_right, **as64),
            ds=float(ds),
            closed=closed,
            description=description,
            labels=tuple(labels),
            features=tuple(features),
        )
