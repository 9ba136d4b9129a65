"""PPO in ``S3Distilled-v0`` with TorchRL (``s3 train``).

Reads top to bottom like a training script: environment → networks → collector → GAE and the
clipped PPO loss → the update loop with logging, quick evaluations and checkpoints.

Truncation is handled by TorchRL's GAE: it stops bootstrapping only on ``terminated`` and cuts the
trace on ``done``, so a time-out bootstraps from the value of the final observation (which the
collector keeps in ``("next", "observation")`` before the reset). The observation normaliser is
frozen while a batch is collected and optimised on, and updated from that batch afterwards, so
the stored log-probabilities stay exact.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from gym_s3._optional import require
from gym_s3.spec import observation_size
from policies.checkpoint import save_policy
from policies.config import PPOConfig, config_to_dict
from policies.networks import ActorNet, CriticNet, RunningNorm


@dataclass
class TrainResult:
    """Outcome of a training run.

    Attributes:
        checkpoint: path of the final policy checkpoint (sidecar).
        frames: environment steps collected.
        iterations: PPO iterations done.
        wall_s: wall-clock time [s].
        env_frames_per_s: collection throughput (env + policy inference) [frames/s].
        train_frames_per_s: overall throughput including the updates [frames/s].
        history: per-iteration log rows.
    """

    checkpoint: Path
    frames: int
    iterations: int
    wall_s: float
    env_frames_per_s: float
    train_frames_per_s: float
    history: list[dict[str, float]] = field(default_factory=list)


def make_train_env(config: PPOConfig):
    """The TorchRL environment of the run (native ``EnvBase`` over ``S3Distilled-v0``)."""
    from gym_s3.adapters.torchrl import make_torchrl_env

    return make_torchrl_env(num_envs=config.num_envs, **config.env_kwargs())


def build_modules(config: PPOConfig):
    """Actor/critic networks and their TorchRL wrappers.

    Returns:
        ``(actor_net, critic_net, actor, critic)``: the plain networks (saved in checkpoints)
        and the TorchRL ``ProbabilisticActor`` / ``ValueOperator`` around them.
    """
    require("torchrl", purpose="PPO training")
    from tensordict.nn import TensorDictModule
    from torchrl.modules import ProbabilisticActor, TanhNormal, ValueOperator

    obs_size = observation_size(config.obs_mode)
    norm = RunningNorm(obs_size)
    actor_net = ActorNet(norm, obs_size, config.hidden, init_log_std=config.init_log_std)
    critic_net = CriticNet(norm, obs_size, config.hidden)
    actor = ProbabilisticActor(
        TensorDictModule(actor_net, in_keys=["observation"], out_keys=["loc", "scale"]),
        in_keys=["loc", "scale"],
        distribution_class=TanhNormal,
        distribution_kwargs={"low": -1.0, "high": 1.0, "tanh_loc": False},
        return_log_prob=True,
    )
    critic = ValueOperator(critic_net, in_keys=["observation"])
    return actor_net, critic_net, actor.to(config.device), critic.to(config.device)


def _logger(config: PPOConfig, out_dir: Path):
    from torchrl.record.loggers import CSVLogger

    if config.logger == "tensorboard":
        require("tensorboard", purpose="TensorBoard logging (--logger tensorboard)")
        from torchrl.record.loggers import TensorboardLogger

        return TensorboardLogger(exp_name="ppo", log_dir=str(out_dir / "logs"))
    return CSVLogger(exp_name="ppo", log_dir=str(out_dir / "logs"))


def train(
    config: PPOConfig,
    out_dir: str | Path,
    *,
    progress: bool = True,
    quick_eval: Any = None,
) -> TrainResult:
    """Train a PPO policy in ``S3Distilled-v0``.

    Args:
        config: run settings.
        out_dir: folder for checkpoints (``policy_final``, ``policy_iter<k>``), logs and
            ``train_summary.json``.
        progress: show a progress bar.
        quick_eval: optional ``callable(actor_net) -> dict[str, float]`` run every
            ``config.eval_every`` iterations (see :func:`policies.evaluate.quick_eval`).

    Returns:
        the :class:`TrainResult`.
    """
    require("torchrl", purpose="PPO training")
    from torchrl.collectors import Collector
    from torchrl.objectives import ClipPPOLoss
    from torchrl.objectives.value import GAE

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(config.seed)
    env = make_train_env(config)
    actor_net, _critic_net, actor, critic = build_modules(config)
    collector = Collector(
        env,
        actor,
        frames_per_batch=config.frames_per_batch,
        total_frames=config.total_frames,
        device=config.device,
        auto_register_policy_transforms=False,
    )
    advantage = GAE(gamma=config.gamma, lmbda=config.gae_lambda, value_network=critic,
                    average_gae=False)  # fmt: skip
    loss_fn = ClipPPOLoss(
        actor,
        critic,
        clip_epsilon=config.clip_epsilon,
        entropy_coeff=config.entropy_coef,
        critic_coeff=config.critic_coef,
        normalize_advantage=True,
        loss_critic_type="l2",
    )
    optim = torch.optim.Adam(loss_fn.parameters(), lr=config.lr, eps=1e-5)
    logger = _logger(config, out)
    n_iters = math.ceil(config.total_frames / config.frames_per_batch)
    bar = _progress(progress, n_iters)
    history: list[dict[str, float]] = []
    frames = 0
    t_start = time.perf_counter()
    collect_time = 0.0
    t_collect = time.perf_counter()
    training = config_to_dict(config)
    iteration = 0
    for iteration, data in enumerate(collector, start=1):
        collect_time += time.perf_counter() - t_collect
        frames += data.numel()
        if config.anneal_lr:
            for group in optim.param_groups:
                done_frac = (frames - data.numel()) / config.total_frames
                group["lr"] = config.lr * max(0.0, 1.0 - done_frac)
        stats = _update(config, data, advantage, loss_fn, optim)
        actor_net.norm.update(data["observation"])
        row = _log_row(data, stats, frames, t_start)
        if quick_eval is not None and config.eval_every and iteration % config.eval_every == 0:
            row.update({f"eval/{k}": v for k, v in quick_eval(actor_net).items()})
        for key, value in row.items():
            logger.log_scalar(key, value, step=frames)
        history.append(row)
        if config.checkpoint_every and iteration % config.checkpoint_every == 0:
            save_policy(out / f"policy_iter{iteration:04d}", actor_net, backend=config.backend,
                        obs_mode=config.obs_mode, training=training)  # fmt: skip
        if bar is not None:
            bar.advance(_describe(row))
        elapsed = time.perf_counter() - t_start
        if config.time_budget_s is not None and elapsed > config.time_budget_s:
            break
        t_collect = time.perf_counter()
    collector.shutdown()
    if bar is not None:
        bar.stop()
    wall = time.perf_counter() - t_start
    final = save_policy(out / "policy_final", actor_net, backend=config.backend,
                        obs_mode=config.obs_mode,
                        training={**training, "frames": frames, "wall_s": wall})  # fmt: skip
    result = TrainResult(
        checkpoint=final,
        frames=frames,
        iterations=iteration,
        wall_s=wall,
        env_frames_per_s=frames / max(collect_time, 1e-9),
        train_frames_per_s=frames / wall,
        history=history,
    )
    summary = {k: v for k, v in result.__dict__.items() if k != "history"}
    summary["checkpoint"] = str(final)
    (out / "train_summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return result


def _update(config: PPOConfig, data, advantage, loss_fn, optim) -> dict[str, float]:
    """GAE on the batch, then ``epochs`` passes of minibatch PPO updates."""
    with torch.no_grad():
        advantage(data)
    flat = data.reshape(-1)
    sums: dict[str, float] = {"loss_objective": 0.0, "loss_critic": 0.0, "loss_entropy": 0.0}
    steps = 0
    params = list(loss_fn.parameters())
    for _ in range(config.epochs):
        perm = torch.randperm(flat.shape[0], device=flat.device)
        for idx in perm.split(config.minibatch_size):
            losses = loss_fn(flat[idx])
            total = losses["loss_objective"] + losses["loss_critic"] + losses["loss_entropy"]
            optim.zero_grad(set_to_none=True)
            total.backward()
            torch.nn.utils.clip_grad_norm_(params, config.max_grad_norm)
            optim.step()
            for key in sums:
                sums[key] += float(losses[key].detach())
            steps += 1
    return {k: v / max(steps, 1) for k, v in sums.items()}


def _log_row(data, stats: dict[str, float], frames: int, t_start: float) -> dict[str, float]:
    """Scalars of one iteration: losses, reward, episode ends and throughput."""
    nxt = data["next"]
    done = nxt["done"]
    row = {
        "frames": float(frames),
        "reward_mean": float(nxt["reward"].mean()),
        "done_rate": float(done.float().mean()),
        "terminated_rate": float(nxt["terminated"].float().mean()),
        "fps": frames / (time.perf_counter() - t_start),
        **stats,
    }
    for key in ("episode_cte_mean", "episode_progress", "episode_completion"):
        if key in nxt.keys():
            vals = nxt[key][done.squeeze(-1)]
            if vals.numel():
                row[key] = float(vals.float().mean())
    return row


def _describe(row: dict[str, float]) -> str:
    return f"PPO r={row['reward_mean']:+.3f} fps={row['fps']:.0f}"


class _Bar:
    """A rich progress bar over PPO iterations."""

    def __init__(self, total: int) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

        self.progress = Progress(
            "{task.description}", BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()
        )
        self.task = self.progress.add_task("PPO", total=total)
        self.progress.start()

    def advance(self, description: str) -> None:
        """One iteration done."""
        self.progress.update(self.task, advance=1, description=description)

    def stop(self) -> None:
        """Close the bar."""
        self.progress.stop()


def _progress(enabled: bool, total: int) -> _Bar | None:
    """A started progress bar, or None."""
    return _Bar(total) if enabled else None
