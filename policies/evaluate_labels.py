"""Evaluate policies on labelled scenario sets in ``S3BeamNG-v0`` (one episode after another).

The distilled side (the same label sets, one batch of cars each) is
:func:`policies.evaluate_distilled.evaluate_labels`; both report one row per label
(:func:`label_summary`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from policies.checkpoint import Policy
from policies.evaluate import FAILURES, METRICS, RunResult, print_run, run_episode, simulator


def evaluate_beamng_labels(
    policy: Policy,
    labels: Sequence[str],
    *,
    episodes: int = 8,
    seed: int = 0,
    standin: bool = True,
    progress: bool = True,
    fast: bool = True,
    max_steps: int | None = None,
    scenario: dict[str, Any] | None = None,
    **sim_options: Any,
) -> list[RunResult]:
    """Episodes of the scenario pool filtered by each label, one after another in ``S3BeamNG-v0``.

    The scenarios (path, surface layout, start) are drawn by ``seed`` from the same pool as
    ``S3Distilled-v0``'s (:class:`gym_s3.envs.config.ScenarioConfig`), and each episode uses the
    distilled env's task (start noise, 400-step limit), so the label rows of both envs compare.

    Args:
        policy: the policy (its ``obs_mode`` configures the env).
        labels: scenario labels (:data:`gym_s3.scenarios.LABELS`).
        episodes: episodes per label (at most the label's scenario count).
        seed: seed of the scenario draws and of each episode's start noise.
        standin: use the open stand-in (``True``) or BeamNG.tech (``sim_options``).
        progress: print one line per label.
        fast: compiled float32 stand-in physics (see :func:`evaluate_beamng`).
        max_steps: cap on the steps of each episode (default: the task's 400-step limit).
        scenario: :class:`~gym_s3.envs.config.ScenarioConfig` fields (``tracks``, ...).
        **sim_options: BeamNG.tech connection, as in :func:`evaluate_beamng`.
    """
    import gymnasium as gym
    import torch

    import gym_s3  # noqa: F401  (registers the ids)
    from gym_s3.envs.beamng import BeamNGEnvConfig
    from gym_s3.envs.config import ScenarioConfig
    from gym_s3.envs.pools import scenario_placement, scenario_source
    from gym_s3.scenarios import label_mask
    from gym_s3.task import TaskConfig

    label_mask(labels)  # fail before the simulator starts
    config = BeamNGEnvConfig(task=TaskConfig(obs_mode=policy.obs_mode))
    results = []
    with simulator(standin, fast, **sim_options) as (name, connect):
        for label in labels:
            source = scenario_source(ScenarioConfig(labels=(label,), **(scenario or {})))
            pool = source.pool
            gen = torch.Generator().manual_seed(seed)
            picks = torch.randperm(pool.num_scenarios, generator=gen)[:episodes].tolist()
            t0 = time.perf_counter()
            runs = []
            for k, idx in enumerate(picks):
                env = gym.make("S3BeamNG-v0", config=config, **connect,
                               **scenario_placement(source, idx))  # fmt: skip
                try:
                    runs.append(run_episode(env, policy, env_name=name, seed=seed + k,
                                            condition={"label": label},
                                            max_steps=max_steps))  # fmt: skip
                finally:
                    env.close()
            ends = [r.terminated_by for r in runs]
            res = label_summary(
                name, label, {k: float(np.mean([r.metrics[k] for r in runs])) for k in METRICS},
                completed=float(np.mean([e == "completed" for e in ends])),
                failed=float(np.mean([e in FAILURES for e in ends])),
                episodes=len(runs), wall_s=time.perf_counter() - t0,
            )  # fmt: skip
            results.append(res)
            if progress:
                print_run(res)
    return results


def label_summary(
    env: str,
    label: str,
    metrics: dict[str, float],
    *,
    completed: float,
    failed: float,
    episodes: int,
    wall_s: float,
) -> RunResult:
    """One table row for a label set.

    Args:
        env: env name of the row.
        label: the scenario label.
        metrics: mean :data:`METRICS` over the set's episodes.
        completed: share of episodes that completed their route.
        failed: share of episodes that ended by a failure (:data:`FAILURES`).
        episodes: episode count.
        wall_s: wall-clock time of the set [s].
    """
    empty = np.zeros(0)
    return RunResult(
        env=env,
        condition={"label": label, "episodes": episodes},
        metrics={k: float(metrics[k]) for k in METRICS},
        terminated_by=f"done {completed:.0%} fail {failed:.0%}",
        trajectory=np.zeros((0, 2)),
        cte=empty,
        s=empty,
        speed=empty,
        target=empty,
        wall_s=wall_s,
    )
