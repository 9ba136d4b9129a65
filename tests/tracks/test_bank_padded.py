"""The PathBank's wrap-padded gather layout against direct (wrap-per-element) indexing.

The hot path reads samples from flat copies of the tables padded by wrapped (closed paths) or
clamped (open paths) samples. These tests compare it with indexing the unpadded tables directly at
every place the padding matters: windowed searches across the start line of a closed path and past
both ends of an open one, next-sample interpolation at the last segment, paths of different
lengths in one bank, and a search whose hint is far from the point (the window then finds the
nearest sample it can see, never one outside it).
"""

from __future__ import annotations

import torch

from gym_s3.tracks.bank import PathBank
from tests.path_helpers import make_circle, make_straight


def _bank() -> PathBank:
    # a short closed circle (fewer samples than the longest path: padding inside the bank rows)
    return PathBank.from_paths([make_straight(300.0), make_circle(20.0)], dtype=torch.float64)


def _direct_window(bank: PathBank, pid, pts, hint, window):
    """The window search written with per-element wrap and 2-D indexing (the reference)."""
    offsets = torch.arange(-window, window + 1)
    cand = hint[:, None] + offsets[None, :]
    p = pid[:, None].expand_as(cand)
    m = bank.num_samples[p]
    cand = torch.where(
        bank.closed[p], torch.remainder(cand, m), torch.minimum(cand.clamp(min=0), m - 1)
    )
    d2 = (pts[:, None, 0] - bank.xyz[p, cand, 0]) ** 2 + (
        pts[:, None, 1] - bank.xyz[p, cand, 1]
    ) ** 2
    return cand.gather(1, d2.argmin(dim=1, keepdim=True)).squeeze(1)


def test_window_search_matches_direct_indexing_across_start_line_and_ends() -> None:
    """Hints at both ends and the middle, points near and far (80 m jumps), narrow/wide windows."""
    bank = _bank()
    m_straight, m_circle = (int(v) for v in bank.num_samples)
    gen = torch.Generator().manual_seed(0)
    hints, pids = [], []
    for pid, m in ((0, m_straight), (1, m_circle)):
        for h in (0, 1, 2, 5, m // 2, m - 3, m - 2, m - 1):
            hints.append(h)
            pids.append(pid)
    hint = torch.tensor(hints)
    pid = torch.tensor(pids)
    base = bank.xyz[pid, hint, :2]
    for spread in (0.5, 3.0, 15.0, 80.0):  # 80 m: far outside the window (a jump)
        pts = base + spread * (torch.rand(base.shape, generator=gen, dtype=torch.float64) - 0.5)
        for window in (1, 4, 12, 20):  # 20 > the default padding of 16: a wider table is built
            got = bank.window_argmin(pid, pts, hint, window)
            want = _direct_window(bank, pid, pts, hint, window)
            assert torch.equal(got, want), (spread, window)


def test_wrapped_hint_search_crosses_the_start_of_a_closed_path() -> None:
    """A car crossing the start line is found on the other side of it."""
    bank = _bank()
    m = int(bank.num_samples[1])
    pid = torch.tensor([1, 1])
    # just after the start line, searched from a hint just before it, and the other way round
    pts = bank.xyz[1, torch.tensor([2, m - 2]), :2]
    got = bank.window_argmin(pid, pts, torch.tensor([m - 2, 1]), 6)
    assert got.tolist() == [2, m - 2]


def test_sample_and_interpolate_match_direct_indexing_at_the_ends() -> None:
    """Interpolation reads the right next sample at the last segment and off the ends."""
    bank = _bank()
    length = bank.length
    # closed: around the start line and the last segment; open: before the start, past the end
    s = torch.tensor([[-3.0, 0.0, 0.4, 150.0, 299.6, 300.0, 305.0],
                      [-0.3, 0.0, 0.2, 60.0, float(length[1]) - 0.2, float(length[1]), 200.0]],
                     dtype=torch.float64)  # fmt: skip
    pid = torch.tensor([0, 1])
    smp = bank.sample(pid, s)
    idx, rem = bank.split(pid, s)
    nxt = bank.next_index(pid, idx)
    p = pid[:, None].expand_as(s)
    frac = (rem / bank.ds[p]).clamp(0.0, 1.0)
    for table, got in ((bank.width_left, smp.width_left), (bank.xyz[..., 2], smp.z),
                       (bank.curvature, smp.curvature)):  # fmt: skip
        want = table[p, idx] + frac * (table[p, nxt] - table[p, idx])
        torch.testing.assert_close(got, want)
    # per-variant tables (speed profiles): two rows on the circle, one on the straight
    table = torch.arange(3 * bank.xyz.shape[1], dtype=torch.float64).reshape(3, -1)
    table_path = torch.tensor([1, 0, 1])
    rows = torch.tensor([2, 1])
    q = torch.stack([s[1], s[0]])
    got = bank.interpolate(table, table_path, rows, q)
    pq = table_path[rows][:, None].expand_as(q)
    i, r = bank.split(table_path[rows], q)
    n = bank.next_index(table_path[rows], i)
    f = (r / bank.ds[pq]).clamp(0.0, 1.0)
    rr = rows[:, None].expand_as(q)
    torch.testing.assert_close(got, table[rr, i] + f * (table[rr, n] - table[rr, i]))


def test_arc_lengths_that_wrap_onto_the_length_stay_at_the_start_line() -> None:
    """float32: s a hair below 0 or below L; the point is at the start line, not a lap away.

    ``torch.remainder(-1e-7, L)`` rounds up to ``L`` (L ~ 314 m on the first circle, one ulp
    3e-5 m), and on the second circle ``floor(nextafter(L, 0) / ds)`` rounds up to M. Either way
    the index reached M, used to wrap to segment 0 and left ``rem = L``, so the position was
    extrapolated a whole lap along segment 0's arc. Queries of shape (N,) and (N, J).
    """
    for radius in (50.0, 33.3):
        bank = PathBank.from_paths([make_circle(radius)], dtype=torch.float32)
        length = bank.length[0]
        below_length = torch.nextafter(length, torch.zeros(()))
        s = torch.stack([torch.tensor(-1e-4), torch.tensor(-1e-7), below_length, torch.tensor(0.0)])
        start = bank.xyz[0, 0, :2]
        for query in (s, s.reshape(2, 2)):
            pid = torch.zeros(query.shape[0], dtype=torch.int64)
            loc = bank.locate(pid, query)
            assert bool((loc.rem.abs() <= bank.ds[0] + 1e-4).all()), (radius, loc.rem)
            x, y = bank.position(pid, loc)
            dist = torch.hypot(x - start[0], y - start[1])
            assert bool((dist < 1e-3).all()), (radius, dist)
