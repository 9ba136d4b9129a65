"""Fixtures for the wheel-collector tests: headless SDL, a fresh pygame per test, virtual wheels.

pygame (SDL) state is process-global. Every test that touches it gets a freshly initialised
pygame (display without window, joysticks) with the headless environment set before SDL starts,
and a full ``pygame.quit()`` afterwards, so tests do not see each other's devices or events.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from wheel_collector._pygame import HEADLESS_SDL_ENV, import_pygame
from wheel_collector.profiles import G29_LINUX
from wheel_collector.store import CONFIG_DIR_ENV, CalibrationStore
from wheel_collector.virtual import VirtualWheel

#: Logitech G29 USB ids, so a virtual wheel's SDL GUID identifies it as a G29
G29_IDS = {"vendor_id": 0x046D, "product_id": 0xC24F}
G29_NAME = "Logitech G29 Driving Force Racing Wheel"


@pytest.fixture(autouse=True)
def _private_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Point the user config directory at a temporary folder (never touch ~/.config)."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv(CONFIG_DIR_ENV, raising=False)


@pytest.fixture
def pg() -> Iterator[ModuleType]:
    """A freshly initialised headless pygame (display without window + joysticks)."""
    pygame = import_pygame("the wheel-collector tests")
    pygame.quit()  # clean slate, whatever an earlier test left running
    os.environ.update(HEADLESS_SDL_ENV)
    pygame.display.init()
    pygame.joystick.init()
    pygame.font.init()
    pygame.event.clear()
    yield pygame
    pygame.quit()


@pytest.fixture
def store(tmp_path: Path) -> CalibrationStore:
    """An empty calibration store in a temporary folder."""
    return CalibrationStore(tmp_path / "wheels")


@pytest.fixture
def g29(pg: ModuleType) -> Iterator[VirtualWheel]:
    """A virtual G29 (Linux layout, G29 USB ids in its GUID) plugged in, pedals released."""
    wheel = VirtualWheel.for_profile(G29_LINUX, name=G29_NAME, **G29_IDS)
    wheel.attach()
    yield wheel
    wheel.detach()
