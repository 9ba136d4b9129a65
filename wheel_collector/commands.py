"""Driver commands and the :class:`InputSource` protocol every input device implements.

A :class:`DriverCommand` is what one input device asks of the car at one control step (20 Hz):
steering, throttle and brake in normalised units. Sign convention (BeamNG and racing wheels):
``steer = +1`` is full right lock, ``-1`` full left. :meth:`DriverCommand.to_action` maps it to the
project's action layout ``[steer, accel]`` (``gym_s3`` spec: ``accel > 0`` throttle, ``< 0`` brake).

Input sources never block: :meth:`InputSource.poll` drains the device's pending events and returns
an :class:`InputReading` with the latest command and the device status. A source whose device is
missing returns :data:`SAFE_COMMAND` with a status other than ``CONNECTED``; the collection session
pauses recording on that status and resumes when the device is back.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from gym_s3.errors import ActionError
from gym_s3.spec import ACTION_FEATURES

__all__ = [
    "SAFE_BRAKE",
    "SAFE_COMMAND",
    "DriverCommand",
    "InputReading",
    "InputSource",
    "InputStatus",
]

#: Brake [0, 1] of :data:`SAFE_COMMAND`. Half brake stops a car from motorway speed within a few
#: seconds on dry asphalt, while keeping wheel lock (and the loss of steering it brings) unlikely on
#: wet, snow or ice surfaces, even for a vehicle without ABS.
SAFE_BRAKE = 0.5


def _check_finite(name: str, value: float) -> float:
    """Return ``value`` as float, raising :class:`ActionError` if it is NaN or infinite."""
    value = float(value)
    if not math.isfinite(value):
        raise ActionError(
            f"DriverCommand.{name} is {value}; input devices must produce finite values "
            "(for a wheel, a NaN usually means a broken calibration: redo it)"
        )
    return value


@dataclass(frozen=True)
class DriverCommand:
    """One control command from a driver (human wheel, keyboard or scripted expert).

    Attributes:
        steer: steering in [-1, 1] [-]; ``+1`` = full right lock, ``-1`` = full left lock.
        throttle: throttle pedal in [0, 1] [-]; 0 released, 1 fully pressed.
        brake: brake pedal in [0, 1] [-]; 0 released, 1 fully pressed.
        source: who produced it: ``"wheel"``, ``"keyboard"``, ``"expert"`` or ``"safe"``.
        valid: True when the command reflects live input from ``source``; False for a
            substitute (:data:`SAFE_COMMAND`, sent while a device is missing).
    """

    steer: float = 0.0
    throttle: float = 0.0
    brake: float = 0.0
    source: str = "unknown"
    valid: bool = True

    def __post_init__(self) -> None:
        for name, low, high in (("steer", -1.0, 1.0), ("throttle", 0.0, 1.0), ("brake", 0.0, 1.0)):
            value = _check_finite(name, getattr(self, name))
            if not low <= value <= high:
                raise ActionError(
                    f"DriverCommand.{name}={value} is outside [{low}, {high}]; build commands "
                    "from raw device values with DriverCommand.clamped(...)"
                )
            object.__setattr__(self, name, value)
        if not isinstance(self.source, str) or not self.source:
            raise ActionError(
                f"DriverCommand.source must be a non-empty string, got {self.source!r}"
            )

    @classmethod
    def clamped(
        cls,
        steer: float,
        throttle: float,
        brake: float,
        *,
        source: str,
        valid: bool = True,
    ) -> DriverCommand:
        """Build a command from raw values, clamping them into range.

        Out-of-range values (a raw axis at -1.0000305, a calibration that does not quite reach the
        end stop) are clamped; NaN or infinite values raise :class:`ActionError`, since clamping
        would hide a broken device or calibration.

        Args:
            steer: steering [-]; clamped to [-1, 1], ``+1`` = right.
            throttle: throttle [-]; clamped to [0, 1].
            brake: brake [-]; clamped to [0, 1].
            source: producer name (see the class attributes).
            valid: whether this is live input (see the class attributes).
        """
        steer = _check_finite("steer", steer)
        throttle = _check_finite("throttle", throttle)
        brake = _check_finite("brake", brake)
        return cls(
            steer=min(max(steer, -1.0), 1.0),
            throttle=min(max(throttle, 0.0), 1.0),
            brake=min(max(brake, 0.0), 1.0),
            source=source,
            valid=valid,
        )

    @property
    def accel(self) -> float:
        """Longitudinal command ``throttle - brake`` in [-1, 1] [-] (negative brakes)."""
        return self.throttle - self.brake

    def to_action(self) -> np.ndarray:
        """Return the action ``(2,)`` float32 ``[steer, accel]`` with ``accel = throttle - brake``.

        The layout is :data:`gym_s3.spec.ACTION_FEATURES`. Pressing both pedals cancels out in
        ``accel``; the separate pedal values stay available on the command itself for logging.
        """
        values = {"steer": self.steer, "accel": self.accel}
        return np.array([values[feature.name] for feature in ACTION_FEATURES], dtype=np.float32)


#: What every source sends while its device is missing: wheel centred, no throttle, half brake.
SAFE_COMMAND = DriverCommand(steer=0.0, throttle=0.0, brake=SAFE_BRAKE, source="safe", valid=False)


class InputStatus(str, enum.Enum):
    """Connection state of an input source (the session records only while ``CONNECTED``)."""

    #: the device is present and its inputs are live
    CONNECTED = "connected"
    #: the active device was unplugged mid-session; safe controls are sent until it comes back
    DISCONNECTED = "disconnected"
    #: no device has been connected yet (or the source was closed); safe controls are sent
    NO_DEVICE = "no_device"


@dataclass(frozen=True)
class InputReading:
    """What :meth:`InputSource.poll` returns: the latest command plus the device status.

    Attributes:
        command: the command to apply now (:data:`SAFE_COMMAND` unless ``status`` is CONNECTED).
        status: connection state of the device.
        device_name: human-readable device name (``"keyboard"`` for the keyboard).
        guid: SDL joystick GUID (32 hex digits) of the device, ``""`` when there is none.
        actions: named button actions (``"pause"``, ``"reset"``, ``"quit"``) pressed since the
            previous poll, in press order.
        dropouts: how often the active device was removed since the previous poll (non-zero even
            when it came back within the same poll interval, so the session can mark the gap).
    """

    command: DriverCommand
    status: InputStatus
    device_name: str = ""
    guid: str = ""
    actions: tuple[str, ...] = ()
    dropouts: int = 0

    @property
    def live(self) -> bool:
        """True when the device is connected and the command is live input worth recording."""
        return self.status is InputStatus.CONNECTED and self.command.valid


@runtime_checkable
class InputSource(Protocol):
    """A non-blocking driver input device (wheel, keyboard, scripted expert).

    ``poll()`` is called once per control step (20 Hz) by the session; it must return at once.
    """

    def poll(self) -> InputReading:
        """Process pending device events and return the latest reading without blocking."""
        ...

    def close(self) -> None:
        """Release the device; later polls report ``NO_DEVICE`` with :data:`SAFE_COMMAND`."""
        ...
