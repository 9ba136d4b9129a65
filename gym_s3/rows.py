"""Which cars a partial reset writes, and how: one selector for the task, the state and the env.

A *row* is one car's entry in the ``(N, ...)`` batch tensors (row ``i`` of every per-car tensor
belongs to car ``i``).

A reset of some cars among N computes their new values and writes them into the batch. Two ways
give identical results:

* a bool mask with new values for **all** N cars, selected with ``torch.where`` (no host
  synchronisation: accelerators);
* row indices with new values for the **R** reset cars only, written with ``index_copy`` (the
  work is proportional to R; reading the indices costs nothing on the CPU).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor


@dataclass(frozen=True)
class ResetRows:
    """The cars of a partial reset.

    Attributes:
        mask: ``(N,)`` bool, the cars to reset.
        rows: ``(R,)`` int64 indices of ``mask`` when new values are given for those cars only;
            ``None`` when they are given for all N cars.
    """

    mask: Tensor
    rows: Tensor | None = None

    @staticmethod
    def indexed(mask: Tensor) -> ResetRows:
        """The selector that works on the reset cars only (reads the mask on the host)."""
        return ResetRows(mask, mask.nonzero()[:, 0])

    @property
    def empty(self) -> bool:
        """Whether an indexed selector has no car (a masked one is never treated as empty)."""
        return self.rows is not None and self.rows.numel() == 0

    def pick(self, full: Any) -> Any:
        """The selected cars' rows of ``full`` (all of it for a masked selector).

        ``full`` is an ``(N, ...)`` tensor or a batch object with ``rows(rows)``
        (:class:`~gym_s3.dynamics.BackendState`).
        """
        if self.rows is None:
            return full
        return full[self.rows] if isinstance(full, Tensor) else full.rows(self.rows)

    def put(self, old: Any, new: Any) -> Any:
        """``old`` with the selected cars' rows replaced by ``new``.

        ``old`` is an ``(N, ...)`` tensor or a batch object with ``where(mask, other)`` and
        ``index_copy(rows, other)`` (:class:`~gym_s3.dynamics.BackendState`,
        :class:`~gym_s3.tracks.surfaces.SurfaceBatch`); ``new`` holds N rows for a masked
        selector, R rows for an indexed one.
        """
        if not isinstance(old, Tensor):
            if self.rows is None:
                return old.where(self.mask, new)
            return old.index_copy(self.rows, new)
        if self.rows is None:
            return torch.where(self.mask.reshape(-1, *([1] * (old.ndim - 1))), new, old)
        return old.index_copy(0, self.rows, new.to(old.dtype))

    def put_(self, old: Any, new: Any) -> Any:
        """Like :meth:`put`, but an indexed selector writes into ``old`` in place (and returns it).

        Only for state nobody else holds: the write is visible through every reference to
        ``old``'s tensors. It saves copying all N rows when R cars reset (a learned backend's
        state is kilobytes per car). A masked selector still builds a new value.
        """
        if self.rows is None:
            return self.put(old, new)
        if not isinstance(old, Tensor):
            return old.index_copy_(self.rows, new)
        return old.index_copy_(0, self.rows, new.to(old.dtype))
