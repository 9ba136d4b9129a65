"""The SDL virtual wheel: library discovery, errors, attach/detach bookkeeping."""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType

import pytest

from gym_s3.errors import ConfigError, MissingDependencyError
from wheel_collector.virtual import SDL_LIBRARY_ENV, VirtualWheel, find_sdl_library
from wheel_collector.wheel import WheelInput

pytestmark = pytest.mark.timeout(30)


def test_finds_the_sdl_bundled_with_pygame(pg: ModuleType) -> None:
    """The library found is a file next to the installed pygame package."""
    path = find_sdl_library()
    assert path.is_file() and "SDL2" in path.name
    assert Path(pg.__file__).resolve().parent.parent in path.resolve().parents


def test_missing_library_gives_a_clear_error(
    pg: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A wrong S3_SDL2_LIBRARY path fails at attach with MissingDependencyError naming it."""
    bogus = tmp_path / "libSDL2-missing.so"
    monkeypatch.setenv(SDL_LIBRARY_ENV, str(bogus))
    with pytest.raises(MissingDependencyError, match="libSDL2-missing"):
        VirtualWheel().attach()


def test_missing_pygame_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without pygame, creating an input device says which extra to install."""
    monkeypatch.setitem(sys.modules, "pygame", None)
    with pytest.raises(MissingDependencyError, match=r"sim2sim2sim\[wheel\]"):
        WheelInput()


def test_attach_detach_bookkeeping(pg: ModuleType) -> None:
    """Detach finds its device even after indices shift; using a detached wheel is an error."""
    first, second = VirtualWheel(), VirtualWheel()
    first.attach()
    second.attach()
    assert pg.joystick.get_count() == 2
    first.detach()
    first.detach()  # no-op
    second.detach()  # its device index moved from 1 to 0: found by instance id
    assert pg.joystick.get_count() == 0
    with pytest.raises(ConfigError, match="not attached"):
        second.set_axis(0, 0.5)
    with VirtualWheel(num_axes=2) as wheel:
        with pytest.raises(ConfigError, match="axis 2 does not exist"):
            wheel.set_axis(2, 0.0)
        with pytest.raises(ConfigError, match="already attached"):
            wheel.attach()
    with pytest.raises(ConfigError, match="USB ids"):
        VirtualWheel(vendor_id=0x10000)
