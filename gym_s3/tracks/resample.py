"""Numerics for user geometry: spline densification, smoothing, uniform resampling, widths.

Track files come as polylines with a few metres between points and some noise. The pipeline
(:func:`smooth_centreline`) is

1. densify through the points with a centripetal Catmull-Rom spline (no overshoot or cusps with
   uneven spacing),
2. resample to a fine uniform spacing and apply a light Gaussian smoothing along the arc length
   (wrapping on loops; on open paths the ends are mirrored through the end points, so straight
   ends stay straight),
3. resample to the requested spacing ``ds`` (adjusted to divide the length evenly),
4. heading from the average of the two neighbouring chord directions (exact on circles), and
   curvature from the central difference of the heading.

Everything here is plain numpy on ``(n, k)`` float64 arrays; validation lives in
:mod:`gym_s3.tracks.loaders`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Resampled:
    """A uniformly resampled centreline.

    Attributes:
        xy: ``(M, 2)`` positions [m].
        heading: ``(M,)`` continuous heading [rad].
        curvature: ``(M,)`` curvature [1/m].
        ds: spacing [m].
        source_s: ``(n,)`` arc length on the resampled path of every input point [m] (used to
            carry per-point values such as widths or elevation over).
        closed: whether the centreline is a loop.
    """

    xy: np.ndarray
    heading: np.ndarray
    curvature: np.ndarray
    ds: float
    source_s: np.ndarray
    closed: bool

    @property
    def length(self) -> float:
        """Path length [m] (a loop includes the closing segment)."""
        return self.ds * (len(self.xy) if self.closed else len(self.xy) - 1)

    @property
    def s(self) -> np.ndarray:
        """``(M,)`` arc length of every sample [m]."""
        return np.arange(len(self.xy)) * self.ds


def _cumlen(xy: np.ndarray, closed: bool) -> np.ndarray:
    """Cumulative chord length ``(n + closed,)`` starting at 0 [m]."""
    pts = np.vstack([xy, xy[:1]]) if closed else xy
    return np.concatenate([[0.0], np.cumsum(np.hypot(*np.diff(pts, axis=0).T))])


def catmull_rom(xy: np.ndarray, *, closed: bool, sub: int) -> np.ndarray:
    """Centripetal Catmull-Rom spline through ``xy`` ``(n, 2)`` with ``sub`` points per segment.

    Returns ``(n * sub, 2)`` points on a loop or ``((n - 1) * sub + 1, 2)`` on an open polyline;
    point ``k * sub`` is input point ``k``. Consecutive input points must differ.
    """
    if closed:
        ext = np.vstack([xy[-1:], xy, xy[:2]])
    else:
        ext = np.vstack([2 * xy[0] - xy[1], xy, 2 * xy[-1] - xy[-2]])
    p0, p1, p2, p3 = ext[:-3], ext[1:-2], ext[2:-1], ext[3:]  # one row per segment
    t1 = np.sqrt(np.linalg.norm(p1 - p0, axis=1))[:, None, None]
    t2 = t1 + np.sqrt(np.linalg.norm(p2 - p1, axis=1))[:, None, None]
    t3 = t2 + np.sqrt(np.linalg.norm(p3 - p2, axis=1))[:, None, None]
    frac = np.arange(sub)[None, :, None] / sub
    t = t1 + frac * (t2 - t1)  # (S, sub, 1)
    p0, p1, p2, p3 = (p[:, None, :] for p in (p0, p1, p2, p3))
    a1 = ((t1 - t) * p0 + t * p1) / t1
    a2 = ((t2 - t) * p1 + (t - t1) * p2) / (t2 - t1)
    a3 = ((t3 - t) * p2 + (t - t2) * p3) / (t3 - t2)
    b1 = ((t2 - t) * a1 + t * a2) / t2
    b2 = ((t3 - t) * a2 + (t - t1) * a3) / (t3 - t1)
    c = ((t2 - t) * b1 + (t - t1) * b2) / (t2 - t1)
    out = c.reshape(-1, 2)
    return out if closed else np.vstack([out, xy[-1:]])


def resample_uniform(xy: np.ndarray, *, closed: bool, step: float) -> tuple[np.ndarray, float]:
    """Linear resampling of a polyline to a uniform spacing close to ``step`` [m].

    Returns:
        ``(points, spacing)``; a loop gets ``n`` points (no repeat), an open line ``n + 1``.
    """
    cum = _cumlen(xy, closed)
    total = float(cum[-1])
    n = max(2, round(total / step))
    spacing = total / n
    s = np.arange(n if closed else n + 1) * spacing
    pts = np.vstack([xy, xy[:1]]) if closed else xy
    return np.stack([np.interp(s, cum, pts[:, 0]), np.interp(s, cum, pts[:, 1])], 1), spacing


def gaussian_smooth(values: np.ndarray, *, sigma: float, closed: bool) -> np.ndarray:
    """Gaussian smoothing along axis 0 with ``sigma`` in samples.

    Loops wrap around; open arrays are extended by point reflection through the end samples
    (``2 v[0] - v[k]``), which leaves straight ends straight.
    """
    if sigma <= 0:
        return values.copy()
    half = int(np.ceil(3.0 * sigma))
    kernel = np.exp(-0.5 * (np.arange(-half, half + 1) / sigma) ** 2)
    kernel /= kernel.sum()
    n = len(values)
    half = min(half, n - 1)
    kernel = kernel[len(kernel) // 2 - half : len(kernel) // 2 + half + 1]
    kernel /= kernel.sum()
    if closed:
        padded = np.concatenate([values[-half:], values, values[:half]])
    else:
        head = 2 * values[0] - values[half:0:-1]
        tail = 2 * values[-1] - values[-2 : -half - 2 : -1]
        padded = np.concatenate([head, values, tail])
    cols = [np.convolve(padded[:, k], kernel, mode="valid") for k in range(values.shape[1])]
    return np.stack(cols, axis=1)


def heading_curvature(xy: np.ndarray, *, closed: bool, ds: float) -> tuple[np.ndarray, np.ndarray]:
    """Heading [rad] (continuous) and curvature [1/m] of uniformly spaced points ``(M, 2)``.

    The heading at a point is the mean of the chord directions before and after it (exact on a
    circle); the curvature is the central difference of the heading.
    """
    pts = np.vstack([xy, xy[:1]]) if closed else xy
    chord = np.unwrap(np.arctan2(*np.diff(pts, axis=0).T[::-1]))  # chord i joins points i, i+1
    if closed:
        # the chord before sample 0 is the closing chord, brought next to chord[0]
        before = np.concatenate([[chord[0] + _wrap(chord[-1] - chord[0])], chord[:-1]])
        heading = 0.5 * (before + chord)
        dh = _wrap(np.roll(heading, -1) - np.roll(heading, 1))
        return heading, dh / (2.0 * ds)
    if len(chord) == 1:
        return np.full(2, chord[0]), np.zeros(2)
    heading = np.concatenate([[0.0], 0.5 * (chord[:-1] + chord[1:]), [0.0]])
    # the end headings extrapolate the neighbouring chord turn (exact on a circle)
    heading[0] = chord[0] - 0.5 * (chord[1] - chord[0])
    heading[-1] = chord[-1] + 0.5 * (chord[-1] - chord[-2])
    return heading, np.gradient(heading, ds)


def _wrap(angle: np.ndarray) -> np.ndarray:
    """Wrap angles to ``[-pi, pi)``."""
    return np.mod(angle + np.pi, 2.0 * np.pi) - np.pi


def smooth_centreline(
    xy: np.ndarray, *, closed: bool, ds: float, smoothing_m: float = 1.0
) -> Resampled:
    """Turn raw centreline points ``(n, 2)`` into a smooth, uniformly sampled centreline.

    Args:
        xy: raw points [m]; consecutive points must differ.
        closed: whether the points form a loop (no repeated end point).
        ds: requested spacing [m].
        smoothing_m: standard deviation of the Gaussian smoothing along the path [m] (0: none).

    Returns:
        The :class:`Resampled` centreline.
    """
    seg = np.hypot(*np.diff(np.vstack([xy, xy[:1]]) if closed else xy, axis=0).T)
    fine_step = min(ds / 4.0, 0.25)
    sub = max(1, int(np.ceil(seg.max() / fine_step)))
    dense = catmull_rom(xy, closed=closed, sub=sub)
    dense_cum = _cumlen(dense, closed)
    source_dense_s = dense_cum[np.arange(len(xy)) * sub]
    fine, fine_spacing = resample_uniform(dense, closed=closed, step=fine_step)
    fine = gaussian_smooth(fine, sigma=smoothing_m / fine_spacing, closed=closed)
    out, spacing = resample_uniform(fine, closed=closed, step=ds)
    heading, curvature = heading_curvature(out, closed=closed, ds=spacing)
    length = spacing * (len(out) if closed else len(out) - 1)
    source_s = source_dense_s * (length / dense_cum[-1])
    return Resampled(out, heading, curvature, spacing, source_s, closed)


def interp_along(
    s: np.ndarray, source_s: np.ndarray, values: np.ndarray, *, closed: bool, length: float
) -> np.ndarray:
    """Interpolate per-input-point ``values`` ``(n,)`` at arc lengths ``s`` (periodic on loops)."""
    if closed:
        return np.interp(s, source_s, values, period=length)
    return np.interp(s, source_s, values)


def point_segment_distance(points: np.ndarray, poly: np.ndarray, *, closed: bool) -> np.ndarray:
    """Distance [m] from every point ``(P, 2)`` to the nearest segment of ``poly`` ``(n, 2)``."""
    pts = np.vstack([poly, poly[:1]]) if closed else poly
    a, b = pts[:-1], pts[1:]
    ab = b - a
    len2 = np.maximum((ab**2).sum(1), 1e-12)
    out = np.empty(len(points))
    for start in range(0, len(points), 512):
        p = points[start : start + 512, None, :]
        t = np.clip(((p - a) * ab).sum(-1) / len2, 0.0, 1.0)
        foot = a + t[..., None] * ab
        out[start : start + 512] = np.sqrt(((p - foot) ** 2).sum(-1)).min(axis=1)
    return out


def nearest_points(points: np.ndarray, cloud: np.ndarray) -> np.ndarray:
    """Index into ``cloud`` ``(n, 2)`` of the nearest point to every point ``(P, 2)``."""
    out = np.empty(len(points), dtype=np.int64)
    for start in range(0, len(points), 512):
        p = points[start : start + 512, None, :]
        out[start : start + 512] = ((p - cloud[None]) ** 2).sum(-1).argmin(axis=1)
    return out
