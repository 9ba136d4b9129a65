"""``s3 train`` (PPO in the distilled env); registers ``ensemble``, ``evaluate`` and ``gap`` too."""

from __future__ import annotations

import argparse
import os
import shutil
from pathlib import Path
from typing import Any

from gym_s3.errors import ConfigError
from gym_s3.rewards import RewardWeights
from gym_s3.spec import HISTORY_STEPS


def register(subparsers: Any) -> None:
    """Add ``train``, ``ensemble``, ``evaluate`` and ``gap`` to the ``s3`` command line."""
    from policies import ensemble, evaluate_cli, gap_cli

    _register_train(subparsers)
    ensemble.register(subparsers)
    evaluate_cli.register(subparsers)
    gap_cli.register(subparsers)


def _register_train(subparsers: Any) -> None:
    """Add ``s3 train`` (one option per tunable :class:`PPOConfig` field)."""
    from gym_s3.cli_parser import preset_values
    from policies.config import PRESETS, PPOConfig

    p = subparsers.add_parser(
        "train",
        help="train a PPO policy in S3Distilled-v0 (TorchRL)",
        description="Train a PPO driving policy only inside the distilled environment "
        "S3Distilled-v0. Settings come from a preset; options override single fields. "
        "Runs unchanged under `torchrun --nproc-per-node K` (data-parallel: each process "
        "simulates its own num_envs cars; total-frames counts all processes).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument(
        "--preset",
        default="ddm",
        choices=sorted(PRESETS),
        help="named settings: one per dynamics backend, 'oracle', 'ddm_slow_starts' (the "
        "recipe of the shipped ddm's three members, with --imitation 10: standing starts, towns "
        "0-5, full-ice laps and walking-pace corners drawn 11x as often; 'dytr' is that recipe "
        "on dytr), 'ddm_restarts' (the standing-start recipe before it), 'tiny' (smoke test)",
    )
    p.add_argument(
        "--out",
        type=Path,
        default=Path("runs/ppo"),
        help="output folder for checkpoints, logs and train_summary.json",
    )
    defaults = PPOConfig()
    #: the type of the options whose default is None (the others take their default's type)
    _OPTIONAL_KINDS = {"time_budget_s": float, "rest_start_lateral_m": float,
                       "rest_start_heading_rad": float, "final_std": float}  # fmt: skip
    helps = {
        "backend": "dynamics backend to train in (bicycle, ddm, trans, dytr)",
        "dynamics_checkpoint": "dynamics checkpoint path (none: the shipped one of the backend), "
        "or a shipped set: ddm:ice trains in the three models the shipped ddm policy trained in",
        "obs_mode": "observation mode: default; oracle (adds the friction under each wheel); "
        "history (adds the measured accelerations and the actions of the last "
        f"{HISTORY_STEPS} control steps, from which the grip can be inferred)",
        "num_envs": "cars simulated in parallel",
        "rollout_steps": "steps per car per batch [steps of 50 ms]",
        "total_frames": "stop after this many environment steps",
        "time_budget_s": "stop after this wall-clock time [s]",
        "epochs": "PPO epochs per batch",
        "update_dtype": "precision of the PPO epochs' forward and backward passes: float32, or "
        "bfloat16 (torch.autocast on the hidden layers; parameters, Adam, output layers, GAE "
        "and the collection stay float32; pays only with native bfloat16: AVX-512 BF16 / AMX "
        "CPUs, GPUs)",
        "minibatch_size": "frames per gradient step",
        "lr": "Adam learning rate",
        "gamma": "discount per 50 ms step (its horizon 1 / (1 - gamma) steps: 0.99 looks "
        "about 5 s ahead, 0.995 about 10 s) [-]",
        "gae_lambda": "GAE lambda (bias-variance trade-off of the advantages) [-]",
        "entropy_coef": "entropy bonus weight",
        "privileged_critic": "1: the critic also sees the friction under each wheel and the "
        "actor (the saved policy) does not, an asymmetric actor-critic (with --obs-mode "
        "default); 0: the critic sees what the actor sees",
        "final_std": "exploration noise at the end of training: the actions' pre-squash "
        "standard deviation is capped by a bound falling log-linearly from its value at the start "
        "to this over the run, so the mean action is tuned for noise-free (deterministic) "
        "driving; none: learned freely [-]",
        "max_episode_steps": "episode length [steps of 50 ms]",
        "pool": "surface distribution of the scenario pool: all_surfaces (every surface, "
        "full-ice/snow laps, ice at corners, asphalt->ice transitions), default (mostly dry), "
        "default_ice (default with full-ice laps in 15 %% of the layouts) or ice_transitions "
        "(experimental, in no preset: default 70 %%, full ice 15 %%, ice laps with a long asphalt "
        "stretch 7.5 %%, asphalt/wet/gravel/snow laps with a long ice stretch 7.5 %%)",
        "start_from_rest": "share of episodes starting at standstill [0..1]",
        "start_lateral_m": "start lateral offset from the line, U(-x, x) [m]",
        "start_heading_rad": "start heading error, U(-x, x) [rad]",
        "rest_start_lateral_m": "standing starts only (with --start-from-rest > 0): lateral "
        "offset U(-x, x) [m] (none: --start-lateral-m)",
        "rest_start_heading_rad": "standing starts only (with --start-from-rest > 0): heading "
        "error U(-x, x) [rad] (none: --start-heading-rad)",
        "rest_start_prev_action": "1: standing starts show a drawn previous action in their "
        "first observation, steer U(-1, 1) and accel U(-1, 0) (at rest after braking; a policy "
        "must not read its last brake as a reason to stay); 0: zero, like every start",
        "slow_start_weight": "scenarios whose target speed falls below 4 m/s within 25 m of "
        "their start (tight corners on ice and snow, where a car crawls at full lock) are drawn "
        "1 + x times as often as the others (0: uniform) [-]",
        "friction_noise": "per-episode friction scale U(1-x, 1+x) the car feels [-]",
        "obs_noise": "observation noise std as a share of each feature's half range [-]",
        "action_delay": "longest per-episode actuator delay U{0..x} [steps of 50 ms]",
        "init_policy": "policy checkpoint (.json) to start from: its actor and observation "
        "normaliser (fine-tuning, curriculum stages); none: fresh networks",
        "imitation": "weight of the expert-imitation term: the squared distance of the "
        "policy's deterministic action from the noise-free scripted expert's at the states its "
        "own rollouts visit, added to the PPO loss (DAgger labels inside PPO; CPU only; 0: "
        "plain PPO) [-]",
        "imitation_accel_weight": "weight of the pedal axis inside the imitation term, relative "
        "to steering's 1 (0: imitate the steering only and leave throttle and brake to the "
        "reward; the expert's pedals follow the friction under its wheels, which the default "
        "observation does not show) [-]",
        "imitation_caution": "factor on the imitation term's pedal error where the policy's "
        "pedal is above the expert's (more throttle or less brake); above 1 the policy learns "
        "the cautious end of pedal labels its observation cannot tell apart instead of their "
        "average (1: symmetric) [-]",
        "imitation_grip_power": "exponent p of a grip weight on the imitation term's pedal "
        "error: it counts (1 / mu)^p times, mu the mean friction under the wheels, floored at "
        "0.05 (the expert's pedals scale with the grip; 2: errors relative to the pedal range "
        "the grip allows, 100x on ice, 16x on snow; 0: unweighted; in [0, 4], needs "
        "--imitation > 0) [-]",
        "critic_warmup": "first iterations that train only the critic, actor weights frozen "
        "(use with --init-policy) [iterations]",
        "eval_every": "every N iterations, evaluate the policy on held-out tracks (preset "
        "eval_tracks) and log eval/<metric> (0: never)",
        "eval_episodes": "episodes of each quick evaluation (one per car) [count]",
        "checkpoint_every": "checkpoint every N iterations (0: only the final one)",
        "seed": "random seed",
        "device": "torch device (cpu, cuda)",
        "logger": "csv or tensorboard",
    }
    for name, text in helps.items():
        default = getattr(defaults, name)
        kind = type(default) if default is not None else _OPTIONAL_KINDS.get(name, str)
        if kind is bool:
            kind = _switch
        p.add_argument(f"--{name.replace('_', '-')}", dest=name, type=kind, default=None,
                       metavar="{0,1}" if kind is _switch else None,
                       help=f"{text}; {preset_values(PRESETS, name)}")  # fmt: skip
    p.add_argument("--hidden", nargs="+", type=int, default=None, metavar="WIDTH",
                   help="hidden layer widths of the actor and the critic, e.g. '128 128'; "
                   + preset_values(PRESETS, "hidden"))  # fmt: skip
    p.add_argument("--tracks", nargs="+", default=None, metavar="TRACK",
                   help="tracks of the scenario pool (putnam, procedural:<seed>, town:<seed>, "
                   "or a track file); keep evaluation tracks out of it; "
                   + preset_values(PRESETS, "tracks"))  # fmt: skip
    p.add_argument("--dynamics-ensemble", nargs="+", default=None, metavar="CHECKPOINT",
                   help="more dynamics checkpoints of --backend (paths; the backend's name "
                   "stands for its shipped one): the training cars are split evenly between "
                   "--dynamics-checkpoint (or the shipped model) and these, each car keeping its "
                   "model in every episode, so the policy meets the models' disagreement; "
                   + preset_values(PRESETS, "dynamics_ensemble"))  # fmt: skip
    p.add_argument("--logs", nargs="+", default=None, metavar="PATH",
                   help="driving logs (dataset folders or episode files) whose expert "
                   "trajectories join the scenario pool; "
                   + preset_values(PRESETS, "logs"))  # fmt: skip
    weights = RewardWeights()
    p.add_argument("--reward", nargs="+", default=None, metavar="TERM=VALUE",
                   help="reward weights that differ from the preset's, e.g. "
                   "'precision=0.5 precision_width=0.1' (the other terms keep the preset's "
                   "weights; the ddm, trans and dytr presets set precision=0.25); terms and "
                   "the env's defaults: "
                   + ", ".join(f"{k}={v:g}" for k, v in weights.to_dict().items())
                   + " (units: gym_s3.rewards.RewardWeights)")  # fmt: skip
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--overwrite", action="store_true",
                   help="--out may hold an earlier run: delete its logs, policy_* checkpoints "
                   "and train_summary.json first (without it such a folder is refused, so two "
                   "runs never mix)")  # fmt: skip
    p.add_argument("--threads", type=int, default=None,
                   help="torch intra-op CPU threads (0: torch's choice, one per core); if omitted: "
                   "$S3_TORCH_THREADS, else 1 unless OMP_NUM_THREADS is set")  # fmt: skip
    p.add_argument("--ship", action="store_true",
                   help="also save the final policy as policies/assets/<preset>.{json,safetensors} "
                   "(how the shipped policies are made)")  # fmt: skip
    p.add_argument(
        "--dist-timeout",
        type=float,
        default=None,
        help="under torchrun: seconds a rank waits for the others in a collective before the "
        "job stops with an error; if omitted: $S3_DIST_TIMEOUT_S, else 300 [s]",
    )
    p.set_defaults(func=_run_train)


def _switch(text: str) -> bool:
    """A command-line switch value: ``1``/``true``/``yes`` or ``0``/``false``/``no``."""
    value = text.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected 1 or 0 (true or false), got {text!r}")


def parse_reward(items: list[str], base: RewardWeights | None = None) -> RewardWeights:
    """``['precision=0.25', ...]`` -> ``base`` (default: the env's weights) with those replaced.

    ``s3 train`` passes its preset's weights as ``base``, so ``--reward speed=0.1`` changes the
    speed weight of the preset's recipe and keeps the rest of it.

    Raises:
        ConfigError: an item is not ``TERM=NUMBER`` or names no reward term.
    """
    values: dict[str, float] = {}
    for item in items:
        name, _, text = item.partition("=")
        try:
            values[name.strip()] = float(text)
        except ValueError:
            raise ConfigError(
                f"--reward expects TERM=NUMBER (e.g. precision=0.25), got {item!r}"
            ) from None
    return RewardWeights.from_dict({**(base or RewardWeights()).to_dict(), **values})


#: What ``s3 train`` writes into ``--out`` (globs).
RUN_OUTPUTS = ("logs", "train_summary.json", "policy_*.json", "policy_*.safetensors")


def _claim_out(out: Path, *, overwrite: bool) -> None:
    """Refuse an ``--out`` holding an earlier run, or delete that run's files with ``overwrite``.

    Raises:
        ConfigError: ``out`` holds run outputs and ``overwrite`` is False.
    """
    if not out.is_dir():
        return
    found = sorted({p for pattern in RUN_OUTPUTS for p in out.glob(pattern)})
    if not found:
        return
    if not overwrite:
        names = ", ".join(p.name for p in found[:4]) + (", ..." if len(found) > 4 else "")
        raise ConfigError(
            f"{out} already holds a training run ({names}); a new run there would mix its logs "
            "and checkpoints with the old ones. Choose a new --out, or pass --overwrite to "
            "delete that run's files first"
        )
    if os.environ.get("RANK", "0") != "0":  # under torchrun, rank 0 deletes
        return
    for path in found:
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink()


def train_config(args: argparse.Namespace) -> Any:
    """The :class:`~policies.config.PPOConfig` of parsed ``s3 train`` arguments.

    The preset's settings, with every option given on the command line replaced.
    """
    from policies.config import preset

    overrides = {k: v for k, v in vars(args).items()
                 if k in preset(args.preset).__dataclass_fields__ and v is not None}  # fmt: skip
    for name in ("logs", "hidden", "tracks", "dynamics_ensemble"):
        if name in overrides:
            overrides[name] = tuple(overrides[name])
    if "reward" in overrides:
        overrides["reward"] = parse_reward(overrides["reward"], preset(args.preset).reward)
    return preset(args.preset, **overrides)


def _run_train(args: argparse.Namespace) -> int:
    """``s3 train`` (one process, or one rank of a torchrun job; only rank 0 prints)."""
    from gym_s3 import distributed
    from gym_s3.threads import use_threads
    from policies.ppo import train
    from policies.train_log import quick_evaluator

    use_threads(args.threads)
    config = train_config(args)
    _claim_out(args.out, overwrite=args.overwrite)
    with distributed.launch(config.device, timeout_s=args.dist_timeout) as ctx:
        quick_eval = quick_evaluator(config) if config.eval_every and ctx.is_main else None
        result = train(config, args.out, progress=not args.no_progress, quick_eval=quick_eval)
        if not ctx.is_main:
            return 0
    print(f"policy: {result.checkpoint}")
    if args.ship:
        from policies.checkpoint import load_policy, save_policy, shipped_policy

        policy = load_policy(result.checkpoint)
        target = save_policy(shipped_policy(args.preset).with_suffix(""), policy.actor,
                             backend=policy.backend, obs_mode=policy.obs_mode,
                             training=policy.meta["training"])  # fmt: skip
        print(f"shipped as {target}")
    print(f"{result.frames} frames in {result.wall_s:.0f} s "
          f"({result.train_frames_per_s:.0f} frames/s overall, "
          f"{result.env_frames_per_s:.0f} frames/s collection)")  # fmt: skip
    if result.world_size > 1:
        print(f"{result.world_size} processes, effective batch {result.effective_batch} frames "
              f"({result.effective_batch // result.world_size} per process)")  # fmt: skip
    return 0
