"""What ``s3 train`` logs each PPO iteration, and the quick evaluation on held-out scenarios.

Every iteration logs one row of scalars (CSV or TensorBoard, under ``<out>/logs``):

* ``frames``, ``fps``, ``reward_mean``, ``done_rate``, ``terminated_rate`` and the mean losses;
* ``episode/<metric>``: the mean over the episodes that ended in the batch of each column of the
  TorchRL env's ``episode_stats`` (:data:`gym_s3.adapters.torchrl.EPISODE_METRICS`: cross-track,
  heading and speed errors, progress [m], completion [-], length [steps]) and
  ``episode/end_<reason>``, the share of those episodes that ended by each reason
  (:data:`~gym_s3.adapters.torchrl.END_FLAGS`, plus ``time_limit``); ``episodes`` counts them.
  A batch in which no episode ended logs none of these;
* every ``eval_every`` iterations, ``eval/<metric>`` from :func:`quick_evaluator`: one
  deterministic episode per car on held-out tracks (:func:`policies.evaluate_distilled.
  evaluate_distilled`), the same scenarios each time.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gym_s3 import distributed
from gym_s3._optional import require
from gym_s3.distributed import DistContext
from policies.config import PPOConfig

#: Keys of a log row that are means over the episodes that ended (weighted by ends under torchrun).
EPISODE_PREFIX = "episode/"


def make_logger(config: PPOConfig, out_dir: Path):
    """The CSV or TensorBoard logger of the run (under ``<out_dir>/logs``)."""
    from torchrl.record.loggers import CSVLogger

    if config.logger == "tensorboard":
        require("tensorboard", purpose="TensorBoard logging (--logger tensorboard)")
        from torchrl.record.loggers import TensorboardLogger

        return TensorboardLogger(exp_name="ppo", log_dir=str(out_dir / "logs"))
    return CSVLogger(exp_name="ppo", log_dir=str(out_dir / "logs"))


def episode_row(nxt) -> dict[str, float]:
    """Means of the episodes that ended in a batch (``nxt`` = the batch's ``"next"`` entries).

    Args:
        nxt: TensorDict with ``done``/``truncated`` ``(..., 1)`` and ``episode_stats``
            ``(..., K)`` (columns :data:`~gym_s3.adapters.torchrl.EPISODE_FIELDS`).

    Returns:
        ``episode/<metric>`` means, ``episode/end_<reason>`` shares and ``episodes`` (count);
        empty when no episode ended.
    """
    from gym_s3.adapters.torchrl import END_FLAGS, EPISODE_FIELDS

    done = nxt["done"].reshape(-1)
    ends = int(done.sum())
    if not ends or "episode_stats" not in nxt.keys():
        return {}
    stats = nxt["episode_stats"].reshape(-1, len(EPISODE_FIELDS))[done].float().mean(0)
    row = {"episodes": float(ends)}
    for name, value in zip(EPISODE_FIELDS, stats.tolist(), strict=True):
        key = f"end_{name}" if name in END_FLAGS else name
        row[EPISODE_PREFIX + key] = value
    truncated = nxt["truncated"].reshape(-1)[done]
    row[EPISODE_PREFIX + "end_time_limit"] = float(truncated.float().mean())
    return row


def log_row(data, stats: dict[str, float], frames: int, t_start: float,
            ctx: DistContext | None = None) -> dict[str, float]:  # fmt: skip
    """Scalars of one iteration: losses, reward, episode ends and metrics, throughput.

    Under torchrun the means are over every rank's batch (episode metrics weighted by the
    episodes that ended on each rank) and ``frames``/``fps`` count the job.
    """
    nxt = data["next"]
    row: dict[str, float] = {
        "frames": float(frames),
        "reward_mean": float(nxt["reward"].mean()),
        "done_rate": float(nxt["done"].float().mean()),
        "terminated_rate": float(nxt["terminated"].float().mean()),
        "fps": frames / (time.perf_counter() - t_start),
        **stats,
    }
    episodes = episode_row(nxt)
    if ctx is not None and ctx.enabled:
        return _job_row(row, episodes, nxt.numel(), ctx)
    return {**row, **episodes}


def _job_row(row: dict[str, float], episodes: dict[str, float], frames: int,
             ctx: DistContext) -> dict[str, float]:  # fmt: skip
    """``row`` and ``episodes`` averaged over every rank (episode means weighted by ends)."""
    from gym_s3.adapters.torchrl import END_FLAGS, EPISODE_METRICS

    ends = episodes.get("episodes", 0.0)
    local = {k: (v, 1.0) for k, v in row.items() if k not in ("frames", "fps")}
    local["episodes"] = (ends, 1.0)
    names = [*EPISODE_METRICS, *(f"end_{r}" for r in (*END_FLAGS, "time_limit"))]
    for name in names:  # every rank passes the same keys; weight 0 where none ended
        local[EPISODE_PREFIX + name] = (episodes.get(EPISODE_PREFIX + name, 0.0), ends)
    out = {**row, **distributed.weighted_means(local, ctx)}
    out["episodes"] *= ctx.world_size
    if not out["episodes"]:
        del out["episodes"]
    out["effective_batch"] = float(ctx.world_size * frames)
    return out


def quick_evaluator(config: PPOConfig) -> Callable[[Any], dict[str, float]]:
    """``callable(actor_net) -> dict``: a quick evaluation of the policy on held-out tracks.

    One deterministic episode per car, ``config.eval_episodes`` cars, on the tracks
    ``config.eval_tracks`` (none of them in ``config.tracks``), in the training dynamics (with
    ``config.dynamics_ensemble``, the cars split between its models as in training) with the
    training task settings and a fixed seed, so successive evaluations drive the same scenarios.
    Returns the means of :func:`policies.evaluate_distilled.evaluate_distilled` (cross-track
    error [m], completion [-], steps, ``failure_rate``, ``completed_rate``, ...).
    """
    import torch

    from policies.evaluate_distilled import evaluate_distilled

    env_kwargs = {**config.env_kwargs(), "tracks": config.eval_tracks}
    env_kwargs.pop("logs", None)
    seed = env_kwargs.pop("seed")

    def evaluate(actor_net) -> dict[str, float]:
        was_training = actor_net.training
        actor_net.eval()
        try:
            with torch.no_grad():
                return evaluate_distilled(
                    actor_net.act, num_envs=config.eval_episodes, seed=seed, **env_kwargs
                )
        finally:
            actor_net.train(was_training)

    return evaluate


def describe(row: dict[str, float]) -> str:
    """Progress-bar text of a log row."""
    text = f"PPO r={row['reward_mean']:+.3f} fps={row['fps']:.0f}"
    if EPISODE_PREFIX + "cte_mean" in row:
        text += f" cte={row[EPISODE_PREFIX + 'cte_mean']:.2f} m"
    return text
