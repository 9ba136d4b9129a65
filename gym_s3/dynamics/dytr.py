"""``dytr``: the Deep Dynamics Model plus a transformer-predicted residual (``dytr_ddm``).

Following the dynamics-residual-correction idea of DyTR (Miao et al., arXiv 2502.11800), a base
physics model predicts the next velocities and a transformer over the history predicts what it
gets wrong: ``v_next = v_ddm + std_dv * B tanh(r / B)``, with ``r`` the transformer output in units
of the velocity-change standard deviation and ``B = residual_bound``. The base is the DDM (the
paper's checkpoint folder is ``*_dytr_ddm``). The residual head starts at exactly zero, so an
untrained residual on a trained DDM reproduces the DDM; the shipped checkpoint trains the residual
with the DDM frozen (see :mod:`gym_s3.distill.recipes`).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from gym_s3.dynamics.ddm import DDMBackend
from gym_s3.dynamics.learned import LearnedBackend, bounded, pad_front
from gym_s3.dynamics.trans import build_transformer
from gym_s3.errors import ConfigError
from gym_s3.spec import CONTROL_DT_S

#: Default transformer settings of the residual.
RESIDUAL_DEFAULTS: dict[str, int] = {
    "window": 10, "d_model": 32, "heads": 2, "layers": 1, "ff_mult": 2
}  # fmt: skip


class DyTRBackend(LearnedBackend):
    """DDM base + sliding-window transformer residual on the next velocities.

    Args:
        dt: control period [s].
        ddm: keyword arguments of the base :class:`DDMBackend` (without ``dt``).
        residual: transformer settings (keys of :data:`RESIDUAL_DEFAULTS`).
        residual_bound: limit of the residual in velocity-change standard deviations.
    """

    name = "dytr"

    def __init__(
        self,
        dt: float = CONTROL_DT_S,
        ddm: dict[str, Any] | None = None,
        residual: dict[str, int] | None = None,
        residual_bound: float = 5.0,
    ) -> None:
        super().__init__(dt)
        res_cfg = {**RESIDUAL_DEFAULTS, **(residual or {})}
        unknown = set(res_cfg) - set(RESIDUAL_DEFAULTS)
        if unknown:
            raise ConfigError(
                f"unknown dytr residual settings {sorted(unknown)}; valid: "
                f"{sorted(RESIDUAL_DEFAULTS)}"
            )
        if not residual_bound > 0:
            raise ConfigError(f"dytr residual_bound must be > 0, got {residual_bound!r}")
        self.base = DDMBackend(dt=dt, **(ddm or {}))
        self.base.norm = self.norm  # one set of statistics for both parts
        self.residual = build_transformer("dytr residual", 3, **res_cfg)
        self.residual.zero_head_()
        self.res_cfg = res_cfg
        self.residual_bound = float(residual_bound)
        self.history_length = max(self.base.history_length, self.residual.receptive_field)
        self.register_buffer("bound", torch.tensor(self.residual_bound), persistent=False)

    def config(self) -> dict[str, Any]:
        """Constructor arguments (stored in checkpoints)."""
        base = {k: v for k, v in self.base.config().items() if k != "dt"}
        return {
            "dt": self.dt,
            "ddm": base,
            "residual": dict(self.res_cfg),
            "residual_bound": self.residual_bound,
        }

    def _vel(self, base_vel: Tensor, out: Tensor) -> Tensor:
        return base_vel + bounded(out, self.bound) * self.norm.d_std.to(out.dtype)

    def predict(
        self, history: Tensor, extra: dict[str, Tensor]
    ) -> tuple[Tensor, dict[str, Tensor]]:
        """DDM velocities ``(N, 3)`` plus the residual from the carried keys/values."""
        dtype = self.bound.dtype
        hist = history.to(dtype)
        base_vel, _ = self.base.predict(hist, {})
        out, caches = self.residual.forward_step(self.norm.history(hist[:, -1]), extra)
        return self._vel(base_vel, out).to(history.dtype), caches

    def predict_window(self, history: Tensor) -> Tensor:
        """Next velocities by recomputing the residual over the whole window (reference)."""
        hist = pad_front(history.to(self.bound.dtype), self.history_length)
        base_vel, _ = self.base.predict(hist, {})
        out, _ = self.residual.forward_window(
            self.norm.history(hist[:, -self.residual.receptive_field :])
        )
        return self._vel(base_vel, out).to(history.dtype)

    def extra_from_history(self, past: Tensor) -> dict[str, Tensor]:
        """Residual keys/values of the last rows of ``past`` ``(N, P, 9)``."""
        tokens = pad_front(past.to(self.bound.dtype), self.residual.receptive_field - 1)
        _, caches = self.residual.forward_window(self.norm.history(tokens))
        return caches

    def steady_extra(self, row: Tensor) -> dict[str, Tensor]:
        """Residual keys/values after a history of copies of ``row`` (one token's pass)."""
        return self.residual.steady_caches(self.norm.history(row.to(self.bound.dtype)))
