"""Driving-data collection: input devices (racing wheels, keyboard), HUD, calibration.

Input devices implement :class:`InputSource` (``poll() -> InputReading``, ``close()``) and
produce :class:`DriverCommand` values (``steer`` in [-1, 1] with +1 = right, ``throttle`` and
``brake`` in [0, 1]). pygame is an optional dependency (extra ``wheel``); it is imported only
when a device, the HUD or the virtual wheel is created, so importing this package stays cheap.

Main pieces:

* :class:`WheelInput`: racing wheels through pygame's joystick API, with per-model profiles
  (:data:`G29_LINUX`, :data:`G920_LINUX`, Windows variants, :data:`GENERIC`), per-device
  calibration files and hot-plug handling (unplug -> :data:`SAFE_COMMAND`, replug -> resume);
* :class:`KeyboardInput`: arrow keys / WASD with rate-limited ramps;
* :func:`calibrate`: the calibration wizard, :class:`CalibrationStore` its JSON files;
* :class:`Hud`: the heads-up display (works headless);
* :class:`VirtualWheel`: an SDL virtual wheel to test a setup without hardware;
* :class:`ExpertInput`: the scripted expert driver as an input source;
* :class:`CollectionSession`: a 20 Hz logging session against BeamNG.tech or the stand-in
  (``s3 collect``).
"""

from __future__ import annotations

from wheel_collector.calibration import Calibration, PedalCalibration, SteerCalibration
from wheel_collector.commands import (
    SAFE_BRAKE,
    SAFE_COMMAND,
    DriverCommand,
    InputReading,
    InputSource,
    InputStatus,
)
from wheel_collector.hud import Hud, HudState
from wheel_collector.keyboard import KeyboardConfig, KeyboardInput
from wheel_collector.profiles import (
    BUILTIN_PROFILES,
    G29_LINUX,
    G29_WINDOWS,
    G920_LINUX,
    G920_WINDOWS,
    GENERIC,
    WheelProfile,
    select_profile,
)
from wheel_collector.store import CalibrationStore, default_config_dir
from wheel_collector.virtual import HEADLESS_SDL_ENV, VirtualWheel
from wheel_collector.wheel import WheelInput
from wheel_collector.wizard import CALIBRATION_STEPS, calibrate, calibration_from_samples


def __getattr__(name: str):
    """Import the session and the expert lazily (they pull in torch and the tracks)."""
    if name == "ExpertInput":
        from wheel_collector.expert import ExpertInput

        return ExpertInput
    if name == "CollectionSession":
        from wheel_collector.session import CollectionSession

        return CollectionSession
    raise AttributeError(f"module 'wheel_collector' has no attribute {name!r}")


__all__ = [
    "CollectionSession",
    "ExpertInput",
    "BUILTIN_PROFILES",
    "CALIBRATION_STEPS",
    "G29_LINUX",
    "G29_WINDOWS",
    "G920_LINUX",
    "G920_WINDOWS",
    "GENERIC",
    "HEADLESS_SDL_ENV",
    "SAFE_BRAKE",
    "SAFE_COMMAND",
    "Calibration",
    "CalibrationStore",
    "DriverCommand",
    "Hud",
    "HudState",
    "InputReading",
    "InputSource",
    "InputStatus",
    "KeyboardConfig",
    "KeyboardInput",
    "PedalCalibration",
    "SteerCalibration",
    "VirtualWheel",
    "WheelInput",
    "WheelProfile",
    "calibrate",
    "calibration_from_samples",
    "default_config_dir",
    "select_profile",
]
