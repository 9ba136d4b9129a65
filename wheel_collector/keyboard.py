"""Keyboard driving: digital keys turned into smooth steering and pedal commands.

Key map (both layouts work at the same time):

============================  =========================
key                           effect
============================  =========================
Left / A, Right / D           steer left / right
Up / W                        throttle
Down / S                      brake
P                             action ``"pause"``
R                             action ``"reset"``
Escape                        action ``"quit"``
============================  =========================

A held key moves its control towards the end stop at a limited rate (and releasing returns it at
another rate), so a tap gives a small steering input and holding gives full lock after
``1 / steer_rate_per_s`` seconds. Rates use the elapsed wall time between polls (capped at
``max_dt_s``), so they do not depend on the poll frequency.

Key state comes from ``KEYDOWN``/``KEYUP`` events (only those are taken from pygame's queue), so
the source works with a HUD window and with events posted in tests.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gym_s3.errors import ConfigError
from wheel_collector._pygame import import_pygame, init_events
from wheel_collector.commands import SAFE_COMMAND, DriverCommand, InputReading, InputStatus

__all__ = ["KeyboardConfig", "KeyboardInput"]

#: control -> pygame key names (``pygame.key.key_code`` spelling)
DEFAULT_KEYS: dict[str, tuple[str, ...]] = {
    "left": ("left", "a"),
    "right": ("right", "d"),
    "throttle": ("up", "w"),
    "brake": ("down", "s"),
    "pause": ("p",),
    "reset": ("r",),
    "quit": ("escape",),
}
_ACTIONS = ("pause", "reset", "quit")


@dataclass(frozen=True)
class KeyboardConfig:
    """Ramp rates of the keyboard source.

    Attributes:
        steer_rate_per_s: steering change per second while a steer key is held [1/s].
        steer_return_rate_per_s: steering change per second back to centre (no key, or the
            opposite key while still on the other side) [1/s].
        pedal_rise_per_s: pedal travel per second while its key is held [1/s].
        pedal_fall_per_s: pedal travel per second after its key is released [1/s].
        max_dt_s: largest time step used for one poll [s] (a stalled loop must not jump).
    """

    steer_rate_per_s: float = 2.0
    steer_return_rate_per_s: float = 4.0
    pedal_rise_per_s: float = 3.0
    pedal_fall_per_s: float = 6.0
    max_dt_s: float = 0.1

    def __post_init__(self) -> None:
        for name, value in vars(self).items():
            if not value > 0 or value == float("inf"):
                raise ConfigError(f"KeyboardConfig.{name}={value} must be a finite value > 0")


def _approach(value: float, target: float, rate: float, dt: float) -> float:
    """Move ``value`` towards ``target`` by at most ``rate * dt``."""
    step = rate * dt
    if value < target:
        return min(value + step, target)
    return max(value - step, target)


class KeyboardInput:
    """An :class:`~wheel_collector.commands.InputSource` driven by the keyboard.

    Args:
        config: ramp rates.
        keys: control -> key names, overriding :data:`DEFAULT_KEYS` entries.
        clock: monotonic time source [s] (``time.monotonic``; tests may pass their own).
    """

    def __init__(
        self,
        *,
        config: KeyboardConfig | None = None,
        keys: dict[str, tuple[str, ...]] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._pg = import_pygame("keyboard input")
        init_events(self._pg)
        self.config = config or KeyboardConfig()
        mapping = {**DEFAULT_KEYS, **(keys or {})}
        unknown = set(mapping) - set(DEFAULT_KEYS)
        if unknown:
            raise ConfigError(
                f"unknown keyboard controls {sorted(unknown)}; use {list(DEFAULT_KEYS)}"
            )
        self._codes: dict[int, str] = {}
        for control, names in mapping.items():
            for name in names:
                try:
                    self._codes[self._pg.key.key_code(name)] = control
                except ValueError as exc:
                    raise ConfigError(f"unknown key name {name!r} for {control!r}") from exc
        self._clock = clock
        self._last_time: float | None = None
        self._held: set[str] = set()
        self._actions: list[str] = []
        self._steer = 0.0
        self._throttle = 0.0
        self._brake = 0.0
        self._closed = False

    def poll(self) -> InputReading:
        """Apply pending key events, advance the ramps and return the command (never blocks)."""
        if self._closed:
            return InputReading(SAFE_COMMAND, InputStatus.NO_DEVICE, device_name="keyboard")
        for event in self._pg.event.get([self._pg.KEYDOWN, self._pg.KEYUP]):
            self._handle(event)
        now = self._clock()
        dt = (
            0.0
            if self._last_time is None
            else min(max(now - self._last_time, 0.0), self.config.max_dt_s)
        )
        self._last_time = now
        self._advance(dt)
        reading = InputReading(
            command=DriverCommand.clamped(
                self._steer, self._throttle, self._brake, source="keyboard"
            ),
            status=InputStatus.CONNECTED,
            device_name="keyboard",
            actions=tuple(self._actions),
        )
        self._actions.clear()
        return reading

    def close(self) -> None:
        """Stop reading the keyboard; later polls report ``NO_DEVICE``."""
        self._closed = True
        self._held.clear()

    def _handle(self, event: Any) -> None:
        """Track held controls and collect action presses from one key event."""
        control = self._codes.get(event.key)
        if control is None:
            return
        if event.type == self._pg.KEYDOWN:
            if control in _ACTIONS:
                self._actions.append(control)
            else:
                self._held.add(control)
        else:
            self._held.discard(control)

    def _advance(self, dt: float) -> None:
        """Move steering and pedals towards the targets of the held keys."""
        cfg = self.config
        target = float("right" in self._held) - float("left" in self._held)
        steer, remaining = self._steer, dt
        # heading back towards (or through) the centre uses the faster return rate
        if steer != 0.0 and (target == 0.0 or target * steer < 0.0):
            step = min(abs(steer), cfg.steer_return_rate_per_s * remaining)
            steer -= math.copysign(step, steer)
            remaining -= step / cfg.steer_return_rate_per_s
        if target != 0.0 and remaining > 0.0:
            steer = _approach(steer, target, cfg.steer_rate_per_s, remaining)
        self._steer = steer
        for name in ("throttle", "brake"):
            value = getattr(self, f"_{name}")
            held = name in self._held
            rate = cfg.pedal_rise_per_s if held else cfg.pedal_fall_per_s
            setattr(self, f"_{name}", _approach(value, float(held), rate, dt))
