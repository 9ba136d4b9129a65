"""The reference-path type and its batched Frenet projection.

A :class:`ReferencePath` is a centreline sampled at a uniform arc-length spacing ``ds`` with its
heading, curvature, elevation and left/right road widths. Between samples the path is treated as a
circular arc with the curvature of the sample behind, so projection and interpolation are exact on
straights and circles and second-order accurate on clothoids.

Conventions: world frame x east, y north, z up [m]; heading is the tangent direction measured
counter-clockwise from +x [rad]; curvature is positive for left turns [1/m]; the lateral offset
``d`` of the Frenet frame is positive to the left of the direction of travel [m].
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
from torch import Tensor

from gym_s3.errors import ConfigError


def wrap_angle(angle: Tensor) -> Tensor:
    """Wrap angles [rad] to ``[-pi, pi)`` elementwise."""
    return torch.remainder(angle + math.pi, 2.0 * math.pi) - math.pi


def _arc_offset(kappa: Tensor, ds: Tensor) -> tuple[Tensor, Tensor]:
    """Local (forward, left) displacement [m] after driving ``ds`` on an arc of curvature ``kappa``.

    Uses sinc forms that stay exact and stable as ``kappa -> 0``.
    """
    phi = kappa * ds
    forward = ds * torch.sinc(phi / math.pi)
    left = ds * torch.sin(0.5 * phi) * torch.sinc(phi / (2.0 * math.pi))
    return forward, left


@dataclass(frozen=True)
class Frenet:
    """Batched projection of N points onto a path.

    Attributes:
        s: ``(N,)`` arc length of the projection [m] (in ``[0, length)`` on closed paths; may fall
            outside ``[0, length]`` before the start or past the end of an open path).
        d: ``(N,)`` signed lateral offset, positive left [m].
        heading: ``(N,)`` path heading at the projection [rad].
        curvature: ``(N,)`` path curvature at the projection [1/m].
        index: ``(N,)`` int64 index of the sample the projection was made from (the hint for the
            next call).
        width_left: ``(N,)`` road width left of the centreline at ``s`` [m].
        width_right: ``(N,)`` road width right of the centreline at ``s`` [m].
    """

    s: Tensor
    d: Tensor
    heading: Tensor
    curvature: Tensor
    index: Tensor
    width_left: Tensor
    width_right: Tensor


@dataclass(frozen=True)
class PathSample:
    """Path attributes interpolated at arbitrary arc lengths; every field has the shape of ``s``.

    Attributes:
        x: world x [m].
        y: world y [m].
        z: elevation [m].
        heading: tangent heading [rad].
        curvature: curvature [1/m].
        width_left: width left of the centreline [m].
        width_right: width right of the centreline [m].
    """

    x: Tensor
    y: Tensor
    z: Tensor
    heading: Tensor
    curvature: Tensor
    width_left: Tensor
    width_right: Tensor


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

    def __post_init__(self) -> None:
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
        if not bool(torch.isfinite(self.xyz).all()):
            raise ConfigError(f"path '{self.name}': xyz contains non-finite values")

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

    def to(
        self, device: torch.device | str | None = None, dtype: torch.dtype | None = None
    ) -> ReferencePath:
        """Return a copy on another device and/or dtype (heading and geometry are kept)."""

        def conv(t: Tensor) -> Tensor:
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
        )

    # ------------------------------------------------------------------ arc length helpers
    def wrap_s(self, s: Tensor) -> Tensor:
        """Map arc lengths into ``[0, length)`` on closed paths; identity on open paths."""
        if self.closed:
            return torch.remainder(s, self.length)
        return s

    def _split(self, s: Tensor) -> tuple[Tensor, Tensor]:
        """Split arc lengths into a base sample index ``(...,)`` and the distance past it [m]."""
        m = self.num_samples
        s = self.wrap_s(s)
        idx = torch.floor(s / self.ds).to(torch.int64)
        if self.closed:
            idx = torch.remainder(idx, m)
        else:
            idx = idx.clamp(0, m - 1)
        return idx, s - idx.to(s.dtype) * self.ds

    def sample(self, s: Tensor) -> PathSample:
        """Interpolate the path at arc lengths ``s`` of any shape [m].

        Positions follow the sample's circular arc; widths and elevation are interpolated linearly.
        On open paths, points before the start or past the end are extrapolated along the arc of
        the first or last sample.
        """
        s = s.to(self.dtype)
        idx, rem = self._split(s)
        m = self.num_samples
        nxt = torch.remainder(idx + 1, m) if self.closed else (idx + 1).clamp(max=m - 1)
        frac = (rem / self.ds).clamp(0.0, 1.0)
        h0 = self.heading[idx]
        k0 = self.curvature[idx]
        fwd, left = _arc_offset(k0, rem)
        cos_h, sin_h = torch.cos(h0), torch.sin(h0)
        x = self.xyz[idx, 0] + fwd * cos_h - left * sin_h
        y = self.xyz[idx, 1] + fwd * sin_h + left * cos_h

        def lerp(values: Tensor) -> Tensor:
            return values[idx] + frac * (values[nxt] - values[idx])

        k1 = self.curvature[nxt]
        return PathSample(
            x=x,
            y=y,
            z=lerp(self.xyz[:, 2]),
            heading=h0 + k0 * rem,
            curvature=k0 + frac * (k1 - k0),
            width_left=lerp(self.width_left),
            width_right=lerp(self.width_right),
        )

    # ------------------------------------------------------------------ projection
    def nearest_index(self, points: Tensor, *, chunk: int = 1024) -> Tensor:
        """Global nearest-sample search; ``points`` ``(N, 2)`` -> ``(N,)`` int64 indices.

        O(N·M); used to initialise the windowed search (after a reset or teleport).
        """
        pts = points.to(self.dtype)
        xy = self.xyz[:, :2]
        out = []
        for start in range(0, pts.shape[0], chunk):
            block = pts[start : start + chunk]
            dist2 = (block[:, None, :] - xy[None, :, :]).square().sum(-1)
            out.append(dist2.argmin(dim=1))
        if not out:
            return torch.zeros(0, dtype=torch.int64, device=self.device)
        return torch.cat(out)

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
        pts = points.to(self.dtype)
        m = self.num_samples
        if hint is None or 2 * window + 1 >= m:
            idx = self.nearest_index(pts)
        else:
            offsets = torch.arange(-window, window + 1, device=self.device)
            cand = hint.to(self.device)[:, None] + offsets[None, :]
            cand = torch.remainder(cand, m) if self.closed else cand.clamp(0, m - 1)
            dist2 = (pts[:, None, :] - self.xyz[cand, :2]).square().sum(-1)
            idx = cand.gather(1, dist2.argmin(dim=1, keepdim=True)).squeeze(1)
        return self._project_from(pts, idx)

    def _project_from(self, pts: Tensor, idx: Tensor) -> Frenet:
        """Exact projection onto the circular arc through sample ``idx``; see :meth:`project`."""
        h = self.heading[idx]
        k = self.curvature[idx]
        rel = pts - self.xyz[idx, :2]
        cos_h, sin_h = torch.cos(h), torch.sin(h)
        dx = rel[:, 0] * cos_h + rel[:, 1] * sin_h  # along the tangent
        dy = -rel[:, 0] * sin_h + rel[:, 1] * cos_h  # to the left
        # Arc of curvature k tangent to the local x axis at the origin (centre at (0, 1/k)).
        u = torch.sqrt((k * dx).square() + (1.0 - k * dy).square())
        d = (2.0 * dy - k * (dx.square() + dy.square())) / (1.0 + u)
        small = k.abs() < 1e-9
        k_safe = torch.where(small, torch.ones_like(k), k)
        ds_arc = torch.where(small, dx, torch.atan2(k * dx, 1.0 - k * dy) / k_safe)
        s = idx.to(self.dtype) * self.ds + ds_arc
        s = self.wrap_s(s)
        smp = self.sample(s)
        return Frenet(
            s=s,
            d=d,
            heading=h + k * ds_arc,
            curvature=smp.curvature,
            index=idx,
            width_left=smp.width_left,
            width_right=smp.width_right,
        )

    def height_at(self, points: Tensor) -> Tensor:
        """Terrain height [m] at world points: the elevation of the nearest centreline point.

        Args:
            points: ``(N, Q, 2)`` world x, y [m].

        Returns:
            ``(N, Q)`` elevation [m].
        """
        flat = points.reshape(-1, 2)
        fr = self.project(flat)
        return self.sample(fr.s).z.reshape(points.shape[:-1])

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
    ) -> ReferencePath:
        """Build a path from already uniformly sampled float64 arrays (see :mod:`.geometry`)."""
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
            labels=labels,
        )
