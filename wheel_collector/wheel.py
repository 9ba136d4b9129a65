"""Racing-wheel input through pygame's joystick API, with hot-plug handling.

:class:`WheelInput` drains pygame's joystick events on every :meth:`~WheelInput.poll` (never
blocking) and keeps the latest raw value of each axis of the *active* wheel. Devices are keyed by
SDL instance id within a session (device indices shift on hot-plug) and by GUID plus name across
sessions (calibration files, reconnect matching).

Hot-plug: when the active wheel is unplugged, the very next poll returns :data:`SAFE_COMMAND`
with status ``DISCONNECTED`` (the session pauses recording on it). When a wheel with the same GUID
(or any wheel, with ``reconnect="any"``) is plugged in, it becomes active and live commands
resume; its axes count as centred/released until they report.

Only joystick events are taken from pygame's queue (keyboard and window events stay for the
keyboard source and the HUD). Use one :class:`WheelInput` per process: the queue is global.
"""

from __future__ import annotations

import logging
from typing import Any

from gym_s3.errors import ConfigError
from wheel_collector._pygame import import_pygame, init_joysticks, joystick_event_types
from wheel_collector.calibration import REDO_HINT, Calibration
from wheel_collector.commands import (
    SAFE_COMMAND,
    DriverCommand,
    InputReading,
    InputStatus,
)
from wheel_collector.profiles import GENERIC, WheelProfile, is_sdl_guid, select_profile
from wheel_collector.store import CalibrationStore

__all__ = ["RECONNECT_POLICIES", "WheelInput", "describe_joysticks"]

_LOG = logging.getLogger(__name__)

#: ``"same"``: only the wheel with the GUID that was unplugged resumes; ``"any"``: any wheel
RECONNECT_POLICIES = ("same", "any")


def _clamp(value: float) -> float:
    """Clamp a raw axis value to [-1, 1] (SDL reports int16 -32768 as -1.0000305)."""
    return min(max(float(value), -1.0), 1.0)


def describe_joysticks(pg: Any) -> list[str]:
    """One line per joystick SDL sees now: ``'name' (GUID ..., N axes, M buttons)``.

    Args:
        pg: the initialised pygame module (joystick subsystem running).
    """
    lines = []
    for index in range(pg.joystick.get_count()):
        try:
            js = pg.joystick.Joystick(index)
            js.init()
        except pg.error as exc:  # vanished meanwhile or not openable
            lines.append(f"device {index}: cannot be opened ({exc})")
            continue
        lines.append(f"{js.get_name()!r} (GUID {js.get_guid()}, {js.get_numaxes()} axes, "
                     f"{js.get_numbuttons()} buttons)")  # fmt: skip
    return lines


class WheelInput:
    """An :class:`~wheel_collector.commands.InputSource` reading a racing wheel with pygame.

    Args:
        profile: force this profile; by default it is chosen per device by
            :func:`~wheel_collector.profiles.select_profile`.
        calibration: force this calibration; by default the stored one for the device GUID, or
            the profile's defaults when none is stored.
        store: where calibrations are looked up; the user config directory by default.
        device: only use a device whose GUID equals, or whose name contains, this text.
        reconnect: ``"same"`` (resume only with the unplugged wheel's GUID) or ``"any"``.
        safe_command: what to send while no wheel is connected.
    """

    def __init__(
        self,
        *,
        profile: WheelProfile | None = None,
        calibration: Calibration | None = None,
        store: CalibrationStore | None = None,
        device: str | None = None,
        reconnect: str = "same",
        safe_command: DriverCommand = SAFE_COMMAND,
    ) -> None:
        if reconnect not in RECONNECT_POLICIES:
            raise ConfigError(f"reconnect={reconnect!r}; choose one of {RECONNECT_POLICIES}")
        self._pg = import_pygame("racing-wheel input")
        init_joysticks(self._pg)
        self._event_types = joystick_event_types(self._pg)
        self._fixed_profile = profile
        self._fixed_calibration = calibration
        self._store = store if store is not None else CalibrationStore()
        self._device_filter = device
        self._reconnect = reconnect
        self._safe = safe_command
        self._joystick: Any = None
        self._instance_id: int | None = None
        self._guid = ""
        self._name = ""
        self._profile: WheelProfile = profile or GENERIC
        self._calibration: Calibration | None = calibration
        self._raw: dict[int, float] = {}
        self._actions: list[str] = []
        self._dropouts = 0
        self._status = InputStatus.NO_DEVICE
        self._closed = False
        self._connect_first_present()

    # -- public state ----------------------------------------------------------------------------

    def require_connected(self, *, hint: str = "") -> None:
        """Raise :class:`ConfigError` at once if no wheel is connected, listing what SDL sees.

        For front ends that must not start without a wheel (``s3 collect --device wheel``); the
        input itself keeps waiting for a hot-plug otherwise.

        Args:
            hint: what the user can do instead, appended to the message.
        """
        if self._status is InputStatus.CONNECTED:
            return
        seen = describe_joysticks(self._pg)
        wanted = f" matching {self._device_filter!r}" if self._device_filter else ""
        listing = (
            f"SDL sees {len(seen)} joystick(s): " + "; ".join(seen)
            if seen
            else "SDL sees no joysticks at all"
        )
        raise ConfigError(
            f"no usable racing wheel{wanted} is connected ({listing}). Plug the wheel in (check "
            f"its USB cable, driver and /dev/input permissions) and run again{hint}"
        )

    @property
    def status(self) -> InputStatus:
        """Connection state after the latest poll."""
        return self._status

    @property
    def device_name(self) -> str:
        """Name of the active (or last active) wheel, ``""`` before the first connection."""
        return self._name

    @property
    def guid(self) -> str:
        """SDL GUID of the active (or last active) wheel."""
        return self._guid

    @property
    def profile(self) -> WheelProfile:
        """Profile of the active (or last active) wheel."""
        return self._profile

    @property
    def calibration(self) -> Calibration | None:
        """Calibration in use, ``None`` before the first connection."""
        return self._calibration

    @property
    def raw_axes(self) -> dict[int, float]:
        """Latest raw value [-1, 1] of every axis that has reported since the wheel connected."""
        return dict(self._raw)

    def axis_snapshot(self) -> tuple[float, ...]:
        """Raw values of all axes ``(A,)`` of the active wheel (unreported axes read directly).

        Raises:
            ConfigError: no wheel is connected.
        """
        if self._joystick is None:
            raise ConfigError("no racing wheel is connected; plug one in and try again")
        count = self._joystick.get_numaxes()
        return tuple(self._raw.get(i, _clamp(self._joystick.get_axis(i))) for i in range(count))

    def set_calibration(self, calibration: Calibration) -> None:
        """Use ``calibration`` for the active wheel from now on (e.g. right after the wizard)."""
        self._check_axes(calibration, self._joystick)
        self._fixed_calibration = calibration
        self._calibration = calibration

    # -- InputSource -----------------------------------------------------------------------------

    def poll(self) -> InputReading:
        """Process pending joystick events and return the latest reading (never blocks)."""
        if not self._closed:
            for event in self._pg.event.get(self._event_types):
                self._handle(event)
        if self._status is InputStatus.CONNECTED and self._calibration is not None:
            command = self._calibration.command(self._raw, self._profile, source="wheel")
        else:
            command = self._safe
        reading = InputReading(
            command=command,
            status=self._status,
            device_name=self._name,
            guid=self._guid,
            actions=tuple(self._actions),
            dropouts=self._dropouts,
        )
        self._actions.clear()
        self._dropouts = 0
        return reading

    def close(self) -> None:
        """Release the wheel; later polls report ``NO_DEVICE`` and the safe command."""
        self._release()
        self._status = InputStatus.NO_DEVICE
        self._closed = True

    # -- events ----------------------------------------------------------------------------------

    def _handle(self, event: Any) -> None:
        """Apply one pygame joystick event."""
        pg = self._pg
        if event.type == pg.JOYDEVICEADDED:
            if self._joystick is None:
                self._try_connect(event.device_index)
            return
        if getattr(event, "instance_id", None) != self._instance_id or self._joystick is None:
            return
        if event.type == pg.JOYAXISMOTION:
            self._raw[event.axis] = _clamp(event.value)
        elif event.type == pg.JOYBUTTONDOWN:
            action = self._profile.button_actions.get(event.button)
            if action is not None:
                self._actions.append(action)
        elif event.type == pg.JOYDEVICEREMOVED:
            _LOG.warning("racing wheel %r unplugged: sending safe controls", self._name)
            self._release()
            self._status = InputStatus.DISCONNECTED
            self._dropouts += 1

    def _connect_first_present(self) -> None:
        """Connect to a wheel that is already plugged in, preferring known models."""
        candidates = []
        for index in range(self._pg.joystick.get_count()):
            joystick = self._open(index)
            if joystick is not None and self._accepts(joystick):
                known = select_profile(joystick.get_name(), joystick.get_guid()) is not GENERIC
                candidates.append((not known, index, joystick))
        for _, _, joystick in sorted(candidates, key=lambda c: c[:2]):
            if self._connect(joystick):
                return

    def _try_connect(self, device_index: int) -> None:
        """Connect to a newly added device if the device filter and reconnect policy accept it."""
        joystick = self._open(device_index)
        if joystick is None or not self._accepts(joystick):
            return
        if (
            self._status is InputStatus.DISCONNECTED
            and self._reconnect == "same"
            and joystick.get_guid().lower() != self._guid.lower()
        ):
            _LOG.info(
                "ignoring %r: waiting for the unplugged wheel %r", joystick.get_name(), self._name
            )
            return
        self._connect(joystick)

    def _open(self, device_index: int) -> Any:
        """Open the pygame joystick at ``device_index``; ``None`` if it vanished meanwhile."""
        try:
            joystick = self._pg.joystick.Joystick(device_index)
            joystick.init()
        except self._pg.error:
            return None
        return joystick

    def _accepts(self, joystick: Any) -> bool:
        """Whether ``joystick`` passes the ``device`` filter."""
        wanted = self._device_filter
        if not wanted:
            return True
        return (
            joystick.get_guid().lower() == wanted.lower()
            or wanted.lower() in joystick.get_name().lower()
        )

    def _connect(self, joystick: Any) -> bool:
        """Make ``joystick`` the active wheel; returns False (and logs) if it cannot be used."""
        name, guid = joystick.get_name(), joystick.get_guid()
        profile = self._fixed_profile or select_profile(name, guid)
        calibration = self._fixed_calibration or self._stored_calibration(guid, name)
        if calibration is None:
            calibration = Calibration.from_profile(profile, guid=guid, name=name)
            if profile is GENERIC:
                _LOG.warning(
                    "no calibration for %r (GUID %s): using the generic layout guess; "
                    "run `%s` for correct axes",
                    name,
                    guid,
                    REDO_HINT,
                )
        try:
            self._check_axes(calibration, joystick)
        except ConfigError as exc:
            _LOG.warning("not using %r: %s", name, exc)
            return False
        self._joystick = joystick
        self._instance_id = joystick.get_instance_id()
        self._name, self._guid = name, guid
        self._profile, self._calibration = profile, calibration
        self._raw.clear()
        self._status = InputStatus.CONNECTED
        _LOG.info(
            "racing wheel %r connected (profile %s, %s)", name, profile.name, calibration.origin
        )
        return True

    def _stored_calibration(self, guid: str, name: str) -> Calibration | None:
        """The stored calibration of ``guid`` (``None`` for GUIDs that cannot name a file)."""
        return self._store.load(guid, name=name) if is_sdl_guid(guid) else None

    @staticmethod
    def _check_axes(calibration: Calibration, joystick: Any) -> None:
        """Raise :class:`ConfigError` if ``calibration`` uses axes ``joystick`` does not have."""
        if joystick is None:
            return
        count = joystick.get_numaxes()
        missing = [a for a in calibration.axes if a >= count]
        if missing:
            raise ConfigError(
                f"{joystick.get_name()!r} has {count} axes but its calibration "
                f"({calibration.origin}) uses axes {missing}; run `{REDO_HINT}`"
            )

    def _release(self) -> None:
        """Close the active joystick handle and forget its axis state."""
        if self._joystick is not None:
            try:
                self._joystick.quit()
            except self._pg.error:  # pragma: no cover - SDL already gone
                pass
        self._joystick = None
        self._instance_id = None
        self._raw.clear()
