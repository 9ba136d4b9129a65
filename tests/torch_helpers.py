"""Helpers shared by the test folders: thread settings and small env configurations."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch

#: Putnam Park with two surface layouts (the pool is cached in-process).
SMALL: dict = {"tracks": ("putnam",), "layouts_per_track": 2}


@contextmanager
def one_torch_thread() -> Iterator[None]:
    """Run the block on one intra-op thread, then restore the previous setting.

    With small tensors there is nothing to parallelise, and on a shared, busy 2-core machine
    OpenMP's second thread makes every small op wait for a descheduled peer.
    """
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)
