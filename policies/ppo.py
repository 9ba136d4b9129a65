"""PPO in ``S3Distilled-v0`` with TorchRL (``s3 train``).

Reads top to bottom like a training script: environment → networks → collector → GAE and the
clipped PPO loss → the update loop with logging, quick evaluations and checkpoints.

Truncation is handled by TorchRL's GAE: it stops bootstrapping only on ``terminated`` and cuts the
trace on ``done``, so a time-out bootstraps from the value of the final observation (which the
collector keeps in ``("next", "observation")`` before the reset). The observation normaliser is
frozen while a batch is collected and optimised on, and updated from that batch afterwards, so
the stored log-probabilities stay exact.

Under ``torchrun`` (see :mod:`gym_s3.distributed`) every rank runs this loop on its own
``S3Distilled-v0`` batch (seed ``config.seed + rank``, its own device): actor and critic gradients
are averaged by DistributedDataParallel, the advantage of each minibatch is standardised with
job-wide statistics and the normaliser merges job-wide batch moments, so every rank takes the same
update as one process would on the concatenated batch. Each rank collects ``frames_per_batch``
frames per iteration (the effective batch is ``world_size * frames_per_batch``) and
``total_frames`` counts the frames of the whole job. Only rank 0 logs, evaluates and writes files;
the time-budget decision is rank 0's, broadcast to all.
"""

from __future__ import annotations

import contextlib
import json
import math
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from gym_s3 import checkpoints, distributed, dynamics
from gym_s3._optional import require
from gym_s3.distributed import DistContext
from gym_s3.errors import ConfigError
from gym_s3.progress import progress_bar
from gym_s3.spec import observation_size
from policies.checkpoint import init_actor_from, save_policy
from policies.config import PPOConfig, config_to_dict
from policies.networks import ActorNet, CriticNet, RunningNorm
from policies.train_log import describe, log_row, make_logger


def dynamics_sources(config: PPOConfig) -> list[dict[str, str | None]]:
    """File name, weights SHA-256 and dataset hash of each dynamics model the run trains in.

    Saved with the policy (``training.dynamics_sources``, in :attr:`PPOConfig.dynamics_models`
    order), so a policy names the models it learned in by content, not by a path on the
    training machine (:func:`gym_s3.dynamics.source`).
    """
    return [dynamics.source(model) for model in config.dynamics_models]


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
        world_size: processes of the job (1 outside torchrun).
        effective_batch: frames per PPO iteration over all processes,
            ``world_size * frames_per_batch``.
        actor_net: the trained actor (in memory; not part of ``train_summary.json``).
        critic_net: the trained critic (in memory; not part of ``train_summary.json``).
    """

    checkpoint: Path
    frames: int
    iterations: int
    wall_s: float
    env_frames_per_s: float
    train_frames_per_s: float
    history: list[dict[str, float]] = field(default_factory=list)
    world_size: int = 1
    effective_batch: int = 0
    actor_net: Any = field(default=None, repr=False)
    critic_net: Any = field(default=None, repr=False)


def make_train_env(config: PPOConfig):
    """The TorchRL environment of the run (native ``EnvBase`` over ``S3Distilled-v0``).

    With ``config.imitation`` every observation comes with the scripted expert's action there
    (:class:`policies.imitation.ExpertLabels`, key ``expert_action``). With ``config.obs_noise``
    the observations the actor and critic see carry Gaussian noise
    (:class:`policies.robustness.ObservationNoise`); with ``config.action_delay`` the env
    applies each car's actions a few steps late (:class:`policies.robustness.ActionDelay`).
    """
    from gym_s3.adapters.torchrl import make_torchrl_env

    env = make_torchrl_env(num_envs=config.num_envs, **config.env_kwargs())
    transforms = []
    if config.imitation > 0:  # first: it reads the cars before any transform touches the data
        from policies.imitation import ExpertLabels

        transforms.append(ExpertLabels(config.seed))
    if config.obs_noise > 0:
        from policies.robustness import ObservationNoise

        transforms.append(ObservationNoise(config.obs_noise, config.env_obs_mode, config.seed))
    if config.action_delay > 0:
        from policies.robustness import ActionDelay

        transforms.append(ActionDelay(int(config.action_delay), config.num_envs, config.seed))
    if not transforms:
        return env
    from torchrl.envs import Compose, TransformedEnv

    return TransformedEnv(env, transforms[0] if len(transforms) == 1 else Compose(*transforms))


def build_modules(config: PPOConfig):
    """Actor/critic networks and their TorchRL wrappers.

    Returns:
        ``(actor_net, critic_net, actor, critic)``: the plain networks (saved in checkpoints)
        and the TorchRL ``ProbabilisticActor`` / ``ValueOperator`` around them.
    """
    require("torchrl", purpose="PPO training")
    obs_size = observation_size(config.obs_mode)
    norm = RunningNorm(obs_size)
    actor_net = ActorNet(norm, obs_size, config.hidden, init_log_std=config.init_log_std)
    critic_size = observation_size(config.env_obs_mode)
    critic_norm = norm if critic_size == obs_size else RunningNorm(critic_size)
    critic_net = CriticNet(critic_norm, critic_size, config.hidden)
    actor, critic = _actor_module(actor_net), _critic_module(critic_net)
    return actor_net, critic_net, actor.to(config.device), critic.to(config.device)


def _actor_module(net: torch.nn.Module):
    """``ProbabilisticActor`` (TanhNormal over ``[-1, 1]^2``) around ``net`` (or its DDP)."""
    from tensordict.nn import TensorDictModule
    from torchrl.modules import ProbabilisticActor, TanhNormal

    return ProbabilisticActor(
        TensorDictModule(net, in_keys=["observation"], out_keys=["loc", "scale"]),
        in_keys=["loc", "scale"],
        distribution_class=TanhNormal,
        distribution_kwargs={"low": -1.0, "high": 1.0, "tanh_loc": False},
        return_log_prob=True,
    )


def _critic_module(net: torch.nn.Module):
    """``ValueOperator`` around ``net`` (or its DDP)."""
    from torchrl.modules import ValueOperator

    return ValueOperator(net, in_keys=["observation"])


def build_loss(config: PPOConfig, actor_net, critic_net, actor, critic,
               ctx: DistContext | None = None):  # fmt: skip
    """The clipped PPO loss over the modules of :func:`build_modules`.

    In one process it acts on ``actor``/``critic`` and standardises each minibatch's advantage
    itself. Under torchrun (``ctx``, default: the current job) it acts on DistributedDataParallel
    wrappers of ``actor_net``/``critic_net`` (same parameters, gradients averaged over ranks) and
    expects the advantage standardised job-wide by :func:`minibatch_loss`.
    """
    from torchrl.objectives import ClipPPOLoss

    ctx = ctx or distributed.current()
    if ctx.enabled:
        actor = _actor_module(distributed.wrap(actor_net, ctx))
        critic = _critic_module(distributed.wrap(critic_net, ctx))
    return ClipPPOLoss(
        actor,
        critic,
        clip_epsilon=config.clip_epsilon,
        entropy_coeff=config.entropy_coef,
        critic_coeff=config.critic_coef,
        normalize_advantage=not ctx.enabled,
        loss_critic_type="l2",
    )


def minibatch_loss(loss_fn, minibatch, ctx: DistContext | None = None):
    """Losses of one minibatch (TensorDict of ``(B,)`` frames with ``advantage (B, 1)``).

    Under torchrun the advantage is first standardised with the mean and unbiased std of every
    rank's minibatch (TorchRL's ``(A - mean) / max(std, 1e-6)``), so the averaged gradient equals
    one process's gradient on the concatenated minibatch.
    """
    ctx = ctx or distributed.current()
    if ctx.enabled:
        adv = minibatch["advantage"]
        mean, std = distributed.global_mean_std(adv, ctx)
        eps = torch.finfo(torch.float).resolution
        minibatch.set("advantage", (adv - mean) / std.clamp_min(eps))
    return loss_fn(minibatch)


def train(
    config: PPOConfig,
    out_dir: str | Path,
    *,
    progress: bool = True,
    quick_eval: Any = None,
    dist_timeout_s: float | None = None,
) -> TrainResult:
    """Train a PPO policy in ``S3Distilled-v0`` (one process, or one rank of a torchrun job).

    Args:
        config: run settings (``total_frames`` counts the frames of all ranks together).
        out_dir: folder for checkpoints (``policy_final``, ``policy_iter<k>``), logs and
            ``train_summary.json`` (written by rank 0 only).
        progress: show a progress bar (rank 0 only).
        quick_eval: optional ``callable(actor_net) -> dict[str, float]`` run every
            ``config.eval_every`` iterations on rank 0 and logged as ``eval/<key>`` (``s3
            train`` passes :func:`policies.train_log.quick_evaluator`).
        dist_timeout_s: collective timeout under torchrun [s] (default: ``$S3_DIST_TIMEOUT_S``
            or 300 s).

    Returns:
        the :class:`TrainResult` (the same on every rank, apart from timings and ``eval/*``).

    Raises:
        gym_s3.distributed.PeerFailedError: under torchrun, another rank failed or stopped
            answering for ``dist_timeout_s``.
    """
    require("torchrl", purpose="PPO training")
    with distributed.launch(config.device, timeout_s=dist_timeout_s) as ctx:
        return _train(config, Path(out_dir), ctx, progress=progress, quick_eval=quick_eval)


def _rank_config(config: PPOConfig, ctx: DistContext) -> PPOConfig:
    """The settings this rank runs with: its own seed and device (``config`` in one process)."""
    if not ctx.enabled:
        return config
    return replace(config, seed=ctx.seed(config.seed), device=str(ctx.device(config.device)))


def _train(config: PPOConfig, out: Path, ctx: DistContext, *, progress: bool,
           quick_eval: Any) -> TrainResult:  # fmt: skip
    """The training loop of :func:`train` for the rank ``ctx``."""
    from torchrl.collectors import Collector
    from torchrl.objectives.value import GAE

    main = ctx.is_main
    if main:
        out.mkdir(parents=True, exist_ok=True)
    if ctx.enabled and config.imitation > 0:
        raise ConfigError(
            "imitation (the scripted expert's labels) runs in one process: its gradient does not "
            "pass through DistributedDataParallel; train without torchrun or with --imitation 0"
        )
    local = _rank_config(config, ctx)
    torch.manual_seed(local.seed)
    env = make_train_env(local)
    actor_net, critic_net, actor, critic = build_modules(local)
    if config.init_policy is not None:
        init_actor_from(actor_net, config.init_policy, obs_mode=config.obs_mode,
                        hidden=config.hidden)  # fmt: skip
    start_log_std = actor_net.log_std.detach().clone()  # the noise schedule starts here
    rank_frames = ctx.share(config.total_frames)
    collector = Collector(
        env,
        actor,
        frames_per_batch=local.frames_per_batch,
        total_frames=rank_frames,
        device=local.device,
        auto_register_policy_transforms=False,
    )
    # deactivate_vmap: the value of the steps and of their next observations in two plain calls
    # (identical values; vmap over the critic made GAE ~3x slower on the CPU, bench_ppo.py)
    advantage = GAE(gamma=config.gamma, lmbda=config.gae_lambda, value_network=critic,
                    average_gae=False, deactivate_vmap=True)  # fmt: skip
    loss_fn = build_loss(config, actor_net, critic_net, actor, critic, ctx)
    optim = torch.optim.Adam(loss_fn.parameters(), lr=config.lr, eps=1e-5)
    logger = make_logger(config, out) if main else None
    n_iters = math.ceil(rank_frames / local.frames_per_batch)
    bar = progress_bar(enabled=progress and main)
    bar.start()
    bar_task = bar.add_task("PPO", total=n_iters)
    history: list[dict[str, float]] = []
    frames = 0
    t_start = time.perf_counter()
    collect_time = 0.0
    t_collect = time.perf_counter()
    effective_batch = ctx.world_size * config.frames_per_batch
    training = config_to_dict(config)
    training["dynamics_sources"] = dynamics_sources(config)
    if ctx.enabled:
        training["distributed"] = {"world_size": ctx.world_size, "backend": ctx.backend,
                                   "effective_batch": effective_batch}  # fmt: skip
    try:
        iteration = 0
        for iteration, data in enumerate(collector, start=1):
            collect_time += time.perf_counter() - t_collect
            batch = data.numel() * ctx.world_size
            frames += batch
            if config.anneal_lr:
                for group in optim.param_groups:
                    done_frac = (frames - batch) / config.total_frames
                    group["lr"] = config.lr * max(0.0, 1.0 - done_frac)
            warmup = iteration <= config.critic_warmup
            if config.critic_warmup and iteration == config.critic_warmup + 1:
                for param in actor_net.parameters():  # fresh Adam moments: no jolt at hand-over
                    optim.state.pop(param, None)
            stats = _update(config, data, advantage, loss_fn, optim, ctx, critic_only=warmup,
                            actor_net=actor_net)  # fmt: skip
            update_norms(actor_net, critic_net, data["observation"], ctx)
            if config.final_std is not None and not warmup:  # the actor stays as loaded
                done_frac = min(frames / config.total_frames, 1.0)
                actor_net.cap_log_std(noise_cap(start_log_std, config.final_std, done_frac))
            row = log_row(data, stats, frames, t_start, ctx)
            steer_std, accel_std = actor_net.log_std.detach().exp().tolist()
            row.update({"std_steer": steer_std, "std_accel": accel_std})
            eval_now = bool(config.eval_every) and iteration % config.eval_every == 0
            if main and quick_eval is not None and eval_now:
                row.update({f"eval/{k}": v for k, v in quick_eval(actor_net).items()})
            if logger is not None:
                for key, value in row.items():
                    logger.log_scalar(key, value, step=frames)
            history.append(row)
            if main and config.checkpoint_every and iteration % config.checkpoint_every == 0:
                save_policy(out / f"policy_iter{iteration:04d}", actor_net, backend=config.backend,
                            obs_mode=config.obs_mode, training=training)  # fmt: skip
            bar.update(bar_task, advance=1, description=describe(row))
            elapsed = time.perf_counter() - t_start
            if config.time_budget_s is not None and distributed.agree(
                elapsed > config.time_budget_s, ctx
            ):
                break
            t_collect = time.perf_counter()
    finally:  # an error mid-run must not leave the live bar or the collector running
        collector.shutdown()
        bar.stop()
    wall = time.perf_counter() - t_start
    final = checkpoints.checkpoint_paths(out / "policy_final")[1]
    if main:
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
        world_size=ctx.world_size,
        effective_batch=effective_batch,
        actor_net=actor_net,
        critic_net=critic_net,
    )
    if main:
        skip = ("history", "actor_net", "critic_net")
        summary = {k: v for k, v in result.__dict__.items() if k not in skip}
        summary["checkpoint"] = str(final)
        (out / "train_summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    distributed.barrier(ctx)  # every rank returns once rank 0's files exist
    return result


def noise_cap(start_log_std: Tensor, final_std: float, done_frac: float) -> Tensor:
    """Upper bound ``(A,)`` of the actions' log standard deviation after ``done_frac`` of a run.

    Log-linear from ``start_log_std`` (the actor's at the start) to ``log(final_std)``: the
    noise shrinks by the same factor per frame, so the policy's mean is tuned, by the end, under
    nearly the (absent) noise of deterministic evaluation (:attr:`PPOConfig.final_std`). Where
    ``final_std`` is above the start value the bound rises and caps nothing the learned noise
    would not reach anyway.
    """
    frac = min(max(done_frac, 0.0), 1.0)
    return start_log_std + (math.log(final_std) - start_log_std) * frac


def update_norms(actor_net: ActorNet, critic_net: CriticNet, obs, ctx: DistContext) -> None:
    """Merge a batch ``(..., F')`` into the actor's normaliser and, if it has its own, the critic's.

    The actor's normaliser sees its ``obs_size`` leading features; a privileged critic's
    (``PPOConfig.privileged_critic``) sees them all.
    """
    update_norm(actor_net.norm, obs[..., : actor_net.obs_size], ctx)
    if critic_net.norm is not actor_net.norm:
        update_norm(critic_net.norm, obs, ctx)


def update_norm(norm: RunningNorm, obs, ctx: DistContext) -> None:
    """Merge a batch ``(..., F)`` into the observation normaliser (:meth:`RunningNorm.update`).

    Under torchrun the batch is the union of every rank's batch: its all-reduced count, mean and
    variance are merged by the same (Chan et al.) update, so every rank's normaliser is equal.
    """
    if not ctx.enabled:
        norm.update(obs)
        return
    norm.merge(*distributed.global_moments(obs, ctx))


def update_autocast(config: PPOConfig, device_type: str) -> torch.autocast:
    """The autocast region of the PPO epochs' forward passes (``config.update_dtype``).

    bfloat16 for the hidden layers' products when ``update_dtype="bfloat16"`` (the output layers
    stay float32, :class:`policies.networks.OutputLinear`); a disabled region for float32.
    """
    low = config.update_dtype == "bfloat16"
    return torch.autocast(device_type, dtype=torch.bfloat16, enabled=low)


def _update(config: PPOConfig, data, advantage, loss_fn, optim, ctx: DistContext | None = None,
            *, critic_only: bool = False, actor_net: ActorNet | None = None
            ) -> dict[str, float]:  # fmt: skip
    """GAE on the batch, then ``epochs`` passes of minibatch PPO updates (this rank's losses).

    With ``critic_only`` (the warm-up of a fine-tune) only the value loss is minimised: the
    actor's terms enter with weight 0, so its gradients are zero (DDP still sees every
    parameter used) and Adam, whose moments start at zero, leaves it as it is.
    With ``config.imitation`` the actor's terms include ``imitation`` times the squared distance
    of ``actor_net``'s deterministic action from the expert's labels (:mod:`policies.imitation`).
    Ranks have equal frame counts, hence equal minibatch counts: DDP's all-reduces pair up.
    """
    ctx = ctx or DistContext()
    with torch.no_grad():
        advantage(data)
    imitate = config.imitation > 0
    if imitate:
        from policies.imitation import (
            EXPERT_ACTION,
            EXPERT_GRIP,
            ActorPass,
            imitation_errors,
            imitation_loss,
        )

        if actor_net is None:
            raise ValueError("_update with config.imitation > 0 needs actor_net")
    weigh_grip = imitate and config.imitation_grip_power > 0
    keys = _loss_inputs(loss_fn) + ([EXPERT_ACTION] if imitate else [])
    keys += [EXPERT_GRIP] if weigh_grip else []
    flat = data.reshape(-1).select(*keys)  # minibatches copy only these
    sums: dict[str, float] = {"loss_objective": 0.0, "loss_critic": 0.0, "loss_entropy": 0.0}
    if imitate:
        sums.update(loss_imitation=0.0, imitation_steer_mse=0.0, imitation_pedal_mse=0.0)
    steps = 0
    params = list(loss_fn.parameters())
    actor_weight = 0.0 if critic_only else 1.0
    with ActorPass(actor_net) if imitate else contextlib.nullcontext() as actor_pass:
        for _ in range(config.epochs):
            perm = torch.randperm(flat.shape[0], device=flat.device)
            for idx in perm.split(config.minibatch_size):
                minibatch = flat[idx]
                with update_autocast(config, flat.device.type):
                    losses = minibatch_loss(loss_fn, minibatch, ctx)
                    if imitate:  # on the loss's own actor pass (no second forward)
                        loc = actor_pass.take(idx.numel())
                        losses.update(imitation_errors(loc, minibatch[EXPERT_ACTION]))
                        losses["loss_imitation"] = imitation_loss(
                            loc,
                            minibatch[EXPERT_ACTION],
                            accel_weight=config.imitation_accel_weight,
                            caution=config.imitation_caution,
                            grip=minibatch[EXPERT_GRIP] if weigh_grip else None,
                            grip_power=config.imitation_grip_power,
                        )
                actor_terms = losses["loss_objective"] + losses["loss_entropy"]
                if imitate:
                    actor_terms = actor_terms + config.imitation * losses["loss_imitation"]
                total = losses["loss_critic"] + actor_weight * actor_terms
                optim.zero_grad(set_to_none=True)
                total.backward()
                torch.nn.utils.clip_grad_norm_(params, config.max_grad_norm)
                optim.step()
                for key in sums:
                    sums[key] += float(losses[key].detach())
                steps += 1
    return {k: v / max(steps, 1) for k, v in sums.items()}


def _loss_inputs(loss_fn) -> list:
    """Keys of a batch the PPO loss reads once GAE has run.

    Observation, action, its log-prob, advantage and value target: the ``next`` step,
    distribution parameters and collector bookkeeping are not copied into every minibatch
    (indexing a minibatch gets about 3x cheaper; the losses are identical).
    """
    keys = {k for k in loss_fn.in_keys if not (isinstance(k, tuple) and k[0] == "next")}
    keys |= {loss_fn.tensor_keys.advantage, loss_fn.tensor_keys.value_target}
    return sorted(keys, key=str)
