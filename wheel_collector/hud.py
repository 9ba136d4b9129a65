"""The collector's heads-up display: speed, steering, pedals, surface under the car, state.

:class:`Hud` draws onto an off-screen pygame surface (and, with ``window=True``, shows it in a
window). It needs no display: with ``SDL_VIDEODRIVER=dummy`` it renders the same pixels, which
:meth:`Hud.to_rgb_array` returns for tests and video capture.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gym_s3.errors import ConfigError
from wheel_collector._pygame import import_pygame, init_events, joystick_event_types
from wheel_collector.commands import DriverCommand, InputStatus

__all__ = [
    "BRAKE_COLOUR",
    "DISCONNECTED_COLOUR",
    "STEER_COLOUR",
    "THROTTLE_COLOUR",
    "Hud",
    "HudState",
]

BACKGROUND_COLOUR = (20, 22, 26)
TRACK_COLOUR = (55, 58, 66)
TEXT_COLOUR = (235, 235, 235)
THROTTLE_COLOUR = (40, 200, 80)
BRAKE_COLOUR = (225, 50, 50)
STEER_COLOUR = (70, 140, 255)
RECORDING_COLOUR = (235, 40, 40)
PAUSED_COLOUR = (240, 180, 40)
DISCONNECTED_COLOUR = (170, 20, 20)
_MPS_TO_KMH = 3.6


@dataclass(frozen=True)
class HudState:
    """Everything the HUD shows for one frame.

    Attributes:
        speed_mps: vehicle speed [m/s].
        command: the command being applied.
        surface: name of the surface under the car (e.g. ``"asphalt"``, ``"ice"``).
        mu: peak friction coefficient under the car [-], ``None`` when unknown.
        recording: True while samples are being recorded.
        status: input-device status.
        device: input-device name.
        rotation_deg: lock-to-lock wheel rotation [deg], to show the wheel angle.
        message: an extra line, e.g. a hint what to do.
    """

    speed_mps: float = 0.0
    command: DriverCommand = field(default_factory=lambda: DriverCommand(source="hud"))
    surface: str = "unknown"
    mu: float | None = None
    recording: bool = False
    status: InputStatus = InputStatus.CONNECTED
    device: str = ""
    rotation_deg: float = 900.0
    message: str = ""

    def __post_init__(self) -> None:
        if not math.isfinite(self.speed_mps):
            raise ConfigError(f"HudState.speed_mps={self.speed_mps} must be finite")
        if self.mu is not None and not (math.isfinite(self.mu) and self.mu >= 0):
            raise ConfigError(f"HudState.mu={self.mu} must be a finite value >= 0 or None")
        if not self.rotation_deg > 0:
            raise ConfigError(f"HudState.rotation_deg={self.rotation_deg} must be > 0")


class Hud:
    """Heads-up display for driving-data collection.

    Args:
        size: ``(width, height)`` [px], at least 320 x 180.
        window: also show the HUD in a pygame window (needs a display unless
            ``SDL_VIDEODRIVER=dummy``).
        title: window caption.

    Attributes:
        steer_rect: ``(x, y, w, h)`` [px] of the steering bar (centre = straight ahead).
        throttle_rect: ``(x, y, w, h)`` [px] of the throttle bar (fills from the bottom).
        brake_rect: ``(x, y, w, h)`` [px] of the brake bar (fills from the bottom).
        banner_rect: ``(x, y, w, h)`` [px] of the top status banner.
    """

    def __init__(
        self,
        size: tuple[int, int] = (480, 270),
        *,
        window: bool = False,
        title: str = "sim2sim2sim collector",
    ) -> None:
        width, height = size
        if width < 320 or height < 180:
            raise ConfigError(f"Hud size {size} is too small; use at least (320, 180)")
        self._pg = pg = import_pygame("the collector HUD")
        init_events(pg)
        if not pg.font.get_init():
            pg.font.init()
        self.size = (int(width), int(height))
        self._screen: Any = None
        if window:
            self._screen = pg.display.set_mode(self.size)
            pg.display.set_caption(title)
        self._canvas = pg.Surface(self.size)
        font_sizes = {"big": height // 4, "mid": height // 10, "small": height // 14}
        self._fonts = {key: pg.font.Font(None, px) for key, px in font_sizes.items()}
        margin = max(width // 40, 8)
        bar_w, banner_h = max(width // 18, 16), height // 9
        bars_top, bars_h = banner_h + margin, height - banner_h - 3 * margin - height // 10
        self.banner_rect = (0, 0, width, banner_h)
        self.brake_rect = (width - margin - bar_w, bars_top, bar_w, bars_h)
        self.throttle_rect = (self.brake_rect[0] - margin - bar_w, bars_top, bar_w, bars_h)
        steer_w = self.throttle_rect[0] - 3 * margin
        self.steer_rect = (margin, int(height * 0.62), steer_w, max(height // 16, 10))
        self._margin = margin

    # -- drawing ---------------------------------------------------------------------------------

    def draw(self, state: HudState) -> Any:
        """Render ``state`` and return the ``pygame.Surface`` (also shown in the window)."""
        pg, canvas, margin = self._pg, self._canvas, self._margin
        canvas.fill(BACKGROUND_COLOUR)
        self._draw_banner(state)
        speed_kmh = abs(state.speed_mps) * _MPS_TO_KMH
        big = self._fonts["big"].render(f"{speed_kmh:5.1f}", True, TEXT_COLOUR)
        canvas.blit(big, (margin, self.banner_rect[3] + margin))
        unit = self._fonts["mid"].render("km/h", True, TEXT_COLOUR)
        canvas.blit(
            unit,
            (
                margin + big.get_width() + margin // 2,
                self.banner_rect[3] + margin + big.get_height() - unit.get_height(),
            ),
        )
        self._draw_steering(state)
        for rect, value, colour, label in (
            (self.throttle_rect, state.command.throttle, THROTTLE_COLOUR, "T"),
            (self.brake_rect, state.command.brake, BRAKE_COLOUR, "B"),
        ):
            x, y, w, h = rect
            pg.draw.rect(canvas, TRACK_COLOUR, rect)
            filled = int(round(h * value))
            if filled > 0:
                pg.draw.rect(canvas, colour, (x, y + h - filled, w, filled))
            text = self._fonts["small"].render(label, True, TEXT_COLOUR)
            canvas.blit(text, (x + (w - text.get_width()) // 2, y + h + 2))
        mu = "" if state.mu is None else f"   \u03bc {state.mu:.2f}"
        surface = self._fonts["mid"].render(f"surface: {state.surface}{mu}", True, TEXT_COLOUR)
        canvas.blit(surface, (margin, self.size[1] - margin - surface.get_height()))
        if self._screen is not None:
            self._screen.blit(canvas, (0, 0))
            pg.display.flip()
        return canvas

    def _draw_banner(self, state: HudState) -> None:
        """Top strip: recording/paused badge, device name, or a red disconnected banner."""
        pg, canvas, margin = self._pg, self._canvas, self._margin
        font = self._fonts["small"]
        x, y, w, h = self.banner_rect
        if state.status is not InputStatus.CONNECTED:
            pg.draw.rect(canvas, DISCONNECTED_COLOUR, self.banner_rect)
            what = "DISCONNECTED" if state.status is InputStatus.DISCONNECTED else "NO DEVICE"
            text = state.message or f"{what}: plug it back in to resume  ({state.device})"
            label = font.render(text, True, TEXT_COLOUR)
            canvas.blit(label, (margin, y + (h - label.get_height()) // 2))
            return
        colour, badge = (RECORDING_COLOUR, "REC") if state.recording else (PAUSED_COLOUR, "PAUSED")
        radius = h // 4
        pg.draw.circle(canvas, colour, (margin + radius, y + h // 2), radius)
        label = font.render(f"{badge}  {state.device}  {state.message}", True, colour)
        canvas.blit(label, (margin + 3 * radius, y + (h - label.get_height()) // 2))

    def _draw_steering(self, state: HudState) -> None:
        """Horizontal bar filled from the centre towards the steering direction (+ = right)."""
        pg, canvas = self._pg, self._canvas
        x, y, w, h = self.steer_rect
        pg.draw.rect(canvas, TRACK_COLOUR, self.steer_rect)
        centre = x + w // 2
        end = centre + int(round(state.command.steer * (w // 2)))
        if end != centre:
            pg.draw.rect(canvas, STEER_COLOUR, (min(centre, end), y, abs(end - centre), h))
        pg.draw.line(canvas, TEXT_COLOUR, (centre, y - 3), (centre, y + h + 2), 1)
        angle = state.command.steer * state.rotation_deg / 2
        text = self._fonts["small"].render(
            f"steer {state.command.steer:+.2f} ({angle:+.0f}\u00b0)", True, TEXT_COLOUR
        )
        canvas.blit(text, (x, y + h + 4))

    # -- output and window -----------------------------------------------------------------------

    def to_rgb_array(self) -> np.ndarray:
        """Return the last drawn frame as ``(H, W, 3)`` uint8 RGB."""
        return np.ascontiguousarray(self._pg.surfarray.array3d(self._canvas).transpose(1, 0, 2))

    def handle_events(self) -> bool:
        """Drain window events (leaving joystick and key events); True if quit was requested."""
        pg = self._pg
        keep = [*joystick_event_types(pg), pg.KEYDOWN, pg.KEYUP]
        events = pg.event.get(exclude=keep)
        return any(e.type in (pg.QUIT, pg.WINDOWCLOSE) for e in events)

    def close(self) -> None:
        """Close the window (if any); the off-screen canvas stays readable.

        The display subsystem is restarted without a window, because pygame's event queue (used
        by the input sources) needs it.
        """
        if self._screen is not None:
            self._pg.display.quit()
            self._pg.display.init()
            self._screen = None
