"""Lazy pygame import and SDL set-up shared by the wheel, keyboard, HUD and virtual wheel."""

from __future__ import annotations

import os
from types import ModuleType

from gym_s3._optional import require

__all__ = [
    "HEADLESS_SDL_ENV",
    "import_pygame",
    "init_events",
    "init_joysticks",
    "joystick_event_types",
]

#: environment for running without a display or sound card (tests, CI, servers). Must be set
#: before SDL initialises its video and joystick subsystems.
HEADLESS_SDL_ENV: dict[str, str] = {
    "SDL_VIDEODRIVER": "dummy",
    "SDL_AUDIODRIVER": "dummy",
    "SDL_JOYSTICK_ALLOW_BACKGROUND_EVENTS": "1",
}

#: suffixes of pygame's joystick event names (``JOYAXISMOTION``, ...)
_JOY_EVENTS = (
    "AXISMOTION",
    "BALLMOTION",
    "HATMOTION",
    "BUTTONDOWN",
    "BUTTONUP",
    "DEVICEADDED",
    "DEVICEREMOVED",
)


def import_pygame(purpose: str) -> ModuleType:
    """Import pygame (optional extra ``wheel``), after setting SDL hints the collector needs.

    ``SDL_JOYSTICK_ALLOW_BACKGROUND_EVENTS=1`` is set unless the user chose otherwise: without it
    SDL drops wheel motion whenever the HUD window is not focused (or there is no window at all).

    Args:
        purpose: what the caller needs pygame for (shown if it is missing).
    """
    os.environ.setdefault("SDL_JOYSTICK_ALLOW_BACKGROUND_EVENTS", "1")
    os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
    return require("pygame", purpose=purpose, extra="wheel")


def init_events(pg: ModuleType) -> None:
    """Initialise SDL video (needed for the event queue) if it is not running yet."""
    if not pg.display.get_init():
        pg.display.init()


def init_joysticks(pg: ModuleType) -> None:
    """Initialise the event queue and the joystick subsystem if they are not running yet."""
    init_events(pg)
    if not pg.joystick.get_init():
        pg.joystick.init()


def joystick_event_types(pg: ModuleType) -> list[int]:
    """Return the joystick event types: axes, balls, hats, buttons and hot-plug."""
    return [getattr(pg, f"JOY{name}") for name in _JOY_EVENTS]
