"""Per-device wheel calibration: raw axis ranges and the raw-axis -> :class:`DriverCommand` mapping.

Conventions (project reference, vehicle dynamics §5.3), with raw axis values ``a`` in [-1, 1]:

* steering ``s = (a - c) / (r - c)`` on the right of the centre ``c`` and ``(a - c) / (c - l)``
  on the left, so ``s = -1`` at the recorded full-left value ``l`` and ``+1`` at full right ``r``
  (asymmetric ranges and inverted axes need no special case); then a centre deadzone ``dz`` is cut
  out and the rest rescaled, ``sign(s) * (|s| - dz) / (1 - dz)``, which keeps the output
  continuous;
* pedals ``p = (a_released - a) / (a_released - a_pressed)`` clipped to [0, 1], then the low
  deadzone ``d`` and top saturation ``t`` map ``p`` to ``(p - d) / (1 - d - t)`` clipped to
  [0, 1];
* an axis that has produced no event yet counts as released (pedals) or centred (steering):
  several back-ends report 0 (a half-pressed pedal) for untouched axes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gym_s3.errors import ConfigError
from wheel_collector.commands import DriverCommand
from wheel_collector.profiles import WheelProfile

__all__ = [
    "CALIBRATION_FORMAT",
    "REDO_HINT",
    "CALIBRATION_VERSION",
    "Calibration",
    "PedalCalibration",
    "SteerCalibration",
]

#: ``format`` field of calibration JSON files
CALIBRATION_FORMAT = "sim2sim2sim.wheel_calibration"
#: current calibration file version
CALIBRATION_VERSION = 1
#: how a user redoes a calibration (quoted in error messages)
REDO_HINT = "s3 collect --calibrate"
#: smallest accepted raw distance between calibration points (a tenth of a percent is noise)
_MIN_SPAN = 0.05
#: raw axis values may exceed 1 slightly: an int16 of -32768 reads as -1.0000305
_RAW_LIMIT = 1.001


def _check_raw(owner: str, label: str, value: float) -> float:
    """Validate one raw axis value and return it as float."""
    value = float(value)
    if not math.isfinite(value) or abs(value) > _RAW_LIMIT:
        raise ConfigError(f"{owner}.{label}={value} is not a raw axis value in [-1, 1]")
    return value


def _check_axis(owner: str, axis: int) -> None:
    """Validate an axis index."""
    if isinstance(axis, bool) or not isinstance(axis, int) or axis < 0:
        raise ConfigError(f"{owner}.axis must be an int >= 0, got {axis!r}")


@dataclass(frozen=True)
class SteerCalibration:
    """Raw values of the steering axis at full left, centre and full right.

    Attributes:
        axis: pygame axis index.
        left: raw value at full left lock [-1, 1].
        centre: raw value at rest, wheel centred [-1, 1].
        right: raw value at full right lock [-1, 1].
    """

    axis: int
    left: float
    centre: float
    right: float

    def __post_init__(self) -> None:
        _check_axis("SteerCalibration", self.axis)
        for label in ("left", "centre", "right"):
            object.__setattr__(
                self, label, _check_raw("SteerCalibration", label, getattr(self, label))
            )
        span_left, span_right = self.centre - self.left, self.right - self.centre
        if span_left * span_right <= 0 or min(abs(span_left), abs(span_right)) < _MIN_SPAN:
            raise ConfigError(
                f"SteerCalibration(left={self.left}, centre={self.centre}, right={self.right}): "
                f"full left and full right must lie on opposite sides of the centre, each at "
                f"least {_MIN_SPAN} away; redo the calibration with `{REDO_HINT}`"
            )

    def normalise(self, raw: float, deadzone: float) -> float:
        """Map a raw axis value to steering in [-1, 1] (+1 = right) with a centre deadzone.

        Args:
            raw: raw axis value [-1, 1] (clamped first).
            deadzone: centre deadzone as a fraction of half the range [-].
        """
        offset = min(max(raw, -1.0), 1.0) - self.centre
        span = (
            self.right - self.centre
            if offset * (self.right - self.centre) >= 0
            else (self.centre - self.left)
        )
        steer = min(max(offset / span, -1.0), 1.0)
        magnitude = abs(steer)
        if magnitude <= deadzone:
            return 0.0
        return math.copysign((magnitude - deadzone) / (1.0 - deadzone), steer)


@dataclass(frozen=True)
class PedalCalibration:
    """Raw values of one pedal axis when released and fully pressed.

    Attributes:
        axis: pygame axis index.
        released: raw value with the foot off the pedal [-1, 1].
        pressed: raw value with the pedal fully pressed [-1, 1].
    """

    axis: int
    released: float
    pressed: float

    def __post_init__(self) -> None:
        _check_axis("PedalCalibration", self.axis)
        for label in ("released", "pressed"):
            object.__setattr__(
                self, label, _check_raw("PedalCalibration", label, getattr(self, label))
            )
        if abs(self.released - self.pressed) < 2 * _MIN_SPAN:
            raise ConfigError(
                f"PedalCalibration(released={self.released}, pressed={self.pressed}): the pedal "
                f"barely moved; redo the calibration with `{REDO_HINT}`"
            )

    def normalise(self, raw: float, deadzone: float, saturation: float) -> float:
        """Map a raw axis value to pedal travel in [0, 1] with low deadzone and top saturation.

        Args:
            raw: raw axis value [-1, 1] (clamped first).
            deadzone: travel fraction treated as released [-].
            saturation: travel fraction at the top treated as fully pressed [-].
        """
        raw = min(max(raw, -1.0), 1.0)
        travel = (self.released - raw) / (self.released - self.pressed)
        travel = min(max(travel, 0.0), 1.0)
        return min(max((travel - deadzone) / (1.0 - deadzone - saturation), 0.0), 1.0)


@dataclass(frozen=True)
class Calibration:
    """Calibration of one wheel (identified by SDL GUID and name).

    Attributes:
        guid: SDL joystick GUID (32 hex digits) of the device.
        name: device name when it was calibrated.
        steer: steering axis calibration.
        throttle: throttle pedal calibration.
        brake: brake pedal calibration.
        clutch: clutch pedal calibration, ``None`` when the wheel has no clutch.
        origin: ``"wizard"`` for a recorded calibration, ``"profile:<name>"`` for profile
            defaults.
    """

    guid: str
    name: str
    steer: SteerCalibration
    throttle: PedalCalibration
    brake: PedalCalibration
    clutch: PedalCalibration | None = None
    origin: str = "wizard"

    def __post_init__(self) -> None:
        if len(set(self.axes)) != len(self.axes):
            raise ConfigError(
                f"calibration of {self.name!r}: steering and pedals must use distinct axes, got "
                f"{list(self.axes)}; redo the calibration with `{REDO_HINT}`"
            )

    @classmethod
    def from_profile(cls, profile: WheelProfile, *, guid: str = "", name: str = "") -> Calibration:
        """The uncalibrated default of ``profile`` (its nominal axes and raw end values)."""
        left, right = (1.0, -1.0) if profile.steer_inverted else (-1.0, 1.0)
        pedal = {"released": profile.pedal_released, "pressed": profile.pedal_pressed}
        return cls(
            guid=guid,
            name=name or profile.description,
            steer=SteerCalibration(profile.steer_axis, left=left, centre=0.0, right=right),
            throttle=PedalCalibration(profile.throttle_axis, **pedal),
            brake=PedalCalibration(profile.brake_axis, **pedal),
            clutch=None
            if profile.clutch_axis is None
            else PedalCalibration(profile.clutch_axis, **pedal),
            origin=f"profile:{profile.name}",
        )

    @property
    def axes(self) -> tuple[int, ...]:
        """Axis indices used (steer, throttle, brake[, clutch])."""
        pedals = (self.throttle, self.brake) + (() if self.clutch is None else (self.clutch,))
        return (self.steer.axis,) + tuple(p.axis for p in pedals)

    def command(
        self, raw_axes: Mapping[int, float], profile: WheelProfile, *, source: str = "wheel"
    ) -> DriverCommand:
        """Turn the latest raw axis values into a command.

        Args:
            raw_axes: axis index -> latest raw value; a missing axis counts as centred
                (steering) or released (pedals).
            profile: supplies the deadzones.
            source: the command's ``source``.
        """
        steer = self.steer.normalise(
            raw_axes.get(self.steer.axis, self.steer.centre), profile.steer_deadzone
        )
        pedals = [
            pedal.normalise(
                raw_axes.get(pedal.axis, pedal.released),
                profile.pedal_deadzone,
                profile.pedal_saturation,
            )
            for pedal in (self.throttle, self.brake)
        ]
        return DriverCommand.clamped(steer, pedals[0], pedals[1], source=source)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (with ``format`` and ``version`` fields)."""

        def pedal(p: PedalCalibration | None) -> dict[str, Any] | None:
            return (
                None
                if p is None
                else {"axis": p.axis, "released": p.released, "pressed": p.pressed}
            )

        return {
            "format": CALIBRATION_FORMAT,
            "version": CALIBRATION_VERSION,
            "guid": self.guid,
            "name": self.name,
            "origin": self.origin,
            "steer": {
                "axis": self.steer.axis,
                "left": self.steer.left,
                "centre": self.steer.centre,
                "right": self.steer.right,
            },
            "throttle": pedal(self.throttle),
            "brake": pedal(self.brake),
            "clutch": pedal(self.clutch),
        }

    @classmethod
    def from_dict(cls, data: Any) -> Calibration:
        """Parse :meth:`to_dict` output; raises :class:`ConfigError` naming what is wrong."""
        if not isinstance(data, dict):
            raise ConfigError(f"expected a JSON object, got {type(data).__name__}")
        if data.get("format") != CALIBRATION_FORMAT:
            raise ConfigError(f"'format' is {data.get('format')!r}, not {CALIBRATION_FORMAT!r}")
        if data.get("version") != CALIBRATION_VERSION:
            raise ConfigError(
                f"'version' is {data.get('version')!r}; this release reads version "
                f"{CALIBRATION_VERSION}"
            )
        try:
            steer = SteerCalibration(**_fields(data, "steer", ("axis", "left", "centre", "right")))
            pedals = {
                key: PedalCalibration(**_fields(data, key, ("axis", "released", "pressed")))
                for key in ("throttle", "brake")
            }
            clutch = None
            if data.get("clutch") is not None:
                clutch = PedalCalibration(
                    **_fields(data, "clutch", ("axis", "released", "pressed"))
                )
            return cls(
                guid=str(data["guid"]),
                name=str(data["name"]),
                steer=steer,
                clutch=clutch,
                origin=str(data.get("origin", "wizard")),
                **pedals,
            )
        except KeyError as exc:
            raise ConfigError(f"missing field {exc}") from exc


def _fields(data: dict[str, Any], key: str, names: tuple[str, ...]) -> dict[str, Any]:
    """Extract ``names`` from the JSON object ``data[key]`` (axis as int, values as float)."""
    section = data.get(key)
    if not isinstance(section, dict):
        raise ConfigError(f"'{key}' must be an object with fields {list(names)}")
    missing = [n for n in names if n not in section]
    if missing:
        raise ConfigError(f"'{key}' lacks fields {missing}")
    out: dict[str, Any] = {}
    for n in names:
        value = section[n]
        if n == "axis":
            if isinstance(value, bool) or not isinstance(value, int):
                raise ConfigError(f"'{key}.axis' must be an integer, got {value!r}")
            out[n] = value
        else:
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ConfigError(f"'{key}.{n}' must be a number, got {value!r}")
            out[n] = float(value)
    return out
