"""Sources of cars: what advances N cars by one control step behind the tracking task.

Every place that drives cars is the same loop: **task + source of cars + driver (+ recorder)**.
The :class:`~gym_s3.task.TrackingTask` owns the episode (reference, observation, reward,
termination, truncation); a :class:`CarSource` only moves the cars and reports the
:class:`~gym_s3.observations.EgoState` the task needs. Four sources exist:

* :class:`BackendCars`: a distilled dynamics backend (``S3Distilled-v0``), N cars as tensors;
* :class:`EnsembleCars`: several distilled models of one vehicle, each moving its own share of
  the N cars (``S3Distilled-v0`` with several checkpoints);
* :class:`VehicleModelCars`: the batched high-fidelity vehicle model (``s3 data generate``);
* :class:`SimLinkCars`: one car in BeamNG.tech or the open stand-in through the beamngpy client
  (``S3BeamNG-v0``, ``s3 collect``).

A driver (PPO policy, scripted expert, keyboard, racing wheel) maps observations or the task's
:class:`~gym_s3.task_types.TrackSample` to actions; a source never decides anything about the
episode.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Protocol, TypeVar, runtime_checkable

import torch
from torch import Tensor

from gym_s3.errors import ConfigError
from gym_s3.observations import EgoState
from gym_s3.rows import ResetRows
from gym_s3.task_types import StartPose
from gym_s3.tracks.surfaces import SurfaceBatch

if TYPE_CHECKING:  # pragma: no cover
    from gym_s3.beamng.client.link import Measurement, SimLink
    from gym_s3.dynamics import BackendState, DynamicsBackend
    from gym_s3.vehicle import VehicleModel, VehicleState

__all__ = [
    "BackendCars",
    "CarSource",
    "CarStep",
    "EnsembleCars",
    "SimLinkCars",
    "VehicleModelCars",
]

_Rows = TypeVar("_Rows", EgoState, StartPose)


@dataclass(frozen=True)
class CarStep:
    """The cars after one control step.

    Attributes:
        ego: the state the task needs, every field ``(N,)``.
        fault: ``(N,)`` bool, the source flagged the car (non-finite or runaway state).
    """

    ego: EgoState
    fault: Tensor


@runtime_checkable
class CarSource(Protocol):
    """N cars that the task places at episode starts and a driver steers one step at a time."""

    num_cars: int

    def place(self, select: ResetRows, start: StartPose, wheel_mu: Tensor) -> EgoState:
        """Put the selected cars at their start poses (at the start speed).

        Args:
            select: the cars to place; ``start`` and ``wheel_mu`` hold ``select``'s rows.
            start: the start poses.
            wheel_mu: ``(R, 4)`` friction under their wheels at the start [-].

        Returns:
            The state of ``select``'s rows after placing: the R placed cars of an indexed
            selector, all N cars (placed or kept) of a masked one.
        """
        ...

    def advance(self, action: Tensor, surfaces: SurfaceBatch, wheel_mu: Tensor) -> CarStep:
        """Apply ``(N, 2)`` actions ``[steer, accel]`` for one control period (50 ms).

        Args:
            action: the (validated, clipped) actions.
            surfaces: each car's surface layout (sources that sample the ground themselves).
            wheel_mu: ``(N, 4)`` friction under each wheel now (sources that take it as input).
        """
        ...


class BackendCars:
    """N cars moved by a distilled dynamics backend (``S3Distilled-v0``).

    Args:
        backend: the dynamics backend.
        num_cars: N.
        device: device of the state.
        dtype: float dtype of the state.

    Attributes:
        state: the backend state of the N cars.
    """

    def __init__(
        self, backend: DynamicsBackend, num_cars: int, device: torch.device, dtype: torch.dtype
    ) -> None:
        self.backend = backend
        self.num_cars = num_cars
        zero_pose = torch.zeros(num_cars, 3, device=device, dtype=dtype)
        wheel_mu = torch.ones(num_cars, 4, device=device, dtype=dtype)
        self.state: BackendState = backend.initial_state(zero_pose, zero_pose[:, 0], wheel_mu)

    def place(self, select: ResetRows, start: StartPose, wheel_mu: Tensor) -> EgoState:
        """Fresh backend states at the start poses (learned backends prefill their history).

        Reset rows are written into the state's tensors in place (``ResetRows.put_``): the state
        is this source's own (built here, or returned fresh by a backend step; nothing handed
        out aliases it), and a learned backend's history is kilobytes per car, so copying all N
        rows for R reset cars would dominate a partial reset.
        """
        pose = torch.stack([start.x, start.y, start.yaw], dim=-1)
        fresh = self.backend.initial_state(pose, start.speed, wheel_mu)
        self.state = select.put_(self.state, fresh)
        return fresh.ego() if select.rows is not None else self.state.ego()

    def ego(self) -> EgoState:
        """The N cars' :class:`EgoState`."""
        return self.state.ego()

    def advance(self, action: Tensor, surfaces: SurfaceBatch, wheel_mu: Tensor) -> CarStep:
        """One backend step with the friction under the wheels as input."""
        state = self.state = self.backend.step(self.state, action, wheel_mu)
        return CarStep(state.ego(), state.fault)


class EnsembleCars:
    """N cars split between several models of one vehicle: an ensemble of dynamics backends.

    Member ``k`` moves the cars of rows ``bounds[k] .. bounds[k+1] - 1`` (``bounds[k] = k N // K``
    for K members), in every episode: each member steps one contiguous slice of the batch, so there
    is no gather, no per-car loop, and the step stays one static graph under ``torch.compile``.
    Training a policy across several distillations of the same data (other seeds) or of other
    data samples the model error the policy must tolerate, as model-based RL does with ensembles;
    a policy cannot tell which member drives it (the observation does not say).

    The members must share one architecture (the same backend and constructor arguments), so
    their states concatenate into one :class:`~gym_s3.dynamics.BackendState`.

    Args:
        backends: the K members, K >= 2.
        num_cars: N >= K.
        device: device of the state.
        dtype: float dtype of the state.

    Attributes:
        bounds: the K + 1 row boundaries of the members' slices.
        parts: one :class:`BackendCars` per member, of ``bounds[k+1] - bounds[k]`` cars.
    """

    def __init__(
        self,
        backends: Sequence[DynamicsBackend],
        num_cars: int,
        device: torch.device,
        dtype: torch.dtype,
    ) -> None:
        k = len(backends)
        if k < 2:
            raise ConfigError(f"an ensemble needs at least 2 dynamics models, got {k}")
        if num_cars < k:
            raise ConfigError(
                f"{num_cars} cars cannot be split between {k} dynamics models (at least one car "
                f"per model); pass num_envs >= {k} or fewer checkpoints"
            )
        self.num_cars = num_cars
        self.bounds = [i * num_cars // k for i in range(k + 1)]
        self.parts = [BackendCars(b, hi - lo, device, dtype) for b, lo, hi in
                      zip(backends, self.bounds[:-1], self.bounds[1:], strict=True)]  # fmt: skip

    @property
    def state(self) -> BackendState:
        """The backend state of the N cars (a concatenated copy: read it, do not write it)."""
        from gym_s3.dynamics import BackendState

        return BackendState.cat([part.state for part in self.parts])

    def ego(self) -> EgoState:
        """The N cars' :class:`EgoState` (cheaper than ``state.ego()``: no history copied)."""
        return _cat_rows([part.ego() for part in self.parts])

    def place(self, select: ResetRows, start: StartPose, wheel_mu: Tensor) -> EgoState:
        """Place each member's selected cars (see :meth:`CarSource.place`)."""
        slices = zip(self.parts, self.bounds[:-1], self.bounds[1:], strict=True)
        if select.rows is None:
            placed = [
                part.place(ResetRows(select.mask[lo:hi]), _rows(start, lo, hi), wheel_mu[lo:hi])
                for part, lo, hi in slices
            ]
            return _cat_rows(placed)
        edges = torch.tensor(self.bounds, device=select.rows.device)
        cuts = torch.searchsorted(select.rows, edges).tolist()  # indexed rows are ascending
        placed = []
        for (part, lo, hi), a, b in zip(slices, cuts[:-1], cuts[1:], strict=True):
            if b > a:
                mine = ResetRows(select.mask[lo:hi], select.rows[a:b] - lo)
                placed.append(part.place(mine, _rows(start, a, b), wheel_mu[a:b]))
        return _cat_rows(placed) if placed else _rows(start.ego(), 0, 0)

    def advance(self, action: Tensor, surfaces: SurfaceBatch, wheel_mu: Tensor) -> CarStep:
        """One step of every member on its own cars."""
        steps = [
            part.advance(action[lo:hi], surfaces, wheel_mu[lo:hi])
            for part, lo, hi in zip(self.parts, self.bounds[:-1], self.bounds[1:], strict=True)
        ]
        return CarStep(_cat_rows([s.ego for s in steps]), torch.cat([s.fault for s in steps]))


def _rows(batch: _Rows, start: int, stop: int) -> _Rows:
    """Rows ``start .. stop - 1`` of a dataclass whose fields are all ``(N, ...)`` tensors."""
    return type(batch)(**{f.name: getattr(batch, f.name)[start:stop] for f in fields(batch)})


def _cat_rows(batches: list[_Rows]) -> _Rows:
    """The rows of dataclasses of ``(N, ...)`` tensors one after another."""
    first = batches[0]
    return type(first)(
        **{f.name: torch.cat([getattr(b, f.name) for b in batches]) for f in fields(first)}
    )


class VehicleModelCars:
    """N cars of the batched high-fidelity vehicle model (the stand-in's physics).

    The model reads the friction under each wheel from the surface layouts at every physics
    substep. Placing cars supports all N at once (data generation starts every car together).

    Args:
        model: the vehicle model.
        num_cars: N.

    Attributes:
        state: the model state (``None`` until :meth:`place`).
    """

    def __init__(self, model: VehicleModel, num_cars: int) -> None:
        self.model = model
        self.num_cars = num_cars
        self.state: VehicleState | None = None

    def place(self, select: ResetRows, start: StartPose, wheel_mu: Tensor) -> EgoState:
        """Start states at the poses (wheels spinning at the start speed, controls released)."""
        if int(select.mask.sum()) != self.num_cars:
            raise ConfigError("VehicleModelCars places all its cars at once; reset every car")
        self.state = self.model.initial_state(start.x, start.y, start.yaw, start.speed, start.z)
        return vehicle_ego(self.state)

    def advance(self, action: Tensor, surfaces: SurfaceBatch, wheel_mu: Tensor) -> CarStep:
        """One control step (``model.substeps`` physics steps) of the pedal/steer commands."""
        from gym_s3.vehicle import controls_from_action

        assert self.state is not None, "place() the cars first"
        self.state = self.model.step(self.state, controls_from_action(action), surfaces)
        return CarStep(vehicle_ego(self.state), self.state.fault)


def vehicle_ego(state: VehicleState) -> EgoState:
    """The task's view of a vehicle-model state."""
    return EgoState(state.x, state.y, state.yaw, state.vx, state.vy, state.yaw_rate)


class SimLinkCars:
    """One car in BeamNG.tech or the open stand-in, through the real beamngpy client (N = 1).

    Args:
        link: an open :class:`~gym_s3.beamng.client.link.SimLink`.

    Attributes:
        measurement: the latest sensor reading (``None`` before the first placement or step).
    """

    num_cars = 1

    def __init__(self, link: SimLink) -> None:
        self.link = link
        self.measurement: Measurement | None = None

    def place(self, select: ResetRows, start: StartPose, wheel_mu: Tensor) -> EgoState:
        """Teleport the car to its start pose (re-applies the surfaces) and measure."""
        x, y, yaw, speed = (float(v[0]) for v in (start.x, start.y, start.yaw, start.speed))
        self.measurement = self.link.teleport(x, y, yaw, speed=speed)
        return self.measurement.ego()

    def advance(self, action: Tensor, surfaces: SurfaceBatch, wheel_mu: Tensor) -> CarStep:
        """Send ``[steer, accel]`` as steering, throttle and brake; step 50 ms; measure."""
        steer, accel = float(action[0, 0]), float(action[0, 1])
        self.link.control(steer, max(accel, 0.0), max(-accel, 0.0))
        m = self.measurement = self.link.step()
        return CarStep(m.ego(), torch.tensor([m.fault]))
