"""``trans``: a transformer over the history window predicting the velocity change.

Each history row is a token (normalised :data:`~gym_s3.dynamics.base.HISTORY_FEATURES`); a causal
sliding-window transformer with ALiBi positions (:mod:`gym_s3.dynamics.attention`) maps the
newest token to the normalised velocity change over the step, which is de-normalised and limited
to physical accelerations (``max_accel``, ``max_yaw_accel``) before it is added to the current
velocity. The keys and values of the last ``window - 1`` rows travel in ``BackendState.extra``
(``kv0``, ``kv1``, ... of shape ``(N, window - 1, 2 * d_model)``), so a step embeds one new row
instead of re-encoding the window; :meth:`TransformerBackend.predict_window` is the equivalent
full recomputation.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from gym_s3.dynamics.attention import SlidingWindowTransformer
from gym_s3.dynamics.base import NUM_HISTORY_FEATURES
from gym_s3.dynamics.learned import LearnedBackend, bounded, check_positive_int, pad_front
from gym_s3.errors import ConfigError
from gym_s3.spec import CONTROL_DT_S


def build_transformer(
    name: str, out: int, window: int, d_model: int, heads: int, layers: int, ff_mult: int
) -> SlidingWindowTransformer:
    """Validate the transformer hyper-parameters of backend ``name`` and build it."""
    check_positive_int(f"{name} window", window, 2)
    check_positive_int(f"{name} d_model", d_model)
    check_positive_int(f"{name} heads", heads)
    check_positive_int(f"{name} layers", layers)
    check_positive_int(f"{name} ff_mult", ff_mult)
    if d_model % heads:
        raise ConfigError(f"{name} d_model ({d_model}) must be divisible by heads ({heads})")
    return SlidingWindowTransformer(
        NUM_HISTORY_FEATURES, out, d_model=d_model, heads=heads, layers=layers, window=window,
        ff_mult=ff_mult,
    )  # fmt: skip


class TransformerBackend(LearnedBackend):
    """Sliding-window transformer predicting ``dv`` with cached keys/values.

    Args:
        dt: control period [s].
        window: rows each attention layer sees, including the newest [steps].
        d_model: width.
        heads: attention heads.
        layers: attention layers (history length = ``layers * (window - 1) + 1``).
        ff_mult: feed-forward expansion.
        max_accel: limit of the predicted longitudinal/lateral acceleration [m/s^2].
        max_yaw_accel: limit of the predicted yaw acceleration [rad/s^2].
    """

    name = "trans"

    def __init__(
        self,
        dt: float = CONTROL_DT_S,
        window: int = 10,
        d_model: int = 32,
        heads: int = 2,
        layers: int = 1,
        ff_mult: int = 2,
        max_accel: float = 20.0,
        max_yaw_accel: float = 40.0,
    ) -> None:
        super().__init__(dt)
        if not (max_accel > 0 and max_yaw_accel > 0):
            raise ConfigError(
                f"trans max_accel and max_yaw_accel must be > 0, got {max_accel}, {max_yaw_accel}"
            )
        self.net = build_transformer("trans", 3, window, d_model, heads, layers, ff_mult)
        self.history_length = self.net.receptive_field
        self._cfg = {
            "window": window, "d_model": d_model, "heads": heads, "layers": layers,
            "ff_mult": ff_mult, "max_accel": float(max_accel),
            "max_yaw_accel": float(max_yaw_accel),
        }  # fmt: skip
        limit = [max_accel * self.dt, max_accel * self.dt, max_yaw_accel * self.dt]
        self.register_buffer("dv_limit", torch.tensor(limit), persistent=False)

    def config(self) -> dict[str, Any]:
        """Constructor arguments (stored in checkpoints)."""
        return {"dt": self.dt, **self._cfg}

    def _vel(self, row: Tensor, out: Tensor) -> Tensor:
        dv = bounded(self.norm.delta_inverse(out), self.dv_limit)
        return row[:, :3] + dv

    def predict(
        self, history: Tensor, extra: dict[str, Tensor]
    ) -> tuple[Tensor, dict[str, Tensor]]:
        """Next velocities ``(N, 3)`` from the newest row and the carried keys/values."""
        dtype = self.dv_limit.dtype
        row = history[:, -1].to(dtype)
        out, caches = self.net.forward_step(self.norm.history(row), extra)
        return self._vel(row, out).to(history.dtype), caches

    def predict_window(self, history: Tensor) -> Tensor:
        """Next velocities ``(N, 3)`` by recomputing the whole window (reference path)."""
        dtype = self.dv_limit.dtype
        window = pad_front(history.to(dtype), self.history_length)
        out, _ = self.net.forward_window(self.norm.history(window))
        return self._vel(window[:, -1], out).to(history.dtype)

    def extra_from_history(self, past: Tensor) -> dict[str, Tensor]:
        """Keys/values of the last rows of ``past`` ``(N, P, 9)`` for every layer."""
        tokens = pad_front(past.to(self.dv_limit.dtype), self.history_length - 1)
        _, caches = self.net.forward_window(self.norm.history(tokens))
        return caches

    def steady_extra(self, row: Tensor) -> dict[str, Tensor]:
        """Keys/values after a history of copies of ``row`` ``(N, 9)`` (one token's pass)."""
        return self.net.steady_caches(self.norm.history(row.to(self.dv_limit.dtype)))
