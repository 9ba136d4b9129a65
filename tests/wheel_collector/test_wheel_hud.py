"""The HUD renders headless and its pixels follow the inputs it is given."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np
import pytest

from gym_s3.errors import ConfigError
from wheel_collector.commands import DriverCommand, InputStatus
from wheel_collector.hud import (
    BRAKE_COLOUR,
    DISCONNECTED_COLOUR,
    STEER_COLOUR,
    THROTTLE_COLOUR,
    Hud,
    HudState,
)

pytestmark = pytest.mark.timeout(30)


def _state(steer: float = 0.0, throttle: float = 0.0, brake: float = 0.0, **kw: Any) -> HudState:
    """A HUD state with the given controls."""
    command = DriverCommand(steer=steer, throttle=throttle, brake=brake, source="test")
    return HudState(command=command, **kw)


def _share(frame: np.ndarray, rect: tuple[int, int, int, int], colour: tuple[int, ...]) -> float:
    """Fraction of the pixels in ``rect`` that have exactly ``colour``."""
    x, y, w, h = rect
    region = frame[y : y + h, x : x + w]
    return float(np.all(region == np.array(colour), axis=-1).mean())


def test_renders_headless_to_an_rgb_array(pg: ModuleType) -> None:
    """draw() returns a surface of the HUD size; to_rgb_array is (H, W, 3) uint8."""
    hud = Hud((480, 270))
    surface = hud.draw(_state(speed_mps=20.0, surface="asphalt", mu=1.0, recording=True))
    assert surface.get_size() == (480, 270)
    frame = hud.to_rgb_array()
    assert frame.shape == (270, 480, 3) and frame.dtype == np.uint8
    assert len(np.unique(frame.reshape(-1, 3), axis=0)) > 5  # something was drawn


@pytest.mark.parametrize("value", [0.0, 0.25, 0.5, 1.0])
def test_pedal_bars_fill_in_proportion(pg: ModuleType, value: float) -> None:
    """The throttle and brake bars are filled to the pedal value (within one pixel row)."""
    hud = Hud()
    hud.draw(_state(throttle=value, brake=1.0 - value))
    frame = hud.to_rgb_array()
    row = 1.0 / hud.throttle_rect[3]
    assert _share(frame, hud.throttle_rect, THROTTLE_COLOUR) == pytest.approx(value, abs=row)
    assert _share(frame, hud.brake_rect, BRAKE_COLOUR) == pytest.approx(1.0 - value, abs=row)


@pytest.mark.parametrize("steer", [-1.0, -0.5, 0.5, 1.0])
def test_steering_bar_fills_towards_the_steering_side(pg: ModuleType, steer: float) -> None:
    """Right steering (+) fills right of the centre, left (-) fills left, in proportion."""
    hud = Hud()
    hud.draw(_state(steer=steer))
    frame = hud.to_rgb_array()
    x, y, w, h = hud.steer_rect
    left_half = (x, y, w // 2, h)
    right_half = (x + w // 2, y, w - w // 2, h)
    filled, empty = (right_half, left_half) if steer > 0 else (left_half, right_half)
    assert _share(frame, filled, STEER_COLOUR) == pytest.approx(abs(steer), abs=0.02)
    assert _share(frame, empty, STEER_COLOUR) == 0.0


def test_disconnected_banner_and_text_changes(pg: ModuleType) -> None:
    """A red banner appears only while disconnected; speed and surface text change pixels."""
    hud = Hud()
    hud.draw(_state(status=InputStatus.CONNECTED, recording=True))
    assert _share(hud.to_rgb_array(), hud.banner_rect, DISCONNECTED_COLOUR) == 0.0
    hud.draw(_state(status=InputStatus.DISCONNECTED, device="G29"))
    assert _share(hud.to_rgb_array(), hud.banner_rect, DISCONNECTED_COLOUR) > 0.5
    slow = hud.draw(_state(speed_mps=2.0, surface="asphalt", mu=1.0)) and hud.to_rgb_array()
    fast = hud.draw(_state(speed_mps=33.0, surface="asphalt", mu=1.0)) and hud.to_rgb_array()
    icy = hud.draw(_state(speed_mps=33.0, surface="ice", mu=0.1)) and hud.to_rgb_array()
    top, bottom = slice(hud.banner_rect[3], hud.steer_rect[1]), slice(-hud.size[1] // 6, None)
    assert not np.array_equal(slow[top], fast[top])
    assert np.array_equal(fast[top], icy[top]) and not np.array_equal(fast[bottom], icy[bottom])


def test_window_mode_and_event_draining(pg: ModuleType) -> None:
    """With a (dummy) window the screen shows the frame; handle_events sees QUIT, keeps keys."""
    hud = Hud(window=True)
    hud.draw(_state(throttle=0.5))
    screen = pg.surfarray.array3d(pg.display.get_surface()).transpose(1, 0, 2)
    assert np.array_equal(screen, hud.to_rgb_array())
    pg.event.post(pg.event.Event(pg.KEYDOWN, key=pg.K_p, mod=0, unicode="p", scancode=0))
    assert hud.handle_events() is False
    pg.event.post(pg.event.Event(pg.QUIT))
    assert hud.handle_events() is True
    assert pg.event.get(pg.KEYDOWN)  # left for the keyboard source
    hud.close()
    assert pg.display.get_init() and pg.display.get_surface() is None


def test_bad_states_and_sizes(pg: ModuleType) -> None:
    """NaN speed, negative friction and tiny windows are rejected."""
    with pytest.raises(ConfigError, match="speed_mps"):
        HudState(speed_mps=float("nan"))
    with pytest.raises(ConfigError, match="mu"):
        HudState(mu=-0.1)
    with pytest.raises(ConfigError, match="too small"):
        Hud((100, 50))
