"""Joining a torchrun job, in one process: environment, timeouts, context, failure messages."""

from __future__ import annotations

import pytest
import torch

from gym_s3 import distributed
from gym_s3.distributed import DistContext, PeerFailedError
from gym_s3.errors import ConfigError

_LAUNCH_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT",
                distributed.TIMEOUT_ENV)  # fmt: skip


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No launch variables unless a test sets them."""
    for name in _LAUNCH_VARS:
        monkeypatch.delenv(name, raising=False)


def test_launch_info_reads_torchrun_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """Outside torchrun there is no launch; inside, rank/local rank/world come from the env."""
    assert distributed.launch_info() is None
    monkeypatch.setenv("RANK", "3")
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.setenv("LOCAL_RANK", "1")
    assert distributed.launch_info() == (3, 1, 4)


@pytest.mark.parametrize(("rank", "world"), [("x", "2"), ("2", "2"), ("-1", "2"), ("0", "0")])
def test_inconsistent_launch_variables_are_refused(monkeypatch, rank: str, world: str) -> None:
    """Garbage or out-of-range RANK/WORLD_SIZE raise a ConfigError that names them."""
    monkeypatch.setenv("RANK", rank)
    monkeypatch.setenv("WORLD_SIZE", world)
    with pytest.raises(ConfigError, match="RANK"):
        distributed.launch_info()


def test_timeout_comes_from_the_argument_then_the_environment(monkeypatch) -> None:
    """``--dist-timeout`` beats ``$S3_DIST_TIMEOUT_S``, which beats the 300 s default."""
    assert distributed.resolve_timeout() == distributed.DEFAULT_TIMEOUT_S == 300.0
    monkeypatch.setenv(distributed.TIMEOUT_ENV, "42.5")
    assert distributed.resolve_timeout() == 42.5
    assert distributed.resolve_timeout(7) == 7.0


_BAD_TIMEOUTS = [(0.0, None, "--dist-timeout"), (None, "-3", "S3_DIST_TIMEOUT_S"),
                 (None, "soon", "S3_DIST_TIMEOUT_S")]  # fmt: skip


@pytest.mark.parametrize(("arg", "env", "names"), _BAD_TIMEOUTS)
def test_bad_timeouts_are_refused(monkeypatch, arg, env, names: str) -> None:
    """Non-positive or unparseable timeouts raise a ConfigError naming their source."""
    if env is not None:
        monkeypatch.setenv(distributed.TIMEOUT_ENV, env)
    with pytest.raises(ConfigError, match=names):
        distributed.resolve_timeout(arg)


def test_context_maps_devices_seeds_and_shares_per_rank() -> None:
    """Rank 1 of 2 runs on ``cuda:<local rank>``, seeds base + 1 and collects half the frames."""
    ctx = DistContext(rank=1, local_rank=1, world_size=2, backend="gloo")
    assert ctx.enabled and not ctx.is_main
    assert ctx.device("cuda") == torch.device("cuda", 1)
    assert ctx.device("cpu") == torch.device("cpu")
    assert ctx.seed(10) == 11 and ctx.share(4097) == 2049 and ctx.label() == "rank 1/2"
    single = DistContext()
    assert not single.enabled and single.is_main
    assert single.device("cuda") == torch.device("cuda") and single.seed(10) == 10
    assert single.share(4097) == 4097


def test_launch_outside_torchrun_is_a_plain_single_process() -> None:
    """Without launch variables no group is created and exceptions pass through unchanged."""
    import torch.distributed as dist

    with distributed.launch("cpu") as ctx:
        assert ctx == DistContext() and not dist.is_initialized()
    with pytest.raises(ValueError, match="boom"), distributed.launch("cpu"):
        raise ValueError("boom")


def test_world_size_one_does_not_need_a_rendezvous(monkeypatch) -> None:
    """``WORLD_SIZE=1`` (e.g. ``torchrun --nproc-per-node 1``) runs as a single process."""
    import torch.distributed as dist

    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "1")
    with distributed.launch("cpu") as ctx:
        assert not ctx.enabled and not dist.is_initialized()


def test_launch_without_rendezvous_address_says_how_to_start(monkeypatch) -> None:
    """WORLD_SIZE > 1 without MASTER_ADDR/PORT is a ConfigError that points at torchrun."""
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.raises(ConfigError, match="torchrun"), distributed.launch("cpu"):
        pass


def test_gpu_ranks_beyond_the_gpus_of_the_machine_are_refused(monkeypatch) -> None:
    """More GPU ranks on a machine than GPUs: a ConfigError naming ``--nproc-per-node``."""
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("LOCAL_RANK", str(torch.cuda.device_count() if torch.cuda.is_available()
                                         else 0))  # fmt: skip
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", "1")
    with pytest.raises(ConfigError, match="nproc-per-node"), distributed.launch("cuda"):
        pass


def test_collective_failures_are_told_apart_from_local_errors() -> None:
    """Gloo's peer-gone and timeout errors count as collective failures; a ValueError does not."""
    reset = RuntimeError("[gloo/transport/tcp/pair.cc:537] Read error [127.0.0.1]:1: Connection "
                         "reset by peer")  # fmt: skip
    late = RuntimeError("[gloo/unbound_buffer.cc:78] Timed out waiting 5000ms for recv operation")
    assert distributed.is_collective_failure(reset) and distributed.is_collective_failure(late)
    assert not distributed.is_collective_failure(ValueError("bad window"))
    assert not distributed.is_collective_failure(RuntimeError("shape mismatch in matmul"))


def test_peer_failure_message_names_rank_timeout_and_remedy() -> None:
    """The message says which rank stopped, the timeout, the cause and how to raise it."""
    ctx = DistContext(rank=2, local_rank=0, world_size=4, backend="gloo", timeout_s=30.0)
    msg = distributed.peer_failure_message(ctx, RuntimeError("Timed out waiting 30000ms\nmore"))
    assert msg.startswith("rank 2/4 stopped: a peer rank failed")
    assert "30 s collective timeout" in msg and "RuntimeError: Timed out waiting 30000ms" in msg
    assert "--dist-timeout" in msg and distributed.TIMEOUT_ENV in msg and "more" not in msg
    assert issubclass(PeerFailedError, RuntimeError)
