"""Sources of cars: what advances N cars by one control step behind the tracking task.

Every place that drives cars is the same loop: **task + source of cars + driver (+ recorder)**.
The :class:`~gym_s3.task.TrackingTask` owns the episode (reference, observation, reward,
termination, truncation); a :class:`CarSource` only moves the cars and reports the
:class:`~gym_s3.observations.EgoState` the task needs. Three sources exist:

* :class:`BackendCars`: a distilled dynamics backend (``S3Distilled-v0``), N cars as tensors;
* :class:`VehicleModelCars`: the batched high-fidelity vehicle model (``s3 data generate``);
* :class:`SimLinkCars`: one car in BeamNG.tech or the open stand-in through the beamngpy client
  (``S3BeamNG-v0``, ``s3 collect``).

A driver (PPO policy, scripted expert, keyboard, racing wheel) maps observations or the task's
:class:`~gym_s3.task_types.TrackSample` to actions; a source never decides anything about the
episode.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

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

__all__ = ["BackendCars", "CarSource", "CarStep", "SimLinkCars", "VehicleModelCars"]


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

    def advance(self, action: Tensor, surfaces: SurfaceBatch, wheel_mu: Tensor) -> CarStep:
        """One backend step with the friction under the wheels as input."""
        state = self.state = self.backend.step(self.state, action, wheel_mu)
        return CarStep(state.ego(), state.fault)


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
