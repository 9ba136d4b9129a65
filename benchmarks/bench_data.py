"""Throughput of the data stage: generator, recorder, dataset windows, collection session.

Plain script (no assertions on time); prints medians of repeated runs::

    python benchmarks/bench_data.py                  # everything, small sizes
    python benchmarks/bench_data.py --only generate --cars 64 256 1024
    python benchmarks/bench_data.py --only dataset --dataset data/default

Sections:

* ``generate``: scripted expert x batched reference simulator (one wave, short episodes) in
  car-steps per second for several numbers of cars and torch thread counts;
* ``recorder``: rows per second through the crash-safe journal (fsync every 20 rows) and the time
  to finish an episode into Parquet;
* ``dataset``: load + validate, and window building (H = 10, K = 1 and K = 60);
* ``session``: control steps per second of an expert session over beamngpy against the in-process
  stand-in (20 Hz real time needs >= 20);
* ``sizing``: how much data distillation needs: a backend (``trans`` by default) trained with a
  fixed budget of updates on growing shares of a dataset's training sessions, scored on the same
  held-out sessions (one-step and 20-step rollout loss, in units of the one-step velocity-change
  standard deviation). Needs ``--dataset``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import torch


def median_time(fn: Callable[[], object], repeat: int) -> float:
    """Median wall time of ``fn`` over ``repeat`` runs [s]."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def bench_generate(cars: list[int], threads: list[int], steps: int, repeat: int) -> None:
    """Car-steps per second of one generation wave."""
    from gym_s3.data.generate import build_pool, build_tracks, preset, run_wave

    print(f"\n== generate: one wave of {steps} steps (median of {repeat})")
    print(f"{'cars':>6} {'threads':>7} {'s/wave':>8} {'car-steps/s':>12} {'samples/min':>12}")
    for n in cars:
        cfg = preset("default", cars=n, episode_s=steps * 0.05)
        paths, groups = build_tracks(cfg, 0)
        pool = build_pool(paths, cfg, 0)
        for t in threads:
            torch.set_num_threads(t)
            sec = median_time(lambda c=cfg, p=pool, g=groups: run_wave(p, g, c, 0, 0), repeat)
            print(
                f"{n:>6} {t:>7} {sec:>8.2f} {n * steps / sec:>12.0f} {60 * n * steps / sec:>12.0f}"
            )
    torch.set_num_threads(1)


def bench_recorder(rows: int, repeat: int) -> None:
    """Journal append rate and finish time."""
    from gym_s3.data.recorder import EpisodeRecorder
    from gym_s3.data.schema import COLUMNS, EpisodeMeta, layout_to_dict
    from gym_s3.tracks.surfaces import SurfaceLayout

    row = {c.name: (False if c.dtype == "bool" else 0) for c in COLUMNS}
    row["t"] = 0.0
    layout = layout_to_dict(SurfaceLayout.uniform("asphalt"))
    append_s, finish_s = [], []
    for i in range(repeat):
        with tempfile.TemporaryDirectory() as tmp:
            meta = EpisodeMeta(f"bench{i}", "e0", "standin-server", "keyboard", "putnam", layout)
            rec = EpisodeRecorder(tmp, meta)
            start = time.perf_counter()
            for k in range(rows):
                rec.append({**row, "t": k * 0.05})
            append_s.append(time.perf_counter() - start)
            start = time.perf_counter()
            rec.finish()
            finish_s.append(time.perf_counter() - start)
    a, f = statistics.median(append_s), statistics.median(finish_s)
    print(f"\n== recorder: {rows} rows, fsync every 20 (median of {repeat})")
    print(f"append {rows / a:,.0f} rows/s ({1e6 * a / rows:.0f} us/row); finish {1e3 * f:.0f} ms")


def bench_dataset(path: Path | None, repeat: int) -> None:
    """Load + validate and window building."""
    from gym_s3.data.dataset import DrivingDataset
    from gym_s3.data.generate import generate_dataset, preset

    with tempfile.TemporaryDirectory() as tmp:
        if path is None:
            path = Path(tmp) / "ds"
            generate_dataset(path, preset("tiny", cars=64, episode_s=10.0), seed=0)
        load = median_time(lambda: DrivingDataset.load(path), repeat)
        ds = DrivingDataset.load(path)
        print(f"\n== dataset: {ds.num_samples:,} samples in {len(ds.episodes)} files")
        print(f"load + validate {load:.2f} s ({ds.num_samples / load:,.0f} rows/s)")
        for k in (1, 60):
            stride = 1 if k == 1 else 5
            times = []
            for _ in range(repeat):
                fresh = DrivingDataset.load(path)  # windows are cached per dataset object
                start = time.perf_counter()
                n = len(fresh.windows(10, k, stride=stride)["row"])
                times.append(time.perf_counter() - start)
            sec = statistics.median(times)
            print(f"windows H=10 K={k:>2} stride {stride}: {n:,} windows in {sec:.2f} s")


def bench_session(steps: int) -> None:
    """Control steps per second of an expert session on the in-process stand-in."""
    from wheel_collector.expert import ExpertInput
    from wheel_collector.session import CollectionSession, SessionConfig

    with tempfile.TemporaryDirectory() as tmp:
        session = CollectionSession(SessionConfig(out_dir=tmp, duration_s=0), ExpertInput())
        start = time.perf_counter()
        session.open()
        opened = time.perf_counter() - start
        times = []
        for _ in range(steps):
            t0 = time.perf_counter()
            session.step()
            times.append(time.perf_counter() - t0)
        session.close()
    med = statistics.median(times)
    print(f"\n== session: expert over beamngpy on the in-process stand-in ({steps} steps)")
    print(
        f"open {opened:.1f} s; step median {1e3 * med:.1f} ms -> {1 / med:.1f} steps/s "
        f"(real time needs 20); p90 {1e3 * sorted(times)[int(0.9 * steps)]:.1f} ms"
    )


def bench_sizing(path: Path, backend: str, fractions: list[float], updates: int) -> None:
    """Validation loss vs share of training sessions (fixed number of updates)."""
    from gym_s3.data.dataset import DrivingDataset, session_draw
    from gym_s3.distill.loss import rollout_loss
    from gym_s3.distill.train import TrainConfig, train
    from gym_s3.distill.windows import TensorWindows
    from gym_s3.dynamics import make

    ds = DrivingDataset.load(path)
    val = ds.split("val")
    stats = ds.normalization()
    val1 = TensorWindows(val.windows(10, 1, stride=2))
    val20 = val.windows(10, 20, stride=10)
    train_sessions = sorted((s for s in ds.sessions if ds.session_split(s) == "train"),
                            key=session_draw)  # fmt: skip
    print(
        f"\n== sizing: {backend}, {updates} updates of 256 windows, "
        f"{len(val.episodes)} held-out episodes"
    )
    print(f"{'share':>6} {'sessions':>8} {'samples':>9} {'hours':>6} {'val 1-step':>10} "
          f"{'val 20-step':>11} {'train s':>8}")  # fmt: skip
    for frac in fractions:
        keep = set(train_sessions[: max(1, round(frac * len(train_sessions)))])
        subset = ds.select_sessions(keep)
        windows = TensorWindows(subset.windows(10, 1))
        torch.manual_seed(0)
        model = make(backend)
        cfg = TrainConfig(epochs=max(1, updates // 250), batches_per_epoch=min(250, updates),
                          patience=100, val_windows=5000, progress=False)  # fmt: skip
        result = train(model, windows, val1, stats, cfg)
        with torch.no_grad():
            loss20 = float(rollout_loss(model, val20, 20, stats.delta_std))
        print(
            f"{frac:>6.3f} {len(keep):>8} {subset.num_samples:>9,} {subset.hours:>6.2f} "
            f"{result.best_val_loss:>10.4f} {loss20:>11.4f} {result.seconds:>8.0f}"
        )


def main() -> None:
    """Run the selected sections."""
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--only", choices=("generate", "recorder", "dataset", "session", "sizing"),
                        help="run only this section; omitted: generate, recorder, dataset and "
                        "session, and sizing too when --dataset is given")  # fmt: skip
    parser.add_argument("--cars", type=int, nargs="+", default=[64, 256, 1024],
                        help="cars per generation wave, one row each (generate) "
                        "[count]")  # fmt: skip
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2],
                        help="torch threads, one row each per --cars value (generate) "
                        "[count]")  # fmt: skip
    parser.add_argument("--steps", type=int, default=40,
                        help="control steps per generation wave (generate) "
                        "[steps of 50 ms]")  # fmt: skip
    parser.add_argument("--repeat", type=int, default=3,
                        help="timed runs per measurement, median printed (generate, recorder, "
                        "dataset) [count]")  # fmt: skip
    parser.add_argument("--dataset", type=Path, default=None,
                        help="existing dataset folder (dataset: omitted, a tiny one is generated; "
                        "sizing: required)")  # fmt: skip
    parser.add_argument("--backend", default="trans",
                        help="dynamics backend trained in the sizing study (sizing)")  # fmt: skip
    parser.add_argument("--fractions", type=float, nargs="+",
                        default=[0.0625, 0.125, 0.25, 0.5, 1.0],
                        help="shares of the dataset's training sessions to train on, one row "
                        "each (sizing) [0-1]")  # fmt: skip
    parser.add_argument("--updates", type=int, default=3000,
                        help="gradient updates of 256 windows per sizing run; above 250 rounded "
                        "down to whole epochs of 250 (sizing) [count]")  # fmt: skip
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.only in (None, "generate"):
        bench_generate(args.cars, args.threads, args.steps, args.repeat)
    if args.only in (None, "recorder"):
        bench_recorder(400, args.repeat)
    if args.only in (None, "dataset"):
        bench_dataset(args.dataset, args.repeat)
    if args.only in (None, "session"):
        bench_session(100)
    if args.only == "sizing" or (args.only is None and args.dataset is not None):
        if args.dataset is None:
            parser.error("--only sizing needs --dataset")
        bench_sizing(args.dataset, args.backend, args.fractions, args.updates)


if __name__ == "__main__":
    main()
