"""Build centrelines from curvature profiles: straights, circular arcs and clothoid transitions.

A circuit is a sequence of :class:`Segment` pieces with a linearly varying curvature (a straight has
zero curvature, an arc a constant one, a clothoid a linear ramp). Heading is integrated exactly;
positions are integrated numerically on a fine grid (Simpson's rule, error far below a millimetre).
Closing a loop is a linear problem once the corners are fixed: the end-point error depends linearly
on the straight lengths, so :func:`close_loop` solves for the smallest weighted change of the
straights that closes the loop and keeps the total length.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from gym_s3.errors import ConfigError


@dataclass(frozen=True)
class Segment:
    """A piece of centreline whose curvature varies linearly along its length.

    Attributes:
        length: arc length [m], > 0.
        k0: curvature at the start [1/m] (positive = left turn).
        k1: curvature at the end [1/m].
    """

    length: float
    k0: float = 0.0
    k1: float = 0.0

    def __post_init__(self) -> None:
        """Validate the fields (raises :class:`~gym_s3.errors.ConfigError`)."""
        if not (self.length > 0.0 and math.isfinite(self.length)):
            raise ConfigError(f"segment length must be positive and finite, got {self.length}")

    @property
    def turn(self) -> float:
        """Heading change over the segment [rad]."""
        return 0.5 * (self.k0 + self.k1) * self.length


@dataclass(frozen=True)
class Corner:
    """A corner as clothoid entry, constant-radius arc and clothoid exit.

    Attributes:
        angle: signed heading change [rad] (negative = right turn).
        min_radius: radius of the central arc [m].
        length: total corner length [m]; must lie in ``[|angle| R, 2 |angle| R]`` so that the
            clothoids and the arc have non-negative lengths.
    """

    angle: float
    min_radius: float
    length: float

    def segments(self) -> list[Segment]:
        """The entry clothoid, arc and exit clothoid (zero-length pieces are dropped)."""
        theta = abs(self.angle)
        k_max = 1.0 / self.min_radius
        lo, hi = theta / k_max, 2.0 * theta / k_max
        if not lo - 1e-9 <= self.length <= hi + 1e-9:
            raise ConfigError(
                f"corner of {math.degrees(self.angle):.1f} deg and radius {self.min_radius} m "
                f"needs a length in [{lo:.1f}, {hi:.1f}] m, got {self.length:.1f} m"
            )
        ramp = min(max(self.length - lo, 0.0), self.length / 2.0)
        arc = self.length - 2.0 * ramp
        # Peak curvature chosen so the corner turns exactly by `angle` (it equals 1/min_radius up to
        # the rounding of the length).
        k = self.angle / (arc + ramp)
        pieces = [(ramp, 0.0, k), (arc, k, k), (ramp, k, 0.0)]
        return [Segment(length, a, b) for length, a, b in pieces if length > 1e-9]


@dataclass(frozen=True)
class Centreline:
    """A uniformly sampled centreline (float64 numpy arrays of length M).

    Attributes:
        x: world x [m].
        y: world y [m].
        heading: tangent heading [rad], continuous.
        curvature: curvature [1/m].
        ds: spacing [m].
        length: total arc length [m].
    """

    x: np.ndarray
    y: np.ndarray
    heading: np.ndarray
    curvature: np.ndarray
    ds: float
    length: float


def _curvature_fn(
    segments: Sequence[Segment],
) -> Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """Return vectorised k(s) and heading(s) - heading0 for a piecewise-linear curvature."""
    lengths = np.array([seg.length for seg in segments])
    starts = np.concatenate([[0.0], np.cumsum(lengths)[:-1]])
    k0 = np.array([seg.k0 for seg in segments])
    k1 = np.array([seg.k1 for seg in segments])
    turn_before = np.concatenate([[0.0], np.cumsum(0.5 * (k0 + k1) * lengths)[:-1]])

    def evaluate(s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Curvature [1/m] and heading change [rad] at arc lengths ``s`` [m]."""
        i = np.clip(np.searchsorted(starts, s, side="right") - 1, 0, len(segments) - 1)
        t = np.clip(s - starts[i], 0.0, lengths[i])
        slope = (k1[i] - k0[i]) / lengths[i]
        kappa = k0[i] + slope * t
        dheading = turn_before[i] + k0[i] * t + 0.5 * slope * t * t
        return kappa, dheading

    return evaluate


def integrate(
    segments: Sequence[Segment],
    *,
    ds: float,
    x0: float = 0.0,
    y0: float = 0.0,
    heading0: float = 0.0,
    closed: bool = False,
    oversample: int = 8,
) -> Centreline:
    """Sample the centreline made of ``segments`` every ``ds`` metres (adjusted to divide evenly).

    Args:
        segments: consecutive pieces of the centreline.
        ds: requested sample spacing [m]; the actual spacing divides the total length exactly.
        x0: start x [m].
        y0: start y [m].
        heading0: start heading [rad].
        closed: for loops, the last sample is the one before the (omitted) repeat of the start.
        oversample: integration sub-steps per sample (Simpson's rule needs an even number).
    """
    if not segments:
        raise ConfigError("a centreline needs at least one segment")
    if oversample < 2 or oversample % 2:
        raise ConfigError(f"oversample must be an even number >= 2, got {oversample}")
    if not ds > 0:
        raise ConfigError(f"sample spacing ds must be positive, got {ds} m")
    total = float(sum(seg.length for seg in segments))
    n_int = max(1, round(total / ds))
    step = total / n_int
    fine_n = n_int * oversample
    s_fine = np.linspace(0.0, total, fine_n + 1)
    evaluate = _curvature_fn(segments)
    _, dh = evaluate(s_fine)
    heading = heading0 + dh
    cx, cy = np.cos(heading), np.sin(heading)
    h = total / fine_n
    # Cumulative Simpson over pairs of fine intervals, then sample every `oversample` points.
    pair_x = h / 3.0 * (cx[0:-1:2] + 4.0 * cx[1::2] + cx[2::2])
    pair_y = h / 3.0 * (cy[0:-1:2] + 4.0 * cy[1::2] + cy[2::2])
    px = np.concatenate([[0.0], np.cumsum(pair_x)])
    py = np.concatenate([[0.0], np.cumsum(pair_y)])
    every = oversample // 2
    xs = x0 + px[::every]
    ys = y0 + py[::every]
    s_out = np.arange(n_int + 1) * step
    kappa_out, dh_out = evaluate(s_out)
    count = n_int if closed else n_int + 1
    return Centreline(
        x=xs[:count],
        y=ys[:count],
        heading=(heading0 + dh_out)[:count],
        curvature=kappa_out[:count],
        ds=step,
        length=total,
    )


def end_point(
    segments: Sequence[Segment], *, heading0: float = 0.0, ds: float = 0.5
) -> tuple[float, float, float]:
    """End position [m] and heading [rad] of a centreline that starts at the origin."""
    line = integrate(segments, ds=ds, heading0=heading0, closed=False)
    return float(line.x[-1]), float(line.y[-1]), float(line.heading[-1])


def close_loop(
    straights: Sequence[float],
    corners: Sequence[Corner],
    *,
    heading0: float = 0.0,
    min_straight: float = 0.5,
    iterations: int = 3,
) -> list[float]:
    """Adjust straight lengths so that ``straight[0], corner[0], straight[1], ...`` closes.

    The corners must already turn by a multiple of 2π in total. The end-point error is linear in
    the straight lengths (each straight adds ``L (cos h, sin h)`` at its fixed heading), so the
    smallest change weighted by the straight lengths that zeroes the x and y error and keeps the
    total length is found in closed form; a few iterations remove the integration round-off.

    Returns:
        the adjusted straight lengths [m].

    Raises:
        ConfigError: if the corners do not turn by a multiple of 2π or a straight would become
            shorter than ``min_straight``.
    """
    if len(straights) != len(corners):
        raise ConfigError("close_loop needs one straight before each corner")
    turn = sum(c.angle for c in corners)
    laps = turn / (2 * math.pi)
    if abs(laps - round(laps)) > 1e-9 or round(laps) == 0:
        raise ConfigError(
            f"corners turn by {math.degrees(turn):.3f} deg in total; a closed loop needs a "
            "non-zero multiple of 360 deg (scale the corner angles)"
        )
    lengths = np.array(straights, dtype=np.float64)
    # Heading of each straight is fixed by the corners before it.
    headings = heading0 + np.concatenate([[0.0], np.cumsum([c.angle for c in corners])[:-1]])
    a = np.stack([np.cos(headings), np.sin(headings), np.ones_like(headings)])  # (3, K)
    w = np.diag(np.maximum(lengths, min_straight))
    for _ in range(iterations):
        segs = build_segments(lengths, corners)
        ex, ey, _ = end_point(segs, heading0=heading0)
        err = np.array([ex, ey, 0.0])
        delta = -w @ a.T @ np.linalg.solve(a @ w @ a.T, err)
        lengths = lengths + delta
    if (lengths < min_straight).any():
        raise ConfigError(
            f"closing the loop needs straights of {np.round(lengths, 2).tolist()} m; "
            f"at least one is shorter than {min_straight} m"
        )
    return lengths.tolist()


def build_segments(straights: Sequence[float], corners: Sequence[Corner]) -> list[Segment]:
    """Interleave straights and corners: ``straight[0], corner[0], straight[1], corner[1], ...``."""
    segs: list[Segment] = []
    for straight, corner in zip(straights, corners, strict=True):
        if straight > 1e-9:
            segs.append(Segment(float(straight)))
        segs.extend(corner.segments())
    return segs


def polyline_crossings(x: np.ndarray, y: np.ndarray, *, closed: bool) -> list[tuple[int, int]]:
    """Pairs ``(i, j)``, ``i < j``, of non-adjacent polyline segments that properly cross.

    Segment ``i`` joins points ``i`` and ``i + 1`` (and the last point to the first when
    ``closed``). Vectorised O(M²) test in blocks (a bounding-box test first), fine for the few
    thousand points of a track file. Touching or collinear overlaps are not reported.
    """
    px = np.asarray(x, dtype=np.float64)
    py = np.asarray(y, dtype=np.float64)
    if closed:
        px, py = np.append(px, px[0]), np.append(py, py[0])
    ax, ay, bx, by = px[:-1], py[:-1], px[1:], py[1:]
    lox, hix = np.minimum(ax, bx), np.maximum(ax, bx)
    loy, hiy = np.minimum(ay, by), np.maximum(ay, by)
    n = len(ax)
    pairs: list[tuple[int, int]] = []

    def orient(
        ox: np.ndarray,
        oy: np.ndarray,
        p1x: np.ndarray,
        p1y: np.ndarray,
        p2x: np.ndarray,
        p2y: np.ndarray,
    ) -> np.ndarray:
        """Sign of the turn o -> p1 -> p2 (+1 left, -1 right, 0 collinear)."""
        return np.sign((p1x - ox) * (p2y - oy) - (p1y - oy) * (p2x - ox))

    block = 256
    for start in range(0, n, block):
        i = np.arange(start, min(n, start + block))[:, None]
        j = np.arange(n)[None, :]
        near = (lox[i] <= hix[j]) & (lox[j] <= hix[i]) & (loy[i] <= hiy[j]) & (loy[j] <= hiy[i])
        near &= j > i + 1
        if closed:
            near &= ~((i == 0) & (j == n - 1))
        ii, jj = np.nonzero(near)
        if ii.size == 0:
            continue
        ii, jj = ii + start, jj
        o1 = orient(ax[ii], ay[ii], bx[ii], by[ii], ax[jj], ay[jj])
        o2 = orient(ax[ii], ay[ii], bx[ii], by[ii], bx[jj], by[jj])
        o3 = orient(ax[jj], ay[jj], bx[jj], by[jj], ax[ii], ay[ii])
        o4 = orient(ax[jj], ay[jj], bx[jj], by[jj], bx[ii], by[ii])
        cross = (o1 * o2 < 0) & (o3 * o4 < 0)
        pairs.extend((int(a), int(b)) for a, b in zip(ii[cross], jj[cross], strict=True))
    return sorted(pairs)


def polyline_self_intersections(x: np.ndarray, y: np.ndarray, *, closed: bool) -> list[int]:
    """Indices ``i`` of segments ``(i, i+1)`` that cross a non-adjacent segment.

    See :func:`polyline_crossings` for the pairs.
    """
    hits = {k for pair in polyline_crossings(x, y, closed=closed) for k in pair}
    return sorted(hits)


def min_clearance(
    x: np.ndarray, y: np.ndarray, *, closed: bool, exclude_arc: float, step: float = 2.0
) -> float:
    """Smallest distance [m] between two points of a polyline more than ``exclude_arc`` apart.

    Measures how close a circuit comes to itself (parallel straights, a hairpin's two legs);
    points closer than ``exclude_arc`` along the path are neighbours and are not compared.

    Args:
        x: ``(M,)`` x [m].
        y: ``(M,)`` y [m].
        closed: arc separation is measured around the loop.
        exclude_arc: arc separation below which pairs are ignored [m].
        step: the polyline is thinned to about this spacing first [m].
    """
    px, py = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    seg = np.hypot(np.diff(px), np.diff(py))
    s = np.concatenate([[0.0], np.cumsum(seg)])
    total = s[-1] + (float(np.hypot(px[-1] - px[0], py[-1] - py[0])) if closed else 0.0)
    keep = np.unique(np.searchsorted(s, np.arange(0.0, s[-1], step)))
    px, py, s = px[keep], py[keep], s[keep]
    sep = np.abs(s[:, None] - s[None, :])
    if closed:
        sep = np.minimum(sep, total - sep)
    dist = np.hypot(px[:, None] - px[None, :], py[:, None] - py[None, :])
    far = sep > exclude_arc
    return float(dist[far].min()) if far.any() else math.inf
