"""A bank of K reference paths stored as padded tensors, queried per car.

Car ``i`` follows path ``pid[i]``; sampling and Frenet projection gather that path's samples, so
thousands of cars on different circuits and routes are processed by one set of tensor operations.
The geometry model is the one of :class:`~gym_s3.tracks.path.ReferencePath`: between samples the
path is the circular arc of the sample behind, exact on straights and circles.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from gym_s3.errors import ConfigError
from gym_s3.tracks.path import Frenet, PathSample, ReferencePath


def arc_offset(kappa: Tensor, dist: Tensor) -> tuple[Tensor, Tensor]:
    """Local (forward, left) displacement [m] after ``dist`` metres on an arc of curvature kappa.

    Stable and exact as ``kappa -> 0`` (sinc forms).
    """
    phi = kappa * dist
    forward = dist * torch.sinc(phi / math.pi)
    left = dist * torch.sin(0.5 * phi) * torch.sinc(phi / (2.0 * math.pi))
    return forward, left


def arc_project(rel: Tensor, heading: Tensor, kappa: Tensor) -> tuple[Tensor, Tensor]:
    """Project points onto arcs through the origin.

    Args:
        rel: ``(N, 2)`` point minus arc start [m].
        heading: ``(N,)`` arc tangent at its start [rad].
        kappa: ``(N,)`` arc curvature [1/m].

    Returns:
        ``(along, d)``: arc length from the start to the projection [m] and signed lateral
        offset, + left [m].
    """
    cos_h, sin_h = torch.cos(heading), torch.sin(heading)
    dx = rel[..., 0] * cos_h + rel[..., 1] * sin_h
    dy = -rel[..., 0] * sin_h + rel[..., 1] * cos_h
    # Circle of curvature kappa tangent to the local x axis at the origin (centre (0, 1/kappa)).
    u = torch.sqrt((kappa * dx).square() + (1.0 - kappa * dy).square())
    d = (2.0 * dy - kappa * (dx.square() + dy.square())) / (1.0 + u)
    small = kappa.abs() < 1e-9
    k_safe = torch.where(small, torch.ones_like(kappa), kappa)
    along = torch.where(small, dx, torch.atan2(kappa * dx, 1.0 - kappa * dy) / k_safe)
    return along, d


@dataclass(frozen=True, eq=False)
class PathBank:
    """K paths as padded tensors (``M`` = samples of the longest path).

    Attributes:
        names: path names.
        xyz: ``(K, M, 3)`` sample positions [m].
        heading: ``(K, M)`` tangent heading [rad].
        curvature: ``(K, M)`` curvature [1/m].
        width_left: ``(K, M)`` road width left of the centreline [m].
        width_right: ``(K, M)`` road width right of the centreline [m].
        num_samples: ``(K,)`` int64 samples of each path.
        ds: ``(K,)`` sample spacing [m].
        length: ``(K,)`` path length [m].
        closed: ``(K,)`` bool, loop or open route.
    """

    names: tuple[str, ...]
    xyz: Tensor
    heading: Tensor
    curvature: Tensor
    width_left: Tensor
    width_right: Tensor
    num_samples: Tensor
    ds: Tensor
    length: Tensor
    closed: Tensor

    @staticmethod
    def from_paths(
        paths: Sequence[ReferencePath],
        *,
        device: torch.device | str | None = None,
        dtype: torch.dtype = torch.float32,
    ) -> PathBank:
        """Stack paths (padding repeats each path's last sample)."""
        if not paths:
            raise ConfigError("a PathBank needs at least one path")
        m = max(p.num_samples for p in paths)

        def pad(t: Tensor) -> Tensor:
            extra = m - t.shape[0]
            if extra == 0:
                return t
            return torch.cat([t, t[-1:].expand(extra, *t.shape[1:])])

        def stack(attr: str) -> Tensor:
            return torch.stack([pad(getattr(p, attr).to(torch.float64)) for p in paths]).to(
                device=device, dtype=dtype
            )

        return PathBank(
            names=tuple(p.name for p in paths),
            xyz=stack("xyz"),
            heading=stack("heading"),
            curvature=stack("curvature"),
            width_left=stack("width_left"),
            width_right=stack("width_right"),
            num_samples=torch.tensor([p.num_samples for p in paths], device=device),
            ds=torch.tensor([p.ds for p in paths], device=device, dtype=dtype),
            length=torch.tensor([p.length for p in paths], device=device, dtype=dtype),
            closed=torch.tensor([p.closed for p in paths], device=device),
        )

    @property
    def num_paths(self) -> int:
        """Number of paths K."""
        return len(self.names)

    @property
    def device(self) -> torch.device:
        """Device of the tensors."""
        return self.xyz.device

    # ------------------------------------------------------------------ indexing helpers
    def _wrap_index(self, pid: Tensor, idx: Tensor) -> Tensor:
        """Wrap (closed) or clamp (open) sample indices of the rows' paths; shapes broadcast."""
        m = self.num_samples[pid]
        closed = self.closed[pid]
        while m.ndim < idx.ndim:
            m, closed = m[..., None], closed[..., None]
        return torch.where(closed, torch.remainder(idx, m), torch.minimum(idx.clamp(min=0), m - 1))

    def wrap_s(self, pid: Tensor, s: Tensor) -> Tensor:
        """Arc length wrapped into ``[0, length)`` on closed paths, unchanged on open ones."""
        length = self.length[pid]
        closed = self.closed[pid]
        while length.ndim < s.ndim:
            length, closed = length[..., None], closed[..., None]
        return torch.where(closed, torch.remainder(s, length), s)

    def _gather(self, table: Tensor, pid: Tensor, idx: Tensor) -> Tensor:
        """``table[pid, idx]`` for ``idx`` of shape ``(N,)`` or ``(N, J)``."""
        p = pid if idx.ndim == 1 else pid[:, None].expand_as(idx)
        return table[p, idx]

    # ------------------------------------------------------------------ queries
    def sample(self, pid: Tensor, s: Tensor) -> PathSample:
        """Interpolate the rows' paths at arc lengths ``s`` ``(N,)`` or ``(N, J)`` [m]."""
        s = self.wrap_s(pid, s.to(self.xyz.dtype))
        ds = self.ds[pid] if s.ndim == 1 else self.ds[pid][:, None]
        base = torch.floor(s / ds).to(torch.int64)
        idx = self._wrap_index(pid, base)
        nxt = self._wrap_index(pid, idx + 1)
        rem = s - idx.to(s.dtype) * ds
        frac = (rem / ds).clamp(0.0, 1.0)
        h0 = self._gather(self.heading, pid, idx)
        k0 = self._gather(self.curvature, pid, idx)
        fwd, left = arc_offset(k0, rem)
        cos_h, sin_h = torch.cos(h0), torch.sin(h0)
        x0 = self._gather(self.xyz[..., 0], pid, idx)
        y0 = self._gather(self.xyz[..., 1], pid, idx)

        def lerp(table: Tensor) -> Tensor:
            a = self._gather(table, pid, idx)
            return a + frac * (self._gather(table, pid, nxt) - a)

        return PathSample(
            x=x0 + fwd * cos_h - left * sin_h,
            y=y0 + fwd * sin_h + left * cos_h,
            z=lerp(self.xyz[..., 2]),
            heading=h0 + k0 * rem,
            curvature=lerp(self.curvature),
            width_left=lerp(self.width_left),
            width_right=lerp(self.width_right),
        )

    def nearest_index(self, pid: Tensor, points: Tensor, *, chunk: int = 512) -> Tensor:
        """Global nearest-sample search of each row's own path, ``(N, 2)`` -> ``(N,)`` int64."""
        m = self.xyz.shape[1]
        valid = torch.arange(m, device=self.device)[None, :] < self.num_samples[:, None]  # (K, M)
        out = []
        for start in range(0, points.shape[0], chunk):
            p = pid[start : start + chunk]
            pts = points[start : start + chunk].to(self.xyz.dtype)
            d2 = (pts[:, None, :] - self.xyz[p, :, :2]).square().sum(-1)
            d2 = torch.where(valid[p], d2, torch.full_like(d2, float("inf")))
            out.append(d2.argmin(dim=1))
        if not out:
            return torch.zeros(0, dtype=torch.int64, device=self.device)
        return torch.cat(out)

    def project(
        self, pid: Tensor, points: Tensor, hint: Tensor | None = None, *, window: int = 12
    ) -> Frenet:
        """Project each row's point onto its own path (see ``ReferencePath.project``).

        Args:
            pid: ``(N,)`` int64 path of each row.
            points: ``(N, 2)`` world x, y [m].
            hint: ``(N,)`` sample index of the previous projection; ``None`` searches globally.
            window: half-width of the windowed search [samples].
        """
        pts = points.to(self.xyz.dtype)
        if hint is None:
            idx = self.nearest_index(pid, pts)
        else:
            offsets = torch.arange(-window, window + 1, device=self.device)
            cand = self._wrap_index(pid, hint[:, None] + offsets[None, :])
            cx = self._gather(self.xyz[..., 0], pid, cand)
            cy = self._gather(self.xyz[..., 1], pid, cand)
            d2 = (pts[:, None, 0] - cx).square() + (pts[:, None, 1] - cy).square()
            idx = cand.gather(1, d2.argmin(dim=1, keepdim=True)).squeeze(1)
        return self.project_from(pid, pts, idx)

    def project_from(self, pid: Tensor, pts: Tensor, idx: Tensor) -> Frenet:
        """Exact projection onto the arc through sample ``idx`` of each row's path."""
        h = self._gather(self.heading, pid, idx)
        k = self._gather(self.curvature, pid, idx)
        p0 = torch.stack(
            [self._gather(self.xyz[..., 0], pid, idx), self._gather(self.xyz[..., 1], pid, idx)], -1
        )
        along, d = arc_project(pts - p0, h, k)
        s = self.wrap_s(pid, idx.to(pts.dtype) * self.ds[pid] + along)
        smp = self.sample(pid, s)
        return Frenet(
            s=s,
            d=d,
            heading=h + k * along,
            curvature=smp.curvature,
            index=idx,
            width_left=smp.width_left,
            width_right=smp.width_right,
        )
