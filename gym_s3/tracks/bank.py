"""The one batched implementation of path interpolation and Frenet projection.

A :class:`PathBank` stacks K reference paths into padded tensors; row ``i`` of a query follows path
``pid[i]``, so thousands of cars on different circuits and routes are served by one set of tensor
operations. :class:`~gym_s3.tracks.path.ReferencePath` delegates its ``sample`` and ``project`` to a
one-path bank, so there is a single implementation of the geometry.

Geometry model (see :mod:`gym_s3.tracks.path`): between samples ``i`` and ``i + 1`` the path is
the circular arc that leaves sample ``i`` with its heading and has curvature
``(heading[i+1] - heading[i]) / ds``; curvature, widths and elevation are interpolated linearly.
Open paths extrapolate along their first and last arcs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
from torch import Tensor

from gym_s3.errors import ConfigError
from gym_s3.tracks.arcs import arc_offset, project_on_arc
from gym_s3.tracks.frenet import Frenet, PathSample

if TYPE_CHECKING:  # pragma: no cover
    from gym_s3.tracks.path import ReferencePath


@dataclass(frozen=True, eq=False)
class PathBank:
    """K paths as padded tensors (``M`` = samples of the longest path; padding repeats the end).

    Attributes:
        names: path names.
        xyz: ``(K, M, 3)`` sample positions [m].
        heading: ``(K, M)`` tangent heading [rad].
        cos_heading: ``(K, M)`` cosine of the heading.
        sin_heading: ``(K, M)`` sine of the heading.
        segment_curvature: ``(K, M)`` curvature of the arc from sample ``i`` to ``i + 1`` [1/m].
        curvature: ``(K, M)`` curvature at the samples [1/m].
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
    cos_heading: Tensor
    sin_heading: Tensor
    segment_curvature: Tensor
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
        dtype: torch.dtype | None = None,
    ) -> PathBank:
        """Stack paths; ``dtype``/``device`` default to those of the first path."""
        if not paths:
            raise ConfigError("a PathBank needs at least one path")
        dtype = dtype or paths[0].dtype
        device = device if device is not None else paths[0].device
        m = max(p.num_samples for p in paths)

        def pad(t: Tensor) -> Tensor:
            extra = m - t.shape[0]
            return t if extra == 0 else torch.cat([t, t[-1:].expand(extra, *t.shape[1:])])

        def stack(values: Sequence[Tensor]) -> Tensor:
            return torch.stack([pad(v.to(torch.float64)) for v in values]).to(device, dtype)

        heading = stack([p.heading for p in paths])
        return PathBank(
            names=tuple(p.name for p in paths),
            xyz=stack([p.xyz for p in paths]),
            heading=heading,
            cos_heading=torch.cos(heading),
            sin_heading=torch.sin(heading),
            segment_curvature=stack([p.segment_curvature for p in paths]),
            curvature=stack([p.curvature for p in paths]),
            width_left=stack([p.width_left for p in paths]),
            width_right=stack([p.width_right for p in paths]),
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

    @property
    def dtype(self) -> torch.dtype:
        """Float dtype of the tensors."""
        return self.xyz.dtype

    # ------------------------------------------------------------------ per-row helpers
    def _rows(self, pid: Tensor, like: Tensor) -> Tensor:
        """``pid`` broadcast to the shape of ``like`` (``(N,)`` or ``(N, J)``)."""
        return pid if like.ndim == 1 else pid[:, None].expand_as(like)

    def wrap_s(self, pid: Tensor, s: Tensor) -> Tensor:
        """Arc length wrapped into ``[0, length)`` on closed paths, unchanged on open ones."""
        p = self._rows(pid, s)
        return torch.where(self.closed[p], torch.remainder(s, self.length[p]), s)

    def split(self, pid: Tensor, s: Tensor) -> tuple[Tensor, Tensor]:
        """Arc lengths to the index of the segment they lie on and the distance past its start.

        On open paths the index is clamped to ``[0, M - 2]`` so points outside the path
        extrapolate along the first or last segment.
        """
        p = self._rows(pid, s)
        s = self.wrap_s(pid, s)
        ds = self.ds[p]
        m = self.num_samples[p]
        idx = torch.floor(s / ds).to(torch.int64)
        idx = torch.where(self.closed[p], torch.remainder(idx, m), idx.clamp(min=0))
        idx = torch.where(self.closed[p], idx, torch.minimum(idx, m - 2))
        return idx, s - idx.to(s.dtype) * ds

    def next_index(self, pid: Tensor, idx: Tensor) -> Tensor:
        """Sample after ``idx`` (wrapping on closed paths, clamped on open ones)."""
        p = self._rows(pid, idx)
        m = self.num_samples[p]
        return torch.where(
            self.closed[p], torch.remainder(idx + 1, m), torch.minimum(idx + 1, m - 1)
        )

    def interpolate(self, table: Tensor, rows: Tensor, pid: Tensor, s: Tensor) -> Tensor:
        """Linear interpolation of a per-sample ``table`` ``(R, M)`` at ``s`` on the rows' paths.

        Args:
            table: values at the samples, one row per ``rows`` entry (e.g. speed profiles).
            rows: ``(N,)`` row of ``table`` for each query row.
            pid: ``(N,)`` path of each query row.
            s: ``(N,)`` or ``(N, J)`` arc lengths [m].
        """
        idx, rem = self.split(pid, s)
        nxt = self.next_index(pid, idx)
        p = self._rows(pid, s)
        frac = (rem / self.ds[p]).clamp(0.0, 1.0)
        r = self._rows(rows, s)
        a = table[r, idx]
        return a + frac * (table[r, nxt] - a)

    # ------------------------------------------------------------------ queries
    def sample(self, pid: Tensor, s: Tensor) -> PathSample:
        """Path attributes of each row's path at arc lengths ``s`` ``(N,)`` or ``(N, J)`` [m]."""
        s = s.to(device=self.device, dtype=self.dtype)
        idx, rem = self.split(pid, s)
        nxt = self.next_index(pid, idx)
        p = self._rows(pid, s)
        frac = (rem / self.ds[p]).clamp(0.0, 1.0)
        k_seg = self.segment_curvature[p, idx]
        fwd, left = arc_offset(k_seg, rem)
        cos_h, sin_h = self.cos_heading[p, idx], self.sin_heading[p, idx]

        def lerp(table: Tensor) -> Tensor:
            a = table[p, idx]
            return a + frac * (table[p, nxt] - a)

        return PathSample(
            x=self.xyz[p, idx, 0] + fwd * cos_h - left * sin_h,
            y=self.xyz[p, idx, 1] + fwd * sin_h + left * cos_h,
            z=lerp(self.xyz[..., 2]),
            heading=self.heading[p, idx] + k_seg * rem,
            curvature=lerp(self.curvature),
            width_left=lerp(self.width_left),
            width_right=lerp(self.width_right),
        )

    def nearest_index(self, pid: Tensor, points: Tensor, *, chunk: int = 2048) -> Tensor:
        """Global nearest sample of each row's own path: ``(N, 2)`` -> ``(N,)`` int64.

        O(N·M): matrix-product distances per path (centred for conditioning), then an exact
        check of the neighbours. Used after resets and teleports, not in the per-step hot path
        (it synchronises with the host to group rows by path).
        """
        pts = points.to(device=self.device, dtype=self.dtype)
        out = torch.zeros(pts.shape[0], dtype=torch.int64, device=self.device)
        for k in torch.unique(pid).tolist():
            rows = torch.nonzero(pid == k).squeeze(1)
            xy = self.xyz[k, : int(self.num_samples[k]), :2]
            centre = xy.mean(dim=0)
            sub = pts[rows] - centre
            found = [
                torch.cdist(sub[i : i + chunk], xy - centre).argmin(dim=1)
                for i in range(0, sub.shape[0], chunk)
            ]
            out[rows] = torch.cat(found)
        return self.window_argmin(pid, pts, out, 2)

    def window_argmin(self, pid: Tensor, points: Tensor, hint: Tensor, window: int) -> Tensor:
        """Nearest sample among the ``2 window + 1`` samples around ``hint`` on each row's path."""
        offsets = torch.arange(-window, window + 1, device=self.device)
        cand = hint.to(self.device)[:, None] + offsets[None, :]
        p = pid[:, None].expand_as(cand)
        m = self.num_samples[p]
        cand = torch.where(self.closed[p], torch.remainder(cand, m),
                           torch.minimum(cand.clamp(min=0), m - 1))  # fmt: skip
        pts = points.to(self.dtype)
        d2 = (pts[:, None, 0] - self.xyz[p, cand, 0]).square()
        d2 = d2 + (pts[:, None, 1] - self.xyz[p, cand, 1]).square()
        return cand.gather(1, d2.argmin(dim=1, keepdim=True)).squeeze(1)

    def project(
        self, pid: Tensor, points: Tensor, hint: Tensor | None = None, *, window: int = 12
    ) -> Frenet:
        """Project each row's point onto its own path.

        Args:
            pid: ``(N,)`` int64 path of each row.
            points: ``(N, 2)`` world x, y [m].
            hint: ``(N,)`` sample index of the previous projection (``Frenet.index``). With a hint
                only ``2 * window + 1`` samples around it are searched: O(N·window), and a car
                stays on its own branch where a route crosses itself. ``None`` searches globally.
            window: half-width of the windowed search [samples]; it must cover the distance a
                point can move between calls.
        """
        if points.ndim != 2 or points.shape[-1] != 2:
            raise ConfigError(
                f"project() expects points of shape (N, 2), got {tuple(points.shape)}"
            )
        if window < 1:
            raise ConfigError(f"project() window must be at least 1 sample, got {window}")
        pts = points.to(device=self.device, dtype=self.dtype)
        if hint is None:
            idx = self.nearest_index(pid, pts)
        else:
            if hint.shape != (pts.shape[0],):
                raise ConfigError(
                    f"project() hint must have shape ({pts.shape[0]},), got {tuple(hint.shape)}"
                )
            idx = self.window_argmin(pid, pts, hint, window)
        return self.project_from(pid, pts, idx)

    def project_from(self, pid: Tensor, pts: Tensor, idx: Tensor) -> Frenet:
        """Project onto the arc after the nearest sample ``idx``, or the one before it.

        A point behind the normal at sample ``idx`` belongs to the arc of segment ``idx - 1``
        (chosen per row with ``where``, no host synchronisation).
        """
        m = self.num_samples[pid]
        closed = self.closed[pid]
        fwd = torch.where(closed, idx, torch.minimum(idx, m - 2))
        prev = torch.where(closed, torch.remainder(idx - 1, m), (idx - 1).clamp(min=0))
        rel = pts - self.xyz[pid, idx, :2]
        behind = rel[:, 0] * self.cos_heading[pid, idx] + rel[:, 1] * self.sin_heading[pid, idx] < 0
        base = torch.where(behind & (prev != fwd), prev, fwd)
        rel = pts - self.xyz[pid, base, :2]
        c, s_ = self.cos_heading[pid, base], self.sin_heading[pid, base]
        k_seg = self.segment_curvature[pid, base]
        along, d = project_on_arc(rel[:, 0] * c + rel[:, 1] * s_, rel[:, 1] * c - rel[:, 0] * s_,
                                  k_seg)  # fmt: skip
        nxt = self.next_index(pid, base)
        frac = (along / self.ds[pid]).clamp(0.0, 1.0)

        def lerp(table: Tensor) -> Tensor:
            a = table[pid, base]
            return a + frac * (table[pid, nxt] - a)

        return Frenet(
            s=self.wrap_s(pid, base.to(self.dtype) * self.ds[pid] + along),
            d=d,
            heading=self.heading[pid, base] + k_seg * along,
            curvature=lerp(self.curvature),
            index=idx,
            width_left=lerp(self.width_left),
            width_right=lerp(self.width_right),
        )
