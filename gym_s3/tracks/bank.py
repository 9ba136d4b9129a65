"""The one batched implementation of path interpolation and Frenet projection.

A :class:`PathBank` stacks K reference paths into padded tensors; row ``i`` of a query follows path
``pid[i]``, so thousands of cars on different circuits and routes are served by one set of tensor
operations. :class:`~gym_s3.tracks.path.ReferencePath` delegates its ``sample`` and ``project`` to a
one-path bank, so there is a single implementation of the geometry.

Geometry model (see :mod:`gym_s3.tracks.path`): between samples ``i`` and ``i + 1`` the path is
the circular arc that leaves sample ``i`` with its heading and has curvature
``(heading[i+1] - heading[i]) / ds``; curvature, widths and elevation are interpolated linearly.
Open paths extrapolate along their first and last arcs.

Hot-path layout: every query gathers from flat, wrap-padded copies of the per-sample tables
(:class:`PaddedTables`): path ``k``'s sample ``j`` sits at ``k * stride + pad + j`` for ``j`` in
``[-pad, M + pad)``, wrapped on closed paths and clamped on open ones. A windowed search or a
"next sample" then needs no per-element wrap-around, and every gather is one 1-D
``index_select`` (multi-dimensional advanced indexing is several times slower on the CPU).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import torch
from torch import Tensor

from gym_s3.errors import ConfigError
from gym_s3.tracks.arcs import arc_offset, project_on_arc
from gym_s3.tracks.frenet import Frenet, PathSample
from gym_s3.tracks.padded import Location, PaddedTables, as_column, lerp_slots, periodic, take

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
    _padded: dict = field(default_factory=dict, init=False, repr=False, compare=False)

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

    # ------------------------------------------------------------------ padded tables
    def padded(self, pad: int = 16) -> PaddedTables:
        """The flat, wrap-padded tables with at least ``pad`` samples of margin (cached)."""
        for have, tables in self._padded.items():
            if isinstance(have, int) and have >= pad:
                return tables
        pad = max(pad, 16)
        src = self._padded_source(torch.arange(self.num_paths, device=self.device), pad)

        def ext(table: Tensor) -> Tensor:
            return table.gather(1, src).reshape(-1).contiguous()

        tables = PaddedTables(
            pad=pad,
            stride=src.shape[1],
            x=ext(self.xyz[..., 0]),
            y=ext(self.xyz[..., 1]),
            z=ext(self.xyz[..., 2]),
            cos_heading=ext(self.cos_heading),
            sin_heading=ext(self.sin_heading),
            heading=ext(self.heading),
            segment_curvature=ext(self.segment_curvature),
            curvature=ext(self.curvature),
            width_left=ext(self.width_left),
            width_right=ext(self.width_right),
        )
        self._padded[pad] = tables
        return tables

    def _padded_source(self, row_path: Tensor, pad: int) -> Tensor:
        """``(R, M + 2 pad)`` sample behind each padded slot of rows that follow ``row_path``."""
        j = torch.arange(-pad, self.xyz.shape[1] + pad, device=self.device)[None, :]
        n = self.num_samples[row_path][:, None]
        closed = self.closed[row_path][:, None]
        return torch.where(closed, torch.remainder(j, n), torch.minimum(j.clamp(min=0), n - 1))

    def pad_rows(self, table: Tensor, row_path: Tensor) -> Tensor:
        """A per-sample ``table`` ``(R, M)``, flat and wrap-padded like :meth:`padded`.

        Row ``r`` follows path ``row_path[r]`` (e.g. speed profiles of variants); cached per table
        object.
        """
        pad = self.padded().pad
        key = ("rows", id(table), pad)
        hit = self._padded.get(key)
        if hit is not None and hit[0] is table:
            return hit[1]
        src = self._padded_source(row_path.to(self.device), pad)
        flat = table.gather(1, src).reshape(-1).contiguous()
        self._padded[key] = (table, flat)
        return flat

    # ------------------------------------------------------------------ per-row helpers
    def _per_row(self, table: Tensor, pid: Tensor, like: Tensor) -> Tensor:
        """``table[pid]`` shaped to broadcast against ``like`` (``(N,)`` or ``(N, J)``)."""
        return as_column(table[pid], like)

    def locate(self, pid: Tensor, s: Tensor) -> Location:
        """Arc lengths ``s`` ``(N,)`` or ``(N, J)`` to the segment they lie on (:class:`Location`).

        On open paths the index is clamped to ``[0, M - 2]`` so points outside the path
        extrapolate along the first or last segment. On closed paths ``s`` is wrapped into
        ``[0, L]`` and the index clamped to ``[0, M - 1]``: in float32 the remainder of an ``s`` a
        hair below 0 rounds up to ``L`` itself, and ``floor(s / ds)`` of one a hair below ``L``
        rounds up to ``M``; either point lies at the end of the closing segment (sample 0), not
        a lap's length past the start of segment 0.
        """
        s = s.to(device=self.device, dtype=self.dtype)
        closed = self._per_row(self.closed, pid, s)
        ds = self._per_row(self.ds, pid, s)
        last = self._per_row(self.num_samples - 2 + self.closed.to(torch.int64), pid, s)
        s = torch.where(closed, periodic(s, self._per_row(self.length, pid, s)), s)
        idx = torch.minimum(torch.floor(s / ds).to(torch.int64).clamp(min=0), last)
        rem = s - idx.to(s.dtype) * ds
        return Location(idx=idx, rem=rem, frac=(rem / ds).clamp(0.0, 1.0))

    def split(self, pid: Tensor, s: Tensor) -> tuple[Tensor, Tensor]:
        """Segment index of arc lengths ``s`` and the distance past its start (:meth:`locate`)."""
        loc = self.locate(pid, s)
        return loc.idx, loc.rem

    def next_index(self, pid: Tensor, idx: Tensor) -> Tensor:
        """Sample after ``idx`` (wrapping on closed paths, clamped on open ones)."""
        m = self._per_row(self.num_samples, pid, idx)
        closed = self._per_row(self.closed, pid, idx)
        return torch.where(closed, torch.remainder(idx + 1, m), torch.minimum(idx + 1, m - 1))

    def interpolate(
        self,
        table: Tensor,
        table_path: Tensor,
        rows: Tensor,
        s: Tensor,
        *,
        loc: Location | None = None,
    ) -> Tensor:
        """Linear interpolation of a per-sample ``table`` ``(R, M)`` at ``s`` on the rows' paths.

        Args:
            table: values at the samples of each row's path (e.g. speed profiles).
            table_path: ``(R,)`` int64 path of each row of ``table``.
            rows: ``(N,)`` row of ``table`` for each query row.
            s: ``(N,)`` or ``(N, J)`` arc lengths [m].
            loc: ``locate(table_path[rows], s)`` when the caller has it already.
        """
        if loc is None:
            loc = self.locate(table_path[rows], s)
        flat = self.padded().flat(as_column(rows, loc.idx), loc.idx)
        return lerp_slots(self.pad_rows(table, table_path), flat, loc.frac)

    # ------------------------------------------------------------------ queries
    def position(self, pid: Tensor, loc: Location) -> tuple[Tensor, Tensor]:
        """World ``(x, y)`` [m] of each row's path at ``loc`` (shape of ``loc.idx``)."""
        t = self.padded()
        flat = t.flat(as_column(pid, loc.idx), loc.idx)
        fwd, left = arc_offset(take(t.segment_curvature, flat), loc.rem)
        cos_h, sin_h = take(t.cos_heading, flat), take(t.sin_heading, flat)
        return (
            take(t.x, flat) + fwd * cos_h - left * sin_h,
            take(t.y, flat) + fwd * sin_h + left * cos_h,
        )

    def sample(self, pid: Tensor, s: Tensor, *, loc: Location | None = None) -> PathSample:
        """Path attributes of each row's path at arc lengths ``s`` ``(N,)`` or ``(N, J)`` [m].

        ``loc`` is ``locate(pid, s)`` when the caller has it already.
        """
        if loc is None:
            loc = self.locate(pid, s)
        x, y = self.position(pid, loc)
        t = self.padded()
        flat = t.flat(as_column(pid, loc.idx), loc.idx)
        return PathSample(
            x=x,
            y=y,
            z=lerp_slots(t.z, flat, loc.frac),
            heading=take(t.heading, flat) + take(t.segment_curvature, flat) * loc.rem,
            curvature=lerp_slots(t.curvature, flat, loc.frac),
            width_left=lerp_slots(t.width_left, flat, loc.frac),
            width_right=lerp_slots(t.width_right, flat, loc.frac),
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
        """Nearest sample among the ``2 window + 1`` samples around ``hint`` on each row's path.

        Ties go to the first candidate (from ``hint - window`` upwards); the candidates are
        wrapped on closed paths and clamped to the path on open ones.
        """
        t = self.padded(window)
        offsets = torch.arange(-window, window + 1, device=self.device)
        hint = hint.to(self.device)
        pts = points.to(self.dtype)
        cand = t.flat(pid, hint)[:, None] + offsets[None, :]
        d2 = (pts[:, 0:1] - take(t.x, cand)).square()
        d2 = d2 + (pts[:, 1:2] - take(t.y, cand)).square()
        best = hint + offsets[d2.argmin(dim=1)]
        m = self.num_samples[pid]
        return torch.where(
            self.closed[pid], torch.remainder(best, m), torch.minimum(best.clamp(min=0), m - 1)
        )

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
        t = self.padded()
        m = self.num_samples[pid]
        closed = self.closed[pid]
        ds = self.ds[pid]
        px, py = pts[:, 0], pts[:, 1]
        fwd = torch.where(closed, idx, torch.minimum(idx, m - 2))
        prev = torch.where(closed, torch.remainder(idx - 1, m), (idx - 1).clamp(min=0))
        near = t.flat(pid, idx)
        behind = (px - take(t.x, near)) * take(t.cos_heading, near) + (py - take(t.y, near)) * take(
            t.sin_heading, near
        ) < 0
        base = torch.where(behind & (prev != fwd), prev, fwd)
        flat = t.flat(pid, base)
        rel_x, rel_y = px - take(t.x, flat), py - take(t.y, flat)
        c, s_ = take(t.cos_heading, flat), take(t.sin_heading, flat)
        k_seg = take(t.segment_curvature, flat)
        along, d = project_on_arc(rel_x * c + rel_y * s_, rel_y * c - rel_x * s_, k_seg)
        frac = (along / ds).clamp(0.0, 1.0)
        s = base.to(self.dtype) * ds + along
        return Frenet(
            s=torch.where(closed, torch.remainder(s, self.length[pid]), s),
            d=d,
            heading=take(t.heading, flat) + k_seg * along,
            curvature=lerp_slots(t.curvature, flat, frac),
            index=idx,
            width_left=lerp_slots(t.width_left, flat, frac),
            width_right=lerp_slots(t.width_right, flat, frac),
        )
