"""Policy inference cost: a single actor against ensembles, next to the env step it drives.

For each shipped policy it times ``Policy.act`` on ``(N, F)`` observations (the deterministic
action every evaluation, GIF and rollout computes once per control step) and, in the same run,
one ``S3Distilled-v0`` step of the policy's own backend with the same N cars (eager, random
actions, autoreset). It also times ensembles of K = 1, 3, 5, 9 copies of the first member of the
shipped ``ddm`` policy, so the cost per member is visible apart from the network shapes.
Prints medians and the ratio act / env step. Asserts nothing. One torch thread unless
``--threads``.

Run: ``python benchmarks/bench_policy.py [--sizes 1 64 4096] [--repeats 50]
[--policies ddm trans dytr oracle]``
"""

from __future__ import annotations

import argparse
import copy
import sys
import warnings
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_frenet import median_ms  # noqa: E402


def _env_step_ms(backend: str, n: int, repeats: int) -> float:
    """Median milliseconds of one eager ``S3Distilled-v0`` step of ``backend`` with ``n`` cars."""
    from gym_s3.envs.config import DistilledConfig
    from gym_s3.envs.core import DistilledCore

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        core = DistilledCore(n, DistilledConfig.from_kwargs(backend=backend, seed=0))
    core.reset(seed=0)
    action = torch.rand(n, 2, generator=torch.Generator().manual_seed(0)) * 2 - 1

    def step() -> None:
        out = core.step(action)
        core.autoreset(out.done)

    return median_ms(step, repeats, warmup=5)


def main() -> None:
    """Print the table."""
    from gym_s3.spec import observation_size
    from policies.checkpoint import Policy, resolve_policy
    from policies.networks import ActorEnsemble, ActorNet

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)  # fmt: skip
    p.add_argument("--sizes", type=int, nargs="+", default=[1, 64, 4096],
                   help="cars N per call, one row each [count]")  # fmt: skip
    p.add_argument("--repeats", type=int, default=50,
                   help="timed calls per cell, of Policy.act and of the env step, after 5 "
                   "untimed ones; the median is printed [count]")  # fmt: skip
    p.add_argument("--policies", nargs="+", default=["ddm", "trans", "dytr", "oracle"],
                   help="shipped policy names or checkpoint paths (the ddm ensemble rows are "
                   "always added)")  # fmt: skip
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads [count]")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), medians of "
          f"{args.repeats} calls; act / env: Policy.act over one eager "
          "S3Distilled-v0 step")  # fmt: skip
    print(f"{'policy':24s} {'members':>7s} {'N':>6s} {'act [ms]':>9s} {'env [ms]':>9s} "
          f"{'act / env':>9s}")  # fmt: skip
    gen = torch.Generator().manual_seed(0)
    env_cache: dict[tuple[str, int], float] = {}
    policies = [resolve_policy(name) for name in args.policies]
    ddm = next((pol for _, pol in policies if pol.backend == "ddm"), resolve_policy("ddm")[1])
    first: ActorNet = ddm.actor.members[0] if isinstance(ddm.actor, ActorEnsemble) else ddm.actor
    for k in (1, 3, 5, 9):
        actor = first if k == 1 else ActorEnsemble([copy.deepcopy(first) for _ in range(k)])
        copies = Policy(actor=actor, backend="ddm", obs_mode="default", meta=dict(ddm.meta))
        policies.append((f"ddm member x{k}", copies))
    for name, policy in policies:
        members = len(policy.actor.members) if isinstance(policy.actor, ActorEnsemble) else 1
        for n in args.sizes:
            obs = torch.randn(n, observation_size(policy.obs_mode), generator=gen)
            act_ms = median_ms(lambda policy=policy, obs=obs: policy.act(obs), args.repeats,
                               warmup=5)  # fmt: skip
            key = (policy.backend, n)
            if key not in env_cache:
                env_cache[key] = _env_step_ms(policy.backend, n, args.repeats)
            env_ms = env_cache[key]
            print(f"{name:24s} {members:7d} {n:6d} {act_ms:9.3f} {env_ms:9.3f} "
                  f"{act_ms / env_ms:9.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
