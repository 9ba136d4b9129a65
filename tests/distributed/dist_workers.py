"""Code that runs inside each rank of the test jobs (see :mod:`dist_harness`).

Workers write what the tests compare (tensors in safetensors, numbers in JSON) to the results
folder, named per rank; the assertions live in the test modules.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import torch
from safetensors.torch import save_file

from gym_s3 import distributed
from gym_s3.distill.windows import TensorWindows

#: Collective timeout of the job of :func:`checks` [s].
TIMEOUT_S = 60.0
#: Distillation settings of :func:`checks` (per-rank ``batch_size`` 32 is added).
DISTILL_SETTINGS = {"epochs": 2, "lr": 1e-3, "horizon": 2, "progress": False}


def _grads(modules: list[torch.nn.Module]) -> dict[str, torch.Tensor]:
    """Gradients of every parameter, named ``m<i>.<name>``."""
    return {f"m{i}.{n}": p.grad.detach().clone()
            for i, m in enumerate(modules) for n, p in m.named_parameters()}  # fmt: skip


def _state(modules: list[torch.nn.Module]) -> dict[str, torch.Tensor]:
    """Parameters and buffers, named ``m<i>.<name>``."""
    return {f"m{i}.{n}": t.detach().clone().contiguous()
            for i, m in enumerate(modules) for n, t in m.state_dict().items()}  # fmt: skip


class RecordingWindows:
    """A window source that records the indices each rank draws (and can fail or stall).

    Args:
        inner: the real windows.
        fail_at: raise on this ``batch`` call (1-based; ``None``: never).
        stall_at: sleep ``stall_s`` on this call (``None``: never).
        stall_s: stall length [s].
    """

    def __init__(self, inner: TensorWindows, fail_at: int | None = None,
                 stall_at: int | None = None, stall_s: float = 0.0) -> None:  # fmt: skip
        self.inner = inner
        self.history, self.horizon = inner.history, inner.horizon
        self.drawn: list[torch.Tensor] = []
        self.fail_at, self.stall_at, self.stall_s = fail_at, stall_at, stall_s

    def __len__(self) -> int:
        """Number of windows."""
        return len(self.inner)

    def batch(self, index: torch.Tensor) -> dict[str, torch.Tensor]:
        """The inner windows ``index`` (recorded; the injected fault or stall happens here)."""
        self.drawn.append(index.clone())
        if len(self.drawn) == self.fail_at:
            Path(self.marker).write_text(json.dumps({"t": time.time()}))
            raise ValueError("injected fault in the training data of this rank")
        if len(self.drawn) == self.stall_at:
            Path(self.marker).write_text(json.dumps({"t": time.time()}))
            time.sleep(self.stall_s)
        return self.inner.batch(index)

    marker = "/dev/null"


def windows(dataset_dir: Path, horizon: int) -> tuple[TensorWindows, TensorWindows, object]:
    """Training and validation windows of the test dataset, and its normalisation statistics."""
    from gym_s3.data.dataset import DrivingDataset

    ds = DrivingDataset.load(dataset_dir)
    train = TensorWindows(ds.split("train").windows(10, horizon))
    val = TensorWindows(ds.split("val").windows(10, horizon))
    return train, val, ds.normalization()


def _ppo_gradients(ctx, out: Path) -> None:
    """The DDP gradient of half a minibatch per rank, and one process's on the whole minibatch."""
    from torchrl.objectives.value import GAE

    from policies.config import preset
    from policies.ppo import build_loss, build_modules, make_train_env, minibatch_loss

    cfg = preset("tiny", num_envs=8, rollout_steps=8, entropy_coef=0.0)
    nets = []
    for _ in range(2):  # identical networks: one for the job, one for the reference
        torch.manual_seed(123)
        nets.append(build_modules(cfg))
    (a_net, c_net, actor, critic), (ra_net, rc_net, ractor, rcritic) = nets
    env = make_train_env(cfg)  # same seed on both ranks: the same data
    with torch.no_grad():
        data = env.rollout(8, actor, break_when_any_done=False)
        for norm in (a_net.norm, ra_net.norm):
            norm.update(data["observation"])
        GAE(gamma=cfg.gamma, lmbda=cfg.gae_lambda, value_network=critic, average_gae=False)(data)
    flat = data.reshape(-1)
    half = flat.shape[0] // 2
    loss_fn = build_loss(cfg, a_net, c_net, actor, critic, ctx)
    mine = flat[ctx.rank * half : (ctx.rank + 1) * half]
    losses = minibatch_loss(loss_fn, mine, ctx)
    (losses["loss_objective"] + losses["loss_critic"]).backward()
    ref_fn = build_loss(cfg, ra_net, rc_net, ractor, rcritic, distributed.DistContext())
    ref = minibatch_loss(ref_fn, flat.clone(), distributed.DistContext())
    (ref["loss_objective"] + ref["loss_critic"]).backward()
    dist_g = {f"dist.{k}": v for k, v in _grads([a_net, c_net.body]).items()}
    ref_g = {f"ref.{k}": v for k, v in _grads([ra_net, rc_net.body]).items()}
    save_file({**dist_g, **ref_g}, str(out / f"grads_rank{ctx.rank}.safetensors"))


def _norm_merge(ctx, out: Path) -> None:
    """Each rank merges its own observations (some non-finite) into an already used normaliser."""
    from policies.networks import RunningNorm
    from policies.ppo import update_norm

    g = torch.Generator().manual_seed(7)
    common = torch.randn(50, 38, generator=g) * 3 + 1
    g.manual_seed(100 + ctx.rank)
    mine = torch.randn(4, 64, 38, generator=g) * (1 + ctx.rank) + ctx.rank
    mine[0, :3, 5] = float("nan")
    norm = RunningNorm(38)
    norm.update(common)
    update_norm(norm, mine, ctx)
    save_file({"common": common, "mine": mine.contiguous(), **_state([norm])},
              str(out / f"norm_rank{ctx.rank}.safetensors"))  # fmt: skip


def _ppo_run(ctx, out: Path) -> None:
    """A short two-process PPO run of the ``tiny`` preset."""
    from policies.config import preset
    from policies.ppo import train

    result = train(preset("tiny"), out / "ppo", progress=False)
    save_file(_state([result.actor_net, result.critic_net]),
              str(out / f"ppo_rank{ctx.rank}.safetensors"))  # fmt: skip
    info = {"frames": result.frames, "iterations": result.iterations,
            "effective_batch": result.effective_batch, "world_size": result.world_size,
            "checkpoint": str(result.checkpoint), "history": result.history}  # fmt: skip
    budget = train(preset("tiny", total_frames=16384, time_budget_s=1e-6), out / "ppo_budget",
                   progress=False)  # fmt: skip
    info["budget_iterations"] = budget.iterations
    (out / f"ppo_rank{ctx.rank}.json").write_text(json.dumps(info))
    privileged = train(preset("tiny", privileged_critic=True), out / "ppo_privileged",
                       progress=False)  # fmt: skip
    save_file(_state([privileged.actor_net, privileged.critic_net]),
              str(out / f"ppo_privileged_rank{ctx.rank}.safetensors"))  # fmt: skip


def _distill_run(ctx, out: Path, dataset_dir: Path) -> None:
    """Two epochs of ``ddm`` distillation and one bicycle recipe, data-parallel."""
    from gym_s3.distill import recipes
    from gym_s3.distill.train import TrainConfig, train
    from gym_s3.dynamics import make

    tr, va, stats = windows(dataset_dir, horizon=2)
    rec = RecordingWindows(tr)
    torch.manual_seed(0)
    model = make("ddm")
    cfg = TrainConfig(**DISTILL_SETTINGS, batch_size=32)
    result = train(model, rec, va, stats, cfg, log_csv=out / "distill.csv")
    save_file(_state([model]), str(out / f"distill_rank{ctx.rank}.safetensors"))
    info = {"epochs": result.epochs, "len": len(tr),
            "drawn": [i.tolist() for i in rec.drawn]}  # fmt: skip
    (out / f"distill_rank{ctx.rank}.json").write_text(json.dumps(info))
    from gym_s3.data.dataset import DrivingDataset

    written = recipes.run(DrivingDataset.load(dataset_dir), out / "recipes", ["bicycle"],
                          overrides={"epochs": 1, "batches_per_epoch": 4, "progress": False},
                          log=lambda m: None)  # fmt: skip
    exists = {k: Path(v).is_file() for k, v in written.items()}
    (out / f"recipes_rank{ctx.rank}.json").write_text(json.dumps(exists))


def _collectives(ctx, out: Path) -> None:
    """The small collectives with rank-dependent inputs (keys given in different orders)."""
    mine = {"a": (1.0, 1.0), "b": (10.0, 2.0)} if ctx.rank == 0 else {"b": (20.0, 1.0),
                                                                      "a": (3.0, 0.0)}  # fmt: skip
    result = {
        "means": distributed.weighted_means(mine, ctx),
        "agree": distributed.agree(ctx.rank == 0, ctx),
        "all_true": distributed.all_true(ctx.rank == 0, ctx),
    }
    (out / f"collectives_rank{ctx.rank}.json").write_text(json.dumps(result))


def checks(rank: int, out: Path, dataset_dir: str) -> None:
    """The worker of the main two-process job: gradients, normaliser, PPO run, distillation."""
    with distributed.launch("cpu", timeout_s=TIMEOUT_S) as ctx:
        assert ctx.rank == rank and ctx.world_size == 2 and ctx.backend == "gloo"
        _collectives(ctx, out)
        _ppo_gradients(ctx, out)
        _norm_merge(ctx, out)
        _ppo_run(ctx, out)
        _distill_run(ctx, out, Path(dataset_dir))


def failing(rank: int, out: Path, dataset_dir: str, mode: str, timeout_s: float) -> None:
    """Distillation where rank 1 raises (``mode="raise"``) or stalls (``"stall"``) mid-epoch.

    Every rank writes ``outcome_rank<r>.json``: the exception type and message, and when it ended.
    """
    from gym_s3.distill.train import TrainConfig, train
    from gym_s3.dynamics import make

    tr, va, stats = windows(Path(dataset_dir), horizon=1)
    fault = {"raise": {"fail_at": 3}, "stall": {"stall_at": 3, "stall_s": 2 * timeout_s}}[mode]
    rec = RecordingWindows(tr, **(fault if rank == 1 else {}))
    rec.marker = str(out / "fault.json")
    outcome: dict[str, object] = {"type": None}
    try:
        with distributed.launch("cpu", timeout_s=timeout_s):
            cfg = TrainConfig(epochs=50, batch_size=16, batches_per_epoch=20, progress=False)
            train(make("bicycle"), rec, va, stats, cfg)
    except Exception as exc:
        outcome = {"type": type(exc).__name__, "message": str(exc)}
        raise
    finally:
        outcome["t"] = time.time()
        (out / f"outcome_rank{rank}.json").write_text(json.dumps(outcome))
