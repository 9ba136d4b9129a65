"""Batched state of N reference vehicles as named ``(N, ...)`` tensors."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields

import torch
from torch import Tensor

from gym_s3.errors import DataFormatError

#: Fields with one value per wheel (shape ``(N, 4)``, wheels ordered FL, FR, RL, RR).
WHEEL_FIELDS = ("omega", "mu")


@dataclass
class VehicleState:
    """State of N cars; every field has leading dimension N.

    Conventions: world frame x east, y north, z up; yaw CCW from world +x; body frame x forward,
    y left. Wheels are ordered FL, FR, RL, RR.

    Attributes:
        x: ``(N,)`` world x of the centre of gravity [m].
        y: ``(N,)`` world y of the centre of gravity [m].
        yaw: ``(N,)`` heading, CCW from world +x, wrapped to [-pi, pi) [rad].
        z: ``(N,)`` ground height under the car from the track's height function [m].
        vx: ``(N,)`` forward body velocity [m/s].
        vy: ``(N,)`` leftward body velocity [m/s].
        yaw_rate: ``(N,)`` yaw rate, CCW positive [rad/s].
        omega: ``(N, 4)`` wheel spin, positive when rolling forward [rad/s]. States from
            :class:`~gym_s3.vehicle.VehicleModel` store it wheel-major (a transposed view, so use
            ``reshape`` rather than ``view``).
        steer_angle: ``(N,)`` road-wheel steering angle, positive = left [rad].
        throttle: ``(N,)`` throttle actuator state in [0, 1].
        brake: ``(N,)`` brake actuator state in [0, 1].
        ax: ``(N,)`` forward specific force (what an accelerometer reads) of the last physics
            substep [m/s^2]; drives the longitudinal load transfer.
        ay: ``(N,)`` leftward specific force of the last physics substep [m/s^2].
        mu: ``(N, 4)`` peak friction last read under each wheel [-].
        fault: ``(N,)`` bool; True once a non-finite or runaway state was detected. A faulted car
            is frozen at its last good state (finite, never NaN) until it is reset.
    """

    x: Tensor
    y: Tensor
    yaw: Tensor
    z: Tensor
    vx: Tensor
    vy: Tensor
    yaw_rate: Tensor
    omega: Tensor
    steer_angle: Tensor
    throttle: Tensor
    brake: Tensor
    ax: Tensor
    ay: Tensor
    mu: Tensor
    fault: Tensor

    # --- shape, device, dtype ------------------------------------------------------------------
    @property
    def n(self) -> int:
        """Number of cars N."""
        return self.x.shape[0]

    @property
    def device(self) -> torch.device:
        """Device of the tensors."""
        return self.x.device

    @property
    def dtype(self) -> torch.dtype:
        """Floating dtype of the tensors (``fault`` is always bool)."""
        return self.x.dtype

    @property
    def speed(self) -> Tensor:
        """``(N,)`` speed of the centre of gravity over ground [m/s]."""
        return torch.hypot(self.vx, self.vy)

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        """Names of all fields in declaration order."""
        return tuple(f.name for f in fields(cls))

    def validate(self) -> VehicleState:
        """Check shapes, dtypes and devices of every field; return ``self``.

        Raises:
            DataFormatError: naming the offending field and the expected shape/dtype.
        """
        n, dev, dt = self.n, self.device, self.dtype
        if not dt.is_floating_point:
            raise DataFormatError(f"VehicleState.x must be a floating tensor, got dtype {dt}")
        for name in self.field_names():
            value = getattr(self, name)
            if not isinstance(value, Tensor):
                raise DataFormatError(f"VehicleState.{name} must be a torch.Tensor")
            shape = (n, 4) if name in WHEEL_FIELDS else (n,)
            want_dtype = torch.bool if name == "fault" else dt
            if tuple(value.shape) != shape:
                raise DataFormatError(
                    f"VehicleState.{name} has shape {tuple(value.shape)}, expected {shape}"
                )
            if value.dtype != want_dtype or value.device != dev:
                raise DataFormatError(
                    f"VehicleState.{name} is {value.dtype} on {value.device}, "
                    f"expected {want_dtype} on {dev}"
                )
        return self

    # --- row-wise operations -------------------------------------------------------------------
    def _map(self, fn: Callable[[str, Tensor], Tensor]) -> VehicleState:
        """Apply ``fn(name, tensor) -> tensor`` to every field."""
        return VehicleState(**{name: fn(name, getattr(self, name)) for name in self.field_names()})

    def where(self, mask: Tensor, other: VehicleState) -> VehicleState:
        """Row-wise select: rows of ``self`` where ``mask`` is True, rows of ``other`` elsewhere.

        Sync-free (``torch.where``), so it is safe inside a GPU loop.

        Args:
            mask: ``(N,)`` bool.
            other: state with the same N, dtype and device.
        """

        def pick(name: str, value: Tensor) -> Tensor:
            m = mask[:, None] if value.ndim == 2 else mask
            return torch.where(m, value, getattr(other, name))

        return self._map(pick)

    def index(self, idx: Tensor | slice | Sequence[int]) -> VehicleState:
        """Select rows (an index tensor, bool mask, slice or list of ints)."""
        return self._map(lambda _, v: v[idx])

    def clone(self) -> VehicleState:
        """Deep copy of every tensor."""
        return self._map(lambda _, v: v.clone())

    def to(
        self, device: torch.device | str | None = None, dtype: torch.dtype | None = None
    ) -> VehicleState:
        """Move to ``device`` and/or cast floating fields to ``dtype`` (``fault`` stays bool)."""

        def move(name: str, value: Tensor) -> Tensor:
            cast = None if name == "fault" else dtype
            return value.to(device=device, dtype=cast)

        return self._map(move)

    @staticmethod
    def cat(states: Sequence[VehicleState]) -> VehicleState:
        """Concatenate several states along the car dimension."""
        if not states:
            raise DataFormatError("VehicleState.cat needs at least one state")
        names = VehicleState.field_names()
        return VehicleState(**{k: torch.cat([getattr(s, k) for s in states]) for k in names})

    # --- dict round trip (logging, safetensors) ------------------------------------------------
    def to_dict(self, prefix: str = "") -> dict[str, Tensor]:
        """Fields as ``{prefix + name: tensor}``, each contiguous (ready for safetensors)."""
        return {prefix + k: getattr(self, k).contiguous() for k in self.field_names()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Tensor], prefix: str = "") -> VehicleState:
        """Rebuild a state from :meth:`to_dict` output and validate it.

        Raises:
            DataFormatError: a field is missing or has the wrong shape/dtype.
        """
        missing = [k for k in cls.field_names() if prefix + k not in data]
        if missing:
            raise DataFormatError(
                f"cannot build VehicleState: missing fields {missing} (prefix {prefix!r})"
            )
        return cls(**{k: data[prefix + k] for k in cls.field_names()}).validate()
