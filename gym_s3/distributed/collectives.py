"""Collective helpers of the training loops (each a no-op on the local value in one process).

Gradients are averaged by DistributedDataParallel (:func:`wrap`); besides, the loops need an
agreed stop flag (:func:`agree`), an agreed skip decision (:func:`all_true`), job-wide means for
logs (:func:`weighted_means`), job-wide moments for the observation normaliser and the advantage
(:func:`global_moments`, :func:`global_mean_std`), a data shard per rank (:func:`shard`) and a
barrier after rank 0 wrote files (:func:`barrier`).
"""

from __future__ import annotations

from collections.abc import Mapping

import torch
from torch import Tensor, nn

from gym_s3.distributed.launch import DistContext


def wrap(module: nn.Module, ctx: DistContext) -> nn.Module:
    """``module`` wrapped in DistributedDataParallel (bucketed gradient all-reduce), if enabled.

    Parameters are broadcast from rank 0 at construction, so every rank starts from rank 0's
    weights. Buffers are not re-broadcast on each forward: the loops keep them identical
    themselves (e.g. the observation normaliser merges all-reduced moments).
    """
    if not ctx.enabled:
        return module
    from torch.nn.parallel import DistributedDataParallel

    ids = [ctx.local_rank] if ctx.backend == "nccl" else None
    return DistributedDataParallel(module, device_ids=ids, forward_sync_buffers=False)


def agree(flag: bool, ctx: DistContext) -> bool:
    """Rank 0's ``flag`` on every rank (e.g. the time-budget stop decision)."""
    if not ctx.enabled:
        return bool(flag)
    import torch.distributed as dist

    t = torch.tensor([1 if flag else 0], dtype=torch.int32, device=ctx.comm_device)
    dist.broadcast(t, src=0)
    return bool(t.item())


def all_true(flag: bool, ctx: DistContext) -> bool:
    """Whether ``flag`` holds on every rank."""
    if not ctx.enabled:
        return bool(flag)
    import torch.distributed as dist

    t = torch.tensor([1 if flag else 0], dtype=torch.int32, device=ctx.comm_device)
    dist.all_reduce(t, op=dist.ReduceOp.MIN)
    return bool(t.item())


def _sum(t: Tensor, ctx: DistContext) -> Tensor:
    """Sum of ``t`` over ranks (returned on ``t``'s device)."""
    if not ctx.enabled:
        return t
    import torch.distributed as dist

    buf = t.to(ctx.comm_device).clone()
    dist.all_reduce(buf)
    return buf.to(t.device)


def weighted_means(values: Mapping[str, tuple[float, float]], ctx: DistContext
                   ) -> dict[str, float]:  # fmt: skip
    """Job-wide weighted means: ``sum(value * weight) / sum(weight)`` over ranks, per key.

    Args:
        values: key -> ``(value, weight)`` of this rank; every rank passes the same keys (give
            weight 0 where a rank has no value).
        ctx: this process's place in the job.

    Returns:
        key -> mean, for the keys with a positive total weight.
    """
    keys = sorted(values)  # the same order on every rank
    w = torch.tensor([values[k][1] for k in keys], dtype=torch.float64)
    v = torch.tensor([values[k][0] if values[k][1] > 0 else 0.0 for k in keys],
                     dtype=torch.float64)  # fmt: skip
    total = _sum(torch.cat([v * w, w]), ctx)
    return {k: float(total[i] / total[len(keys) + i]) for i, k in enumerate(keys)
            if total[len(keys) + i] > 0}  # fmt: skip


def global_moments(x: Tensor, ctx: DistContext) -> tuple[int, Tensor, Tensor]:
    """Count, mean and population variance of the finite rows of ``x`` over all ranks.

    Two passes in float64 (sum, then the squared deviations from the job-wide mean), so the
    result equals the moments of every rank's rows concatenated, to float64 rounding.

    Args:
        x: ``(..., F)`` samples of this rank; rows with a non-finite entry are ignored.
        ctx: this process's place in the job.

    Returns:
        ``(n, mean (F,), var (F,))`` in float64 on ``x``'s device (``n == 0``: zeros).
    """
    flat = x.reshape(-1, x.shape[-1]).to(torch.float64)
    flat = flat[torch.isfinite(flat).all(dim=-1)]
    n_sum = _sum(torch.cat([flat.new_tensor([flat.shape[0]]), flat.sum(dim=0)]), ctx)
    n = int(n_sum[0].item())
    if n == 0:
        zeros = flat.new_zeros(x.shape[-1])
        return 0, zeros, zeros
    mean = n_sum[1:] / n
    m2 = _sum((flat - mean).square().sum(dim=0), ctx)
    return n, mean, m2 / n


def global_mean_std(x: Tensor, ctx: DistContext) -> tuple[Tensor, Tensor]:
    """Mean and unbiased standard deviation of every element of ``x`` over all ranks.

    Equal, to rounding, to ``cat(all ranks' x).mean()`` and ``.std()`` (Bessel-corrected, as
    ``torch.std``); scalars in ``x``'s dtype and device.
    """
    flat = x.detach().reshape(-1, 1)
    n, mean, var = global_moments(flat, ctx)
    std = torch.sqrt(var * n / max(n - 1, 1))
    return mean[0].to(x.dtype), std[0].to(x.dtype)


def shard(index: Tensor, ctx: DistContext) -> Tensor:
    """This rank's part ``index[rank::world_size]`` of an order every rank drew alike.

    The shards of the ranks are disjoint and together cover ``index`` (the strided split of
    :class:`torch.utils.data.DistributedSampler`, without its padding).
    """
    return index[ctx.rank :: ctx.world_size] if ctx.enabled else index


def barrier(ctx: DistContext) -> None:
    """Wait until every rank gets here (e.g. after rank 0 wrote a checkpoint)."""
    if ctx.enabled:
        import torch.distributed as dist

        if ctx.backend == "nccl":
            dist.barrier(device_ids=[ctx.local_rank])
        else:
            dist.barrier()
