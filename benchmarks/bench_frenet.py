"""Benchmark: Frenet projection and friction lookup at N = 4096 on the Putnam Park approximation.

Prints the median wall time of many runs (no assertions):

* one projection of 4096 points with the window search (hint from the previous step) and with the
  global search, in float64 and float32;
* ``SurfaceBatch.friction_at`` for 4096 cars x 4 wheels with 16 ice patches, one layout shared by
  all cars and one layout per car (drawn from a bank of 64);
* the friction-aware speed profile for 1 and 64 layouts.

Run: ``python benchmarks/bench_frenet.py [--n 4096] [--runs 50]``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np
import torch

from gym_s3.tracks.layouts import LayoutConfig, PatchConfig, sample_layout
from gym_s3.tracks.putnam import putnam_park
from gym_s3.tracks.speed_profile import speed_profile
from gym_s3.tracks.surfaces import SurfaceBatch, friction_along


def median_ms(fn: Callable[[], object], runs: int, warmup: int = 3) -> float:
    """Median wall time of ``fn()`` over ``runs`` calls [ms]."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 1e3 * statistics.median(times)


def bench_projection(n: int, runs: int, dtype: torch.dtype) -> tuple[float, float]:
    """(windowed, global) median time of one projection of ``n`` points [ms]."""
    path = putnam_park(1.0).to(dtype=dtype)
    gen = torch.Generator().manual_seed(0)
    s = torch.rand(n, generator=gen, dtype=torch.float64) * path.length
    d = (torch.rand(n, generator=gen, dtype=torch.float64) * 2 - 1) * 4.0
    smp = putnam_park(1.0).sample(s)
    pts = torch.stack([smp.x - d * torch.sin(smp.heading), smp.y + d * torch.cos(smp.heading)], 1)
    # the next step's points: every car moved 1.5 m along the path (30 m/s at 20 Hz)
    smp2 = putnam_park(1.0).sample(s + 1.5)
    moved = torch.stack(
        [smp2.x - d * torch.sin(smp2.heading), smp2.y + d * torch.cos(smp2.heading)], 1
    )
    pts, moved = pts.to(dtype), moved.to(dtype)
    hint = path.project(pts).index
    with torch.inference_mode():
        windowed = median_ms(lambda: path.project(moved, hint), runs)
        global_ = median_ms(lambda: path.project(moved), max(5, runs // 5))
    return windowed, global_


def bench_friction(n: int, runs: int) -> tuple[float, float, int]:
    """(shared layout, per-car layouts) median time of friction_at for n x 4 points [ms]."""
    path = putnam_park(1.0)
    cfg = LayoutConfig(patches=PatchConfig(count=(16, 16)))
    rng = np.random.default_rng(0)
    bank = SurfaceBatch.stack([sample_layout(path, cfg, rng) for _ in range(64)])
    shared = bank.index(torch.tensor([0]))
    per_car = bank.index(torch.randint(0, 64, (n,), generator=torch.Generator().manual_seed(1)))
    gen = torch.Generator().manual_seed(2)
    centre = path.xyz[torch.randint(0, path.num_samples, (n,), generator=gen), :2].float()
    offsets = torch.tensor([[1.4, 0.8], [1.4, -0.8], [-1.4, 0.8], [-1.4, -0.8]])
    wheels = centre[:, None, :] + offsets[None]
    with torch.inference_mode():
        t_shared = median_ms(lambda: shared.friction_at(wheels), runs)
        t_per_car = median_ms(lambda: per_car.friction_at(wheels), runs)
    return t_shared, t_per_car, int(bank.rects.shape[1])


def bench_speed_profile(runs: int) -> tuple[float, float]:
    """Median time of the speed profile for 1 and 64 layouts [ms]."""
    path = putnam_park(1.0)
    cfg = LayoutConfig(patches=PatchConfig(count=(4, 4)))
    rng = np.random.default_rng(0)
    bank = SurfaceBatch.stack(
        [sample_layout(path, cfg, rng) for _ in range(64)], dtype=torch.float64
    )
    mu = friction_along(path, bank)
    return (
        median_ms(lambda: speed_profile(path, mu[:1]), runs),
        median_ms(lambda: speed_profile(path, mu), max(3, runs // 5)),
    )


def main() -> None:
    """Run the benchmarks and print a small table."""
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--n", type=int, default=4096,
                        help="points projected, and cars (4 wheels each) of friction_at "
                        "[count]")  # fmt: skip
    parser.add_argument("--runs", type=int, default=50,
                        help="timed runs per measurement after 3 untimed ones, median printed "
                        "(the global projection and the 1-layout speed profile run a fifth of it, "
                        "at least 5; the 64-layout speed profile fewer still) [count]")  # fmt: skip
    args = parser.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, N = {args.n}")
    print("Putnam Park approximation, 2850 samples at 1 m")
    for dtype in (torch.float64, torch.float32):
        win, glob = bench_projection(args.n, args.runs, dtype)
        name = str(dtype).replace("torch.", "")
        print(
            f"project ({name}):  window {win:7.2f} ms   global {glob:7.2f} ms   "
            f"ratio {glob / win:5.1f}x"
        )
    shared, per_car, rects = bench_friction(args.n, args.runs)
    print(
        f"friction_at {args.n}x4 points, 16 patches ({rects} rectangles max): "
        f"shared layout {shared:.2f} ms, per-car layouts {per_car:.2f} ms"
    )
    one, many = bench_speed_profile(max(5, args.runs // 5))
    print(f"speed_profile: 1 layout {one:.1f} ms, 64 layouts {many:.1f} ms")


if __name__ == "__main__":
    main()
