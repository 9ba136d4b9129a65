"""A virtual racing wheel made with SDL's virtual-joystick API, for tests and setup checks.

pygame wheels ship their own SDL2 library. Loading that same file with :mod:`ctypes` gives the
very SDL instance pygame runs, so a joystick attached with ``SDL_JoystickAttachVirtual`` appears
to pygame (and to :class:`~wheel_collector.wheel.WheelInput`) exactly like a plugged-in wheel:
``JOYDEVICEADDED``, ``JOYAXISMOTION``, ``JOYBUTTONDOWN`` and, on detach, ``JOYDEVICEREMOVED``.
It works headless (see :data:`HEADLESS_SDL_ENV`) and needs no root, unlike uinput.

Example::

    wheel = VirtualWheel.for_profile(G29_LINUX)
    wheel.attach()
    wheel.set_controls(steer=0.5, throttle=1.0)   # or raw: wheel.set_axis(0, 0.5)
    ...
    wheel.detach()                                # the "unplug"
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Mapping
from pathlib import Path

from gym_s3.errors import ConfigError, MissingDependencyError
from wheel_collector._pygame import HEADLESS_SDL_ENV, import_pygame, init_joysticks
from wheel_collector.profiles import GENERIC, WheelProfile

__all__ = ["HEADLESS_SDL_ENV", "SDL_LIBRARY_ENV", "VirtualWheel", "find_sdl_library"]

#: environment variable naming the SDL2 library pygame uses (if it is not bundled in the wheel)
SDL_LIBRARY_ENV = "S3_SDL2_LIBRARY"
_SDL_INIT_JOYSTICK = 0x00000200
_SDL_JOYSTICK_TYPE_WHEEL = 2
_INT16_MAX = 32767
_INT16_MIN = -32768


class _VirtualJoystickDesc(ctypes.Structure):
    """``SDL_VirtualJoystickDesc`` of SDL 2.24+ (``SDL_VIRTUAL_JOYSTICK_DESC_VERSION`` 1)."""

    _fields_ = [
        ("version", ctypes.c_uint16),
        ("type", ctypes.c_uint16),
        ("naxes", ctypes.c_uint16),
        ("nbuttons", ctypes.c_uint16),
        ("nhats", ctypes.c_uint16),
        ("vendor_id", ctypes.c_uint16),
        ("product_id", ctypes.c_uint16),
        ("padding", ctypes.c_uint16),
        ("button_mask", ctypes.c_uint32),
        ("axis_mask", ctypes.c_uint32),
        ("name", ctypes.c_char_p),
        ("userdata", ctypes.c_void_p),
        ("Update", ctypes.c_void_p),
        ("SetPlayerIndex", ctypes.c_void_p),
        ("Rumble", ctypes.c_void_p),
        ("RumbleTriggers", ctypes.c_void_p),
        ("SetLED", ctypes.c_void_p),
        ("SendEffect", ctypes.c_void_p),
    ]


def find_sdl_library() -> Path:
    """Return the path of the SDL2 library bundled with the installed pygame.

    Looks in the places pygame's binary wheels use (Linux ``pygame.libs/libSDL2-2*.so*``, macOS
    ``pygame/.dylibs/libSDL2*.dylib``, Windows ``pygame/SDL2.dll``); ``S3_SDL2_LIBRARY`` wins.

    Raises:
        MissingDependencyError: no bundled SDL2 found (e.g. pygame built against a system SDL).
    """
    override = os.environ.get(SDL_LIBRARY_ENV)
    if override:
        return Path(override)
    pg = import_pygame("the virtual racing wheel")
    package = Path(pg.__file__).resolve().parent
    searched = [
        (package.parent / "pygame.libs", "libSDL2-2*.so*"),
        (package / ".dylibs", "libSDL2*.dylib"),
        (package, "SDL2.dll"),
    ]
    for folder, pattern in searched:
        found = sorted(folder.glob(pattern)) if folder.is_dir() else []
        if found:
            return found[0]
    places = ", ".join(str(folder / pattern) for folder, pattern in searched)
    raise MissingDependencyError(
        f"the virtual racing wheel needs the SDL2 library bundled with pygame, but none was found "
        f"(searched {places}). Install pygame from its binary wheel (pip install "
        f'"sim2sim2sim[wheel]"), or set {SDL_LIBRARY_ENV} to the libSDL2 file your pygame uses'
    )


def _load_sdl() -> ctypes.CDLL:
    """Load pygame's SDL2 with the prototypes this module calls, checking it is pygame's SDL."""
    path = find_sdl_library()
    try:
        lib = ctypes.CDLL(str(path))
    except OSError as exc:
        raise MissingDependencyError(f"cannot load the SDL2 library {path}: {exc}") from exc
    if not hasattr(lib, "SDL_JoystickAttachVirtual"):
        raise MissingDependencyError(
            f"the SDL2 library {path} is older than 2.0.14 and has no virtual joysticks; "
            "upgrade pygame (pip install -U pygame)"
        )
    ptr, i32 = ctypes.c_void_p, ctypes.c_int
    prototypes: dict[str, tuple[object, list[object]]] = {
        "SDL_JoystickAttachVirtual": (i32, [i32, i32, i32, i32]),
        "SDL_JoystickDetachVirtual": (i32, [i32]),
        "SDL_JoystickOpen": (ptr, [i32]),
        "SDL_JoystickClose": (None, [ptr]),
        "SDL_JoystickInstanceID": (ctypes.c_int32, [ptr]),
        "SDL_JoystickGetDeviceInstanceID": (ctypes.c_int32, [i32]),
        "SDL_NumJoysticks": (i32, []),
        "SDL_JoystickSetVirtualAxis": (i32, [ptr, i32, ctypes.c_int16]),
        "SDL_JoystickSetVirtualButton": (i32, [ptr, i32, ctypes.c_uint8]),
        "SDL_JoystickSetVirtualHat": (i32, [ptr, i32, ctypes.c_uint8]),
        "SDL_JoystickUpdate": (None, []),
        "SDL_WasInit": (ctypes.c_uint32, [ctypes.c_uint32]),
        "SDL_GetError": (ctypes.c_char_p, []),
    }
    if hasattr(lib, "SDL_JoystickAttachVirtualEx"):  # SDL >= 2.24
        prototypes["SDL_JoystickAttachVirtualEx"] = (i32, [ctypes.POINTER(_VirtualJoystickDesc)])
    for name, (restype, argtypes) in prototypes.items():
        function = getattr(lib, name)
        function.restype = restype
        function.argtypes = argtypes
    return lib


class VirtualWheel:
    """A virtual SDL racing wheel driven from Python.

    Args:
        num_axes: number of axes (>= 1).
        num_buttons: number of buttons.
        num_hats: number of hats (D-pads).
        rest_axes: axis -> raw value [-1, 1] set right after attaching (e.g. released pedals at
            +1 for Logitech layouts); other axes rest at 0.
        profile: layout used by :meth:`set_controls`; :data:`GENERIC` by default.
        name: device name reported to pygame (SDL 2.24+); ``"Virtual Wheel"`` by default.
        vendor_id: USB vendor id put into the SDL GUID (SDL 2.24+), e.g. ``0x046D`` Logitech.
        product_id: USB product id put into the SDL GUID (SDL 2.24+), e.g. ``0xC24F`` G29.
    """

    def __init__(
        self,
        *,
        num_axes: int = 4,
        num_buttons: int = 25,
        num_hats: int = 1,
        rest_axes: Mapping[int, float] | None = None,
        profile: WheelProfile = GENERIC,
        name: str | None = None,
        vendor_id: int = 0,
        product_id: int = 0,
    ) -> None:
        if num_axes < 1 or num_buttons < 0 or num_hats < 0:
            raise ConfigError(
                f"VirtualWheel needs num_axes >= 1 and non-negative buttons/hats, got "
                f"{num_axes}, {num_buttons}, {num_hats}"
            )
        self.num_axes, self.num_buttons, self.num_hats = num_axes, num_buttons, num_hats
        self.rest_axes = dict(rest_axes or {})
        for axis in self.rest_axes:
            self._check_index("axis", axis, num_axes)
        self.profile = profile
        if not (0 <= vendor_id <= 0xFFFF and 0 <= product_id <= 0xFFFF):
            raise ConfigError(f"USB ids must fit 16 bits, got {vendor_id:#x}:{product_id:#x}")
        self.name, self.vendor_id, self.product_id = name, vendor_id, product_id
        self._lib: ctypes.CDLL | None = None
        self._handle: int | None = None
        self._instance_id: int | None = None

    @classmethod
    def for_profile(cls, profile: WheelProfile, **kwargs: object) -> VirtualWheel:
        """A virtual wheel with ``profile``'s axis layout, pedals resting released."""
        pedals = [profile.throttle_axis, profile.brake_axis]
        if profile.clutch_axis is not None:
            pedals.append(profile.clutch_axis)
        num_axes = max([4, profile.steer_axis + 1, *(a + 1 for a in pedals)])
        rest = {axis: profile.pedal_released for axis in pedals}
        return cls(num_axes=num_axes, rest_axes=rest, profile=profile, **kwargs)  # type: ignore[arg-type]

    # -- lifecycle -------------------------------------------------------------------------------

    @property
    def attached(self) -> bool:
        """True while the virtual wheel is plugged in."""
        return self._handle is not None

    @property
    def instance_id(self) -> int:
        """SDL instance id of the attached wheel (changes on every attach)."""
        self._require_attached()
        assert self._instance_id is not None
        return self._instance_id

    def attach(self) -> int:
        """Plug the wheel in: attach it, apply ``rest_axes``, and return its SDL device index."""
        if self.attached:
            raise ConfigError("the virtual wheel is already attached; detach() it first")
        pg = import_pygame("the virtual racing wheel")
        init_joysticks(pg)
        if self._lib is None:
            self._lib = _load_sdl()
        lib = self._lib
        if not lib.SDL_WasInit(_SDL_INIT_JOYSTICK):
            raise MissingDependencyError(
                f"the SDL2 library {find_sdl_library()} is not the one pygame runs (its joystick "
                f"subsystem is not initialised); set {SDL_LIBRARY_ENV} to pygame's libSDL2"
            )
        index = self._attach(lib)
        if index < 0:
            raise ConfigError(f"SDL_JoystickAttachVirtual failed: {self._sdl_error()}")
        handle = lib.SDL_JoystickOpen(index)
        if not handle:
            lib.SDL_JoystickDetachVirtual(index)
            raise ConfigError(f"SDL_JoystickOpen of the virtual wheel failed: {self._sdl_error()}")
        self._handle = handle
        self._instance_id = int(lib.SDL_JoystickInstanceID(handle))
        for axis, value in self.rest_axes.items():
            lib.SDL_JoystickSetVirtualAxis(handle, axis, self._to_int16(value))
        lib.SDL_JoystickUpdate()
        return index

    def _attach(self, lib: ctypes.CDLL) -> int:
        """Call the SDL attach function (the extended one when a name or USB ids are given)."""
        if self.name is None and not self.vendor_id and not self.product_id:
            return lib.SDL_JoystickAttachVirtual(
                _SDL_JOYSTICK_TYPE_WHEEL, self.num_axes, self.num_buttons, self.num_hats
            )
        if not hasattr(lib, "SDL_JoystickAttachVirtualEx"):
            raise MissingDependencyError(
                "a virtual wheel with a custom name or USB ids needs SDL >= 2.24; upgrade pygame"
            )
        desc = _VirtualJoystickDesc(
            version=1,
            type=_SDL_JOYSTICK_TYPE_WHEEL,
            naxes=self.num_axes,
            nbuttons=self.num_buttons,
            nhats=self.num_hats,
            vendor_id=self.vendor_id,
            product_id=self.product_id,
            name=(self.name or "Virtual Wheel").encode(),
        )
        return lib.SDL_JoystickAttachVirtualEx(ctypes.byref(desc))

    def detach(self) -> None:
        """Unplug the wheel (pygame then reports ``JOYDEVICEREMOVED``); no-op when detached."""
        if self._handle is None or self._lib is None:
            return
        lib, instance_id = self._lib, self._instance_id
        lib.SDL_JoystickClose(self._handle)
        self._handle = None
        self._instance_id = None
        # device indices shift when other joysticks come and go: look ours up by instance id
        for index in range(lib.SDL_NumJoysticks()):
            if lib.SDL_JoystickGetDeviceInstanceID(index) == instance_id:
                lib.SDL_JoystickDetachVirtual(index)
                break
        lib.SDL_JoystickUpdate()

    def __enter__(self) -> VirtualWheel:
        self.attach()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.detach()

    # -- inputs ----------------------------------------------------------------------------------

    def set_axis(self, axis: int, value: float) -> None:
        """Move one axis to ``value`` in [-1, 1] (-1 sends int16 -32768, as real end stops do)."""
        self.set_axes({axis: value})

    def set_axes(self, values: Mapping[int, float]) -> None:
        """Move several axes at once (one ``SDL_JoystickUpdate``)."""
        handle, lib = self._require_attached()
        for axis, value in values.items():
            self._check_index("axis", axis, self.num_axes)
            if lib.SDL_JoystickSetVirtualAxis(handle, axis, self._to_int16(value)) < 0:
                raise ConfigError(f"setting virtual axis {axis} failed: {self._sdl_error()}")
        lib.SDL_JoystickUpdate()

    def set_button(self, button: int, pressed: bool) -> None:
        """Press (True) or release (False) a button."""
        handle, lib = self._require_attached()
        self._check_index("button", button, self.num_buttons)
        lib.SDL_JoystickSetVirtualButton(handle, button, 1 if pressed else 0)
        lib.SDL_JoystickUpdate()

    def click(self, button: int) -> None:
        """Press and release a button (two SDL updates, so both events are sent)."""
        self.set_button(button, True)
        self.set_button(button, False)

    def set_controls(
        self, *, steer: float = 0.0, throttle: float = 0.0, brake: float = 0.0, clutch: float = 0.0
    ) -> None:
        """Set the wheel through ``profile``'s nominal layout (steer +1 = right, pedals 0..1)."""
        p = self.profile
        values = {p.steer_axis: -steer if p.steer_inverted else steer}
        pedals = [(p.throttle_axis, throttle), (p.brake_axis, brake)]
        if p.clutch_axis is not None:
            pedals.append((p.clutch_axis, clutch))
        for axis, travel in pedals:
            values[axis] = p.pedal_released + travel * (p.pedal_pressed - p.pedal_released)
        self.set_axes(values)

    # -- helpers ---------------------------------------------------------------------------------

    def _require_attached(self) -> tuple[int, ctypes.CDLL]:
        """Return (handle, library) or raise if the wheel is not attached."""
        if self._handle is None or self._lib is None:
            raise ConfigError("the virtual wheel is not attached; call attach() first")
        return self._handle, self._lib

    def _sdl_error(self) -> str:
        """SDL's last error message."""
        assert self._lib is not None
        return (self._lib.SDL_GetError() or b"").decode(errors="replace")

    @staticmethod
    def _check_index(kind: str, index: int, count: int) -> None:
        """Raise :class:`ConfigError` unless ``0 <= index < count``."""
        if not 0 <= index < count:
            raise ConfigError(f"virtual wheel {kind} {index} does not exist (it has {count})")

    @staticmethod
    def _to_int16(value: float) -> int:
        """Raw SDL axis value of ``value`` in [-1, 1]."""
        value = min(max(float(value), -1.0), 1.0)
        return _INT16_MIN if value <= -1.0 else int(round(value * _INT16_MAX))
