"""Racing-wheel profiles: axis layout, pedal direction, deadzones and button map per device model.

A profile is the uncalibrated default for a wheel model; a per-device :class:`Calibration`
(``wheel_collector.calibration``) recorded by the wizard overrides its axis indices and raw ranges.

Layouts (pygame / SDL2 axis numbers, see the project's vehicle-dynamics reference, §5.2):

* ``G29_LINUX`` (hid-logitech lg4ff): 0 steering (-1 left, +1 right), 1 clutch, 2 throttle,
  3 brake; pedals report +1 released and -1 fully pressed. Buttons follow the HID report order
  (Cross 0, Square 1, Circle 2, Triangle 3, right/left paddles 4/5, R2 6, L2 7, Share 8,
  Options 9, ..., PS 24), consistent with CARLA's ``wheel_config.ini`` (paddles 4 and 5).
* ``G920_LINUX`` (hid-logitech-hidpp): 0 steering, 1 throttle, 2 brake, 3 clutch; evdev key codes
  288-298 are A, B, X, Y, right/left paddles, menu, view, RSB, LSB, Xbox, numbered by SDL as
  buttons 0-10 (order unverified on hardware).
* ``G29_WINDOWS`` / ``G920_WINDOWS`` (DirectInput through G HUB): field reports disagree; the most
  common layout (0 steering, 1 throttle, 2 brake, 3 clutch) is used. Not verified on hardware:
  run the calibration wizard (``s3 collect --calibrate``), which detects the axes itself.
* ``GENERIC``: any other wheel; same guess as the G920 layout, no clutch, no buttons. Calibrate.

Deadzones follow the reference conventions: steering <= 1 % (a wheel has no stick drift and a
deadzone costs precision), pedal low deadzone 2-5 % (rest noise), top saturation 2-3 % (so 1.0 is
reachable).
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass

from gym_s3.errors import ConfigError

__all__ = [
    "BUILTIN_PROFILES",
    "G29_LINUX",
    "G29_WINDOWS",
    "G920_LINUX",
    "G920_WINDOWS",
    "GENERIC",
    "LOGITECH_VENDOR_ID",
    "WheelProfile",
    "is_sdl_guid",
    "parse_guid",
    "select_profile",
]

#: USB vendor id of Logitech
LOGITECH_VENDOR_ID = 0x046D
#: USB product ids (Linux kernel ``hid-ids.h``): G29 in PlayStation/PC mode, G920
_G29_PRODUCT_ID = 0xC24F
_G920_PRODUCT_ID = 0xC262

#: button action names a profile may map; the session decides what each does
BUTTON_ACTIONS: frozenset[str] = frozenset({"pause", "reset", "quit"})


def is_sdl_guid(text: str) -> bool:
    """Return True when ``text`` looks like an SDL2 joystick GUID (32 hex digits)."""
    return bool(re.fullmatch(r"[0-9a-fA-F]{32}", text or ""))


def parse_guid(guid: str) -> tuple[int, int] | None:
    """Return the USB ``(vendor_id, product_id)`` encoded in an SDL2 joystick GUID, if any.

    SDL2 GUIDs are 16 bytes (32 hex digits): bus (2 bytes, little endian), name CRC (2), vendor
    (2), zero (2), product (2), zero (2), version (2), driver signature and data (2). Virtual and
    some Bluetooth devices store a name instead; then ``None`` is returned.

    Args:
        guid: the string from ``pygame.joystick.Joystick.get_guid()``.
    """
    if not is_sdl_guid(guid):
        return None
    raw = bytes.fromhex(guid)
    if raw[6:8] != b"\x00\x00" or raw[10:12] != b"\x00\x00":
        return None
    vendor = int.from_bytes(raw[4:6], "little")
    product = int.from_bytes(raw[8:10], "little")
    if vendor == 0:
        return None
    return vendor, product


@dataclass(frozen=True)
class WheelProfile:
    """Default axis layout and signal conventions of one wheel model.

    Attributes:
        name: profile id, e.g. ``"g29-linux"``.
        description: human-readable model name.
        steer_axis: pygame axis index of the steering wheel.
        throttle_axis: pygame axis index of the throttle pedal.
        brake_axis: pygame axis index of the brake pedal.
        clutch_axis: pygame axis index of the clutch pedal, ``None`` when absent.
        steer_inverted: True when the raw steering axis grows towards the left.
        pedal_released: raw axis value [-1, 1] of a released pedal.
        pedal_pressed: raw axis value [-1, 1] of a fully pressed pedal.
        steer_deadzone: centre deadzone as a fraction of half the steering range [-], <= 0.25.
        pedal_deadzone: low deadzone as a fraction of pedal travel [-].
        pedal_saturation: top saturation as a fraction of pedal travel [-].
        rotation_deg: lock-to-lock rotation range of the wheel [deg].
        buttons: ``(action, button index)`` pairs, actions from ``{"pause", "reset", "quit"}``.
        usb_ids: ``(vendor_id, product_id)`` pairs that identify the model in the SDL GUID.
        name_patterns: case-insensitive regular expressions matched against the device name.
        platforms: ``sys.platform`` prefixes the layout was described for; empty = any.
    """

    name: str
    description: str
    steer_axis: int = 0
    throttle_axis: int = 1
    brake_axis: int = 2
    clutch_axis: int | None = None
    steer_inverted: bool = False
    pedal_released: float = 1.0
    pedal_pressed: float = -1.0
    steer_deadzone: float = 0.005
    pedal_deadzone: float = 0.03
    pedal_saturation: float = 0.025
    rotation_deg: float = 900.0
    buttons: tuple[tuple[str, int], ...] = ()
    usb_ids: tuple[tuple[int, int], ...] = ()
    name_patterns: tuple[str, ...] = ()
    platforms: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        axes = [self.steer_axis, self.throttle_axis, self.brake_axis]
        if self.clutch_axis is not None:
            axes.append(self.clutch_axis)
        if any(not isinstance(a, int) or a < 0 for a in axes):
            raise ConfigError(f"profile {self.name!r}: axis indices must be ints >= 0, got {axes}")
        if len(set(axes)) != len(axes):
            raise ConfigError(f"profile {self.name!r}: axis indices must be distinct, got {axes}")
        for label, value in (("released", self.pedal_released), ("pressed", self.pedal_pressed)):
            if not -1.0 <= value <= 1.0:
                raise ConfigError(f"profile {self.name!r}: pedal_{label}={value} not in [-1, 1]")
        if abs(self.pedal_released - self.pedal_pressed) < 0.1:
            raise ConfigError(
                f"profile {self.name!r}: pedal_released and pedal_pressed must differ by >= 0.1"
            )
        if not 0.0 <= self.steer_deadzone <= 0.25:
            raise ConfigError(
                f"profile {self.name!r}: steer_deadzone={self.steer_deadzone} not in [0, 0.25] "
                "(wheels want <= 0.01)"
            )
        if self.pedal_deadzone < 0 or self.pedal_saturation < 0:
            raise ConfigError(f"profile {self.name!r}: pedal deadzone/saturation must be >= 0")
        if self.pedal_deadzone + self.pedal_saturation >= 0.5:
            raise ConfigError(
                f"profile {self.name!r}: pedal_deadzone + pedal_saturation must be < 0.5 "
                "(recommended 0.02-0.05 and 0.02-0.03)"
            )
        if not 90.0 <= self.rotation_deg <= 3600.0:
            raise ConfigError(f"profile {self.name!r}: rotation_deg={self.rotation_deg} unlikely")
        seen: set[str] = set()
        for action, button in self.buttons:
            if action not in BUTTON_ACTIONS:
                raise ConfigError(
                    f"profile {self.name!r}: unknown button action {action!r}; "
                    f"choose from {sorted(BUTTON_ACTIONS)}"
                )
            if action in seen or not isinstance(button, int) or button < 0:
                raise ConfigError(f"profile {self.name!r}: bad button entry {(action, button)}")
            seen.add(action)
        for pattern in self.name_patterns:
            re.compile(pattern)

    @property
    def button_actions(self) -> dict[int, str]:
        """Button index -> action name."""
        return {button: action for action, button in self.buttons}

    def matches(self, name: str, guid: str) -> bool:
        """Return True when a device with this ``name`` and SDL ``guid`` is this model."""
        ids = parse_guid(guid)
        if ids is not None and ids in self.usb_ids:
            return True
        return any(re.search(p, name or "", flags=re.IGNORECASE) for p in self.name_patterns)

    def supports_platform(self, platform: str) -> bool:
        """Return True when the layout was described for ``platform`` (a ``sys.platform``)."""
        return not self.platforms or any(platform.startswith(p) for p in self.platforms)


_G29_BUTTONS = (("reset", 8), ("pause", 9), ("quit", 24))  # Share, Options, PS
_G920_BUTTONS = (("pause", 6), ("reset", 7), ("quit", 10))  # menu, view, Xbox

G29_LINUX = WheelProfile(
    name="g29-linux",
    description="Logitech G29 Driving Force (Linux, hid-logitech lg4ff)",
    steer_axis=0,
    clutch_axis=1,
    throttle_axis=2,
    brake_axis=3,
    buttons=_G29_BUTTONS,
    usb_ids=((LOGITECH_VENDOR_ID, _G29_PRODUCT_ID),),
    name_patterns=(r"\bG29\b",),
    platforms=("linux",),
)

G920_LINUX = WheelProfile(
    name="g920-linux",
    description="Logitech G920 Driving Force (Linux, hid-logitech-hidpp)",
    steer_axis=0,
    throttle_axis=1,
    brake_axis=2,
    clutch_axis=3,
    buttons=_G920_BUTTONS,
    usb_ids=((LOGITECH_VENDOR_ID, _G920_PRODUCT_ID),),
    name_patterns=(r"\bG920\b",),
    platforms=("linux",),
)

G29_WINDOWS = WheelProfile(
    name="g29-windows",
    description="Logitech G29 Driving Force (Windows, DirectInput; unverified: calibrate)",
    steer_axis=0,
    throttle_axis=1,
    brake_axis=2,
    clutch_axis=3,
    buttons=_G29_BUTTONS,
    usb_ids=G29_LINUX.usb_ids,
    name_patterns=G29_LINUX.name_patterns,
    platforms=("win32", "cygwin"),
)

G920_WINDOWS = WheelProfile(
    name="g920-windows",
    description="Logitech G920 Driving Force (Windows, DirectInput; unverified: calibrate)",
    steer_axis=0,
    throttle_axis=1,
    brake_axis=2,
    clutch_axis=3,
    buttons=_G920_BUTTONS,
    usb_ids=G920_LINUX.usb_ids,
    name_patterns=G920_LINUX.name_patterns,
    platforms=("win32", "cygwin"),
)

GENERIC = WheelProfile(
    name="generic",
    description="Generic racing wheel (guessed layout: run `s3 collect --calibrate`)",
    steer_axis=0,
    throttle_axis=1,
    brake_axis=2,
    clutch_axis=None,
)

#: every built-in profile by name, most specific first (GENERIC last)
BUILTIN_PROFILES: dict[str, WheelProfile] = {
    p.name: p for p in (G29_LINUX, G920_LINUX, G29_WINDOWS, G920_WINDOWS, GENERIC)
}


def select_profile(
    name: str,
    guid: str,
    *,
    platform: str | None = None,
    profiles: tuple[WheelProfile, ...] | None = None,
) -> WheelProfile:
    """Pick the profile of a device by USB ids in its GUID or by its name.

    Profiles described for the current platform win; a matching profile of another platform is
    the next choice (the layout is likely closer than a guess); otherwise :data:`GENERIC`.

    Args:
        name: device name from ``Joystick.get_name()``.
        guid: SDL GUID from ``Joystick.get_guid()``.
        platform: ``sys.platform`` value to select for; the running platform by default.
        profiles: candidates in priority order; the built-ins by default.
    """
    platform = sys.platform if platform is None else platform
    candidates = tuple(BUILTIN_PROFILES.values()) if profiles is None else profiles
    matching = [p for p in candidates if p is not GENERIC and p.matches(name, guid)]
    for profile in matching:
        if profile.supports_platform(platform):
            return profile
    return matching[0] if matching else GENERIC
