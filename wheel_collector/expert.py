"""The scripted expert as an input device of the collection session (one car).

The controller itself is library code: :class:`gym_s3.drivers.expert.BatchedExpert` (re-exported
here with its settings). :class:`ExpertInput` wraps it as an
:class:`~wheel_collector.commands.InputSource` with N = 1.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from gym_s3.drivers.expert import (
    EVENTS,
    BatchedExpert,
    EventConfig,
    ExpertConfig,
    PerturbationConfig,
    Road,
)
from gym_s3.errors import ConfigError
from gym_s3.observations import EgoState
from gym_s3.task_types import TrackSample
from wheel_collector.commands import (
    SAFE_COMMAND,
    DriverCommand,
    InputReading,
    InputStatus,
)

__all__ = [
    "EVENTS",
    "BatchedExpert",
    "EventConfig",
    "ExpertConfig",
    "ExpertInput",
    "PerturbationConfig",
    "StateObserver",
]


@runtime_checkable
class StateObserver(Protocol):
    """An input source that needs the car's state before each poll (the scripted expert)."""

    def observe(self, ego: EgoState, sample: TrackSample, road: Road) -> None:
        """Give the source its car's measured state, the road under it and its reference."""
        ...

    def reset(self) -> None:
        """A new episode starts (e.g. after a teleport)."""
        ...


class ExpertInput:
    """The scripted expert as an :class:`~wheel_collector.commands.InputSource` (one car).

    The session calls :meth:`observe` with the measured state before every :meth:`poll`; until
    the first observation (and after :meth:`close`) the source reports ``NO_DEVICE`` and sends
    :data:`SAFE_COMMAND`.

    Args:
        config: expert settings.
        seed: seed of its noise and perturbations.
    """

    device_name = "scripted-expert"

    def __init__(self, config: ExpertConfig | None = None, *, seed: int = 0) -> None:
        self.expert = BatchedExpert(1, config or ExpertConfig(), seed=seed)
        self._observed: tuple[EgoState, TrackSample, Road] | None = None
        self._closed = False

    def observe(self, ego: EgoState, sample: TrackSample, road: Road) -> None:
        """Store the state the next :meth:`poll` acts on.

        Raises:
            ConfigError: ``sample`` describes more than one car.
        """
        if sample.s.shape[0] != 1:
            raise ConfigError(f"ExpertInput drives one car; the sample has {sample.s.shape[0]}")
        self._observed = (ego, sample, road)

    def reset(self) -> None:
        """New episode: clear integrators, noise and events."""
        self.expert.reset()

    def poll(self) -> InputReading:
        """The expert's command for the last observed state (never blocks)."""
        if self._closed or self._observed is None:
            return InputReading(SAFE_COMMAND, InputStatus.NO_DEVICE, self.device_name)
        ego, sample, road = self._observed
        steer, accel = (float(v) for v in self.expert.act(ego, sample, road)[0])
        command = DriverCommand.clamped(steer, max(accel, 0.0), max(-accel, 0.0), source="expert")
        return InputReading(command, InputStatus.CONNECTED, self.device_name)

    def close(self) -> None:
        """Stop driving; later polls send :data:`SAFE_COMMAND`."""
        self._closed = True
