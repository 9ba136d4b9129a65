"""Where a PPO update's time goes: TorchRL's clipped loss against the networks' own arithmetic.

``s3 train`` spends most of its wall-clock time in the PPO epochs, not in the env
(``bench_ppo.py``: training / env-only 0.20-0.22 at N = 2048 with six epochs). This benchmark
times one minibatch gradient step of a preset's networks on a random batch, three ways:

* **ppo step**: what ``s3 train`` runs per minibatch (``policies.ppo.build_loss`` +
  ``minibatch_loss``: TorchRL ``ClipPPOLoss`` with the ``TanhNormal`` actor and the critic, then
  backward, gradient clipping and Adam; not the minibatch gather and the loss read-outs, so
  slightly less than the trainer's step);
* **networks only**: forward and backward of the same actor and critic MLPs through their
  normalisers with a plain sum as the loss, then Adam: the matrix products any PPO update of
  these networks must do;
* **forward only**: the networks' forward passes (no gradient).

From the ppo step it derives the update's cost per collected frame (``epochs`` passes over every
frame) and the highest training / env-only ratio the update leaves, given an env-only rate:
``ratio <= t_env / (t_env + t_update)`` per frame, before any collection overhead.

    python benchmarks/bench_ppo_update.py --preset ddm --env-steps-per-s 268000
    python benchmarks/bench_ppo_update.py --preset ddm --update-dtype bfloat16

Nothing is asserted; medians of ``--repeats`` steps after ``--warmup``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_frenet import median_ms  # noqa: E402

from policies.config import PRESETS, preset  # noqa: E402
from policies.ppo import build_loss, build_modules, minibatch_loss, update_autocast  # noqa: E402


def _batch(cfg, actor, critic, size: int):
    """A minibatch as the PPO loss reads it (observations, actions and their log-probs, GAE)."""
    from tensordict import TensorDict

    from gym_s3.spec import observation_size

    obs = torch.randn(size, observation_size(cfg.env_obs_mode))
    td = TensorDict({"observation": obs}, [size])
    with torch.no_grad():
        actor(td)
        critic(td)
    td.set("advantage", torch.randn(size, 1))
    td.set("value_target", td["state_value"] + 0.1 * torch.randn(size, 1))
    return td


def main(argv: list[str] | None = None) -> None:
    """Parse the options and print one row per measurement."""
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--preset", default="ddm", choices=sorted(PRESETS), help="PPO preset")
    parser.add_argument("--minibatch-size", type=int, default=None,
                        help="frames per gradient step [count]; omitted: the preset's")  # fmt: skip
    parser.add_argument("--env-steps-per-s", type=float, default=None,
                        help="env-only rate at the training N to compare with [frames/s] "
                        "(bench_ppo.py prints it); omitted: no ratio")  # fmt: skip
    parser.add_argument("--repeats", type=int, default=30,
                        help="timed steps of each of the three measurements; the median is "
                        "printed [count]")  # fmt: skip
    parser.add_argument("--warmup", type=int, default=5,
                        help="untimed steps before each measurement [count]")  # fmt: skip
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads [count]")
    parser.add_argument("--update-dtype", default="float32", choices=["float32", "bfloat16"],
                        help="precision of the forward and backward passes "
                        "(PPOConfig.update_dtype: bfloat16 autocast, hidden layers)")  # fmt: skip
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    cfg = preset(args.preset, update_dtype=args.update_dtype)
    size = args.minibatch_size or cfg.minibatch_size
    actor_net, critic_net, actor, critic = build_modules(cfg)
    loss_fn = build_loss(cfg, actor_net, critic_net, actor, critic)
    params = list(loss_fn.parameters())
    optim = torch.optim.Adam(params, lr=1e-6, eps=1e-5)
    td = _batch(cfg, actor, critic, size)
    obs = td["observation"]

    def ppo_step() -> None:
        with update_autocast(cfg, "cpu"):
            losses = minibatch_loss(loss_fn, td.clone(False))
        total = losses["loss_critic"] + losses["loss_objective"] + losses["loss_entropy"]
        optim.zero_grad(set_to_none=True)
        total.backward()
        torch.nn.utils.clip_grad_norm_(params, cfg.max_grad_norm)
        optim.step()

    def networks_step() -> None:
        with update_autocast(cfg, "cpu"):
            loc, _ = actor_net(obs)
            total = loc.sum() + critic_net(obs).sum()
        optim.zero_grad(set_to_none=True)
        total.backward()
        optim.step()

    def forward_only() -> None:
        with torch.no_grad(), update_autocast(cfg, "cpu"):
            actor_net(obs)
            critic_net(obs)

    ppo_ms = median_ms(ppo_step, args.repeats, args.warmup)
    networks_ms = median_ms(networks_step, args.repeats, args.warmup)
    forward_ms = median_ms(forward_only, args.repeats, args.warmup)
    print(f"preset {args.preset}, minibatch {size}, hidden {cfg.hidden}, epochs {cfg.epochs}, "
          f"update {cfg.update_dtype}, {torch.get_num_threads()} threads")  # fmt: skip
    print(f"  ppo step (ClipPPOLoss, backward, clip, Adam) {ppo_ms:8.2f} ms per minibatch")
    print(f"  networks only (forward, backward, Adam)      {networks_ms:8.2f} ms per minibatch")
    print(f"  forward only                                 {forward_ms:8.2f} ms per minibatch")
    update_us = 1e3 * ppo_ms * cfg.epochs / size
    networks_us = 1e3 * networks_ms * cfg.epochs / size
    print(f"  update cost per collected frame ({cfg.epochs} epochs): {update_us:.2f} us "
          f"(networks alone: {networks_us:.2f} us)")  # fmt: skip
    if args.env_steps_per_s:
        env_us = 1e6 / args.env_steps_per_s
        print(f"  env-only {env_us:.2f} us per frame: training / env-only <= "
              f"{env_us / (env_us + update_us):.2f} before collection overhead")  # fmt: skip


if __name__ == "__main__":
    main()
