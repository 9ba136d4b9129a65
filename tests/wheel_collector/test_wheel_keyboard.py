"""Keyboard driving from real pygame key events, with rate-limited ramps."""

from __future__ import annotations

from types import ModuleType

import pytest

from gym_s3.errors import ConfigError
from wheel_collector.commands import SAFE_COMMAND, InputReading, InputStatus
from wheel_collector.keyboard import KeyboardConfig, KeyboardInput

pytestmark = pytest.mark.timeout(30)


class Clock:
    """A settable time source [s]."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        """Return the current time [s]."""
        return self.now


def _key(pg: ModuleType, kind: int, name: str) -> None:
    """Post a real pygame key event for the key called ``name``."""
    pg.event.post(pg.event.Event(kind, key=pg.key.key_code(name), mod=0, unicode="", scancode=0))


def _poll_at(keyboard: KeyboardInput, clock: Clock, t: float) -> InputReading:
    """Poll with the clock at ``t``."""
    clock.now = t
    return keyboard.poll()


def test_steering_ramps_at_the_configured_rate(pg: ModuleType) -> None:
    """Holding Right moves steer +0.2 per 0.1 s (2/s) up to +1; release returns at 4/s."""
    clock = Clock()
    keyboard = KeyboardInput(clock=clock)
    assert _poll_at(keyboard, clock, 0.0).command.steer == 0.0
    _key(pg, pg.KEYDOWN, "right")
    steers = [_poll_at(keyboard, clock, 0.1 * k).command.steer for k in range(1, 7)]
    assert steers == pytest.approx([0.2, 0.4, 0.6, 0.8, 1.0, 1.0])
    _key(pg, pg.KEYUP, "right")
    assert _poll_at(keyboard, clock, 0.7).command.steer == pytest.approx(0.6)
    assert _poll_at(keyboard, clock, 0.8).command.steer == pytest.approx(0.2)
    assert _poll_at(keyboard, clock, 0.9).command.steer == 0.0


def test_counter_steer_returns_through_centre_then_ramps(pg: ModuleType) -> None:
    """From +0.2, pressing Left spends 0.05 s returning (4/s), then ramps left at 2/s."""
    clock = Clock()
    keyboard = KeyboardInput(clock=clock)
    _poll_at(keyboard, clock, 0.0)
    _key(pg, pg.KEYDOWN, "d")
    assert _poll_at(keyboard, clock, 0.1).command.steer == pytest.approx(0.2)
    _key(pg, pg.KEYUP, "d")
    _key(pg, pg.KEYDOWN, "a")
    assert _poll_at(keyboard, clock, 0.2).command.steer == pytest.approx(-0.1)
    assert _poll_at(keyboard, clock, 0.3).command.steer == pytest.approx(-0.3)


def test_pedals_ramp_and_map_to_accel(pg: ModuleType) -> None:
    """Up rises at 3/s, falls at 6/s; Down brakes; the action's accel is throttle - brake."""
    clock = Clock()
    keyboard = KeyboardInput(clock=clock)
    _poll_at(keyboard, clock, 0.0)
    _key(pg, pg.KEYDOWN, "up")
    assert _poll_at(keyboard, clock, 0.1).command.throttle == pytest.approx(0.3)
    reading = _poll_at(keyboard, clock, 0.5)  # capped at max_dt 0.1 s per poll
    assert reading.command.throttle == pytest.approx(0.6)
    assert reading.status is InputStatus.CONNECTED and reading.command.source == "keyboard"
    _key(pg, pg.KEYUP, "up")
    _key(pg, pg.KEYDOWN, "s")
    command = _poll_at(keyboard, clock, 0.6).command
    assert command.throttle == pytest.approx(0.0) and command.brake == pytest.approx(0.3)
    assert command.to_action()[1] == pytest.approx(-0.3)


def test_action_keys_and_other_events_are_left_alone(pg: ModuleType) -> None:
    """P, R, Escape give pause/reset/quit once; non-key events stay in pygame's queue."""
    keyboard = KeyboardInput()
    for name in ("p", "r", "escape"):
        _key(pg, pg.KEYDOWN, name)
    pg.event.post(pg.event.Event(pg.USEREVENT, note="for someone else"))
    assert keyboard.poll().actions == ("pause", "reset", "quit")
    assert keyboard.poll().actions == ()
    assert pg.event.peek(pg.USEREVENT)
    keyboard.close()
    closed = keyboard.poll()
    assert closed.status is InputStatus.NO_DEVICE and closed.command == SAFE_COMMAND


def test_custom_keys_and_bad_configuration(pg: ModuleType) -> None:
    """Keys can be remapped; unknown controls, key names and rates raise ConfigError."""
    clock = Clock()
    keyboard = KeyboardInput(keys={"throttle": ("space",)}, clock=clock)
    _poll_at(keyboard, clock, 0.0)
    _key(pg, pg.KEYDOWN, "space")
    assert _poll_at(keyboard, clock, 0.1).command.throttle == pytest.approx(0.3)
    with pytest.raises(ConfigError, match="unknown keyboard controls"):
        KeyboardInput(keys={"horn": ("h",)})
    with pytest.raises(ConfigError, match="unknown key name"):
        KeyboardInput(keys={"brake": ("not-a-key",)})
    with pytest.raises(ConfigError, match="steer_rate_per_s"):
        KeyboardConfig(steer_rate_per_s=0.0)
