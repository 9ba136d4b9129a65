"""Where the time of an ``S3Distilled-v0`` step goes: the backend and each part of the task layer.

For one backend at N cars it builds the env core, drives it for a while with random actions (so
the cars are spread over their episodes), then times on that state (medians, no assertions):

* ``env step``: core step + same-step autoreset, as training runs it;
* ``core step``: the core step alone, and ``autoreset``: the resets of the cars that finished;
* ``backend``: the bare backend forward on the same state;
* the task's parts on the state after the step: ``friction`` (friction under the four wheels),
  ``projection`` (windowed Frenet projection), ``target speed``, ``lookahead`` (one segment
  search for the lookahead points, their positions and target speeds), ``observation``
  (lookahead + observation vector) and ``task step`` (everything the task does in a step);

each eager and, with ``--compile on``, as its own ``torch.compile`` graph (first-call
compilation not timed). ``task / backend`` is (core step - backend) / backend: the task layer's
cost in units of the model it wraps.

    python benchmarks/bench_task.py                               # ddm, N = 4096, eager
    python benchmarks/bench_task.py --backend bicycle --compile on
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_frenet import median_ms  # noqa: E402

from gym_s3.envs.config import DistilledConfig  # noqa: E402
from gym_s3.envs.core import DistilledCore  # noqa: E402


def parts(core: DistilledCore, action: torch.Tensor) -> dict[str, Callable[[], object]]:
    """The timed callables on the core's current state (none of them changes the task state)."""
    task, bank, pool = core.task, core.task.pool.bank, core.task.pool
    cars = core.cars.advance(action, task.surfaces, core.wheel_mu)
    ego, window = cars.ego, task.config.window
    frenet = bank.project(task.pid, ego.xy, task.hint, window=window)
    v_ref = pool.target_speed(task.variant, frenet.s)

    def task_step():  # a copy of the task state, so that timing it changes nothing
        saved = {k: getattr(task, k) for k in ("hint", "s", "steps", "standing", "prev_action")}
        stats = task.stats
        task.stats = type(stats)(**{k: v.clone() for k, v in vars(stats).items()})
        try:
            return task.step(ego, action, fault=cars.fault)
        finally:
            task.stats = stats
            for k, v in saved.items():
                setattr(task, k, v)

    return {
        "backend": lambda: core.backend.step(core.state, action, core.wheel_mu),
        "friction": lambda: task.wheel_friction(ego),
        "projection": lambda: bank.project(task.pid, ego.xy, task.hint, window=window),
        "target speed": lambda: pool.target_speed(task.variant, frenet.s),
        "lookahead": lambda: task.lookahead_points(task.pid, task.variant, frenet.s),
        "observation": lambda: task._observe(ego, frenet, v_ref, None),
        "task step": task_step,
    }


def main(argv: list[str] | None = None) -> None:
    """Print the table of one backend."""
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--backend", default="ddm",
                        help="dynamics backend: bicycle, ddm, trans or dytr")  # fmt: skip
    parser.add_argument("--n", type=int, default=4096, help="cars N [count]")
    parser.add_argument(
        "--compile", choices=["off", "on"], default="off",
        help="on: also time each part as its own torch.compile graph",
    )  # fmt: skip
    parser.add_argument("--repeats", type=int, default=40,
                        help="timed env steps, and timed calls per part after 3 untimed ones; "
                        "medians are printed [count]")  # fmt: skip
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads [count]")
    parser.add_argument(
        "--tracks", nargs="+", default=["putnam", "procedural:0", "town:0"],
        help="tracks of the scenario pool",
    )  # fmt: skip
    args = parser.parse_args(argv)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # untrained learned backends warn; fine for timing
        config = DistilledConfig.from_kwargs(backend=args.backend, seed=0, threads=args.threads,
                                             tracks=tuple(args.tracks))  # fmt: skip
        core = DistilledCore(args.n, config)
    gen = torch.Generator().manual_seed(0)
    actions = [torch.rand(args.n, 2, generator=gen) * 2 - 1 for _ in range(16)]
    core.reset(seed=0)
    k = [0]
    split: list[tuple[float, float]] = []  # (core step, autoreset) of each env step [s]

    def env_step() -> torch.Tensor:
        start = time.perf_counter()
        out = core.step(actions[k[0] % len(actions)])
        mid = time.perf_counter()
        core.autoreset(out.done)
        split.append((mid - start, time.perf_counter() - mid))
        k[0] += 1
        return out.done

    for _ in range(50):  # spread the cars over their episodes
        env_step()
    split.clear()
    with torch.no_grad():
        done = [env_step() for _ in range(args.repeats)]
        finished = float(torch.stack(done).sum()) / len(done)
        core_ms = 1e3 * statistics.median(a for a, _ in split)
        reset_ms = 1e3 * statistics.median(b for _, b in split)
        env_ms = 1e3 * statistics.median(a + b for a, b in split)
        timed = parts(core, actions[0])
        rows = []
        for name, fn in timed.items():
            eager = median_ms(fn, args.repeats)
            compiled = float("nan")
            if args.compile == "on":
                compiled = median_ms(torch.compile(fn, dynamic=False), args.repeats)
            rows.append((name, eager, compiled))
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), backend "
          f"{args.backend}, N = {args.n}, tracks {args.tracks}; {finished:.1f} cars reset per "
          "env step (random actions)")  # fmt: skip
    print(f"env step {env_ms:.2f} ms: core step {core_ms:.2f} ms, autoreset {reset_ms:.2f} ms "
          "(medians of the same steps)")  # fmt: skip
    print(f"{'part':14} {'eager ms':>9} {'compiled ms':>12}")
    for name, eager, compiled in rows:
        print(f"{name:14} {eager:9.3f} {compiled:12.3f}")
    backend_ms = rows[0][1]
    print(f"task / backend (eager): {(core_ms - backend_ms) / backend_ms:.2f}; "
          f"env step / backend: {env_ms / backend_ms:.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
