"""Top-down pygame renderer shared by ``S3Distilled-v0`` and ``S3BeamNG-v0``.

:class:`TopDownRenderer` draws one car on its track into an ``(H, W, 3)`` uint8 RGB array: the
road between its edges coloured by the base surface, the patches of other surfaces (ice, ...),
the reference line (optionally coloured by target speed), the car as an oriented rectangle with
a heading mark, its trail and a text HUD. Its inputs are generic (a
:class:`~gym_s3.tracks.path.ReferencePath`, a :class:`~gym_s3.tracks.surfaces.SurfaceLayout`,
a pose and a trail), so every simulator can use it. It never opens a window (drawing happens on
an off-screen surface; ``SDL_VIDEODRIVER=dummy`` is set when no driver is configured).

pygame is an optional dependency (``pip install "sim2sim2sim[render]"``), imported on first use.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from gym_s3._optional import require
from gym_s3.errors import ConfigError
from gym_s3.tracks.path import ReferencePath
from gym_s3.tracks.surfaces import SurfaceLayout

#: RGB colour of each surface (road base and patches).
SURFACE_COLOURS: dict[str, tuple[int, int, int]] = {
    "asphalt": (72, 72, 78),
    "asphalt_wet": (48, 56, 78),
    "gravel": (150, 138, 112),
    "dirt": (132, 100, 66),
    "snow": (222, 228, 236),
    "ice": (150, 205, 245),
}
GRASS = (58, 104, 58)
EDGE = (235, 235, 235)
REFERENCE = (250, 215, 40)
CAR = (220, 40, 40)
TRAIL = (255, 140, 0)
HUD_TEXT = (255, 255, 255)
HUD_BACK = (0, 0, 0)


@dataclass(frozen=True)
class _RoadGeometry:
    """World geometry of a path prepared once for drawing.

    Attributes:
        centre: ``(M, 2)`` centreline [m].
        left: ``(M, 2)`` left road edge [m].
        right: ``(M, 2)`` right road edge [m].
        closed: whether the path is a loop.
    """

    centre: np.ndarray
    left: np.ndarray
    right: np.ndarray
    closed: bool


def _road_geometry(path: ReferencePath) -> _RoadGeometry:
    """Road edges of ``path`` as numpy arrays."""
    xy = path.xyz[:, :2].detach().cpu().double().numpy()
    h = path.heading.detach().cpu().double().numpy()
    normal = np.stack([-np.sin(h), np.cos(h)], axis=1)
    wl = path.width_left.detach().cpu().double().numpy()[:, None]
    wr = path.width_right.detach().cpu().double().numpy()[:, None]
    return _RoadGeometry(xy, xy + wl * normal, xy - wr * normal, bool(path.closed))


def _pygame():
    """Import pygame headless (off-screen drawing only)."""
    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
    os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
    return require("pygame", purpose="rendering S3 environments (render_mode='rgb_array')")


class TopDownRenderer:
    """Draw a car on its track from above, as an RGB array.

    Args:
        width: image width [px].
        height: image height [px].
        window_m: side of the square world window shown around the car in follow mode [m].
        follow: centre the view on the car (``True``) or show the whole track (``False``).
        speed_colours: colour the reference line by target speed (blue slow, red fast) when
            ``reference_speed`` is passed to :meth:`render`.
    """

    def __init__(
        self,
        width: int = 480,
        height: int = 480,
        *,
        window_m: float = 80.0,
        follow: bool = True,
        speed_colours: bool = True,
    ) -> None:
        if width < 32 or height < 32:
            raise ConfigError(f"render size must be at least 32 x 32 px, got {width} x {height}")
        if window_m <= 0:
            raise ConfigError(f"window_m must be positive, got {window_m}")
        self.width = int(width)
        self.height = int(height)
        self.window_m = float(window_m)
        self.follow = bool(follow)
        self.speed_colours = speed_colours
        self._roads: dict[int, tuple[ReferencePath, _RoadGeometry]] = {}
        self._font = None

    # ------------------------------------------------------------------ public
    def render(
        self,
        *,
        path: ReferencePath,
        pose: Sequence[float],
        layout: SurfaceLayout | None = None,
        trail: np.ndarray | None = None,
        speed: float | None = None,
        title: str = "",
        step: int | None = None,
        surface: str | None = None,
        reference_speed: np.ndarray | None = None,
        car_size: tuple[float, float] = (4.6, 1.85),
    ) -> np.ndarray:
        """Draw one frame.

        Args:
            path: the reference path (its road edges are drawn from its widths).
            pose: ``(x [m], y [m], yaw [rad])`` of the car.
            layout: surface layout (base colour and patches); plain asphalt when ``None``.
            trail: ``(T, 2)`` past positions of the car [m].
            speed: speed shown in the HUD [m/s].
            title: first HUD line (e.g. ``"S3Distilled-v0 / bicycle"``).
            step: step counter shown in the HUD.
            surface: name of the surface under the car shown in the HUD.
            reference_speed: ``(M,)`` target speed at each path sample [m/s] (colours the line).
            car_size: car length and width [m].

        Returns:
            ``(height, width, 3)`` uint8 RGB image (a fresh array).
        """
        pg = _pygame()
        x, y, yaw = (float(v) for v in pose)
        road = self._road(path)
        centre, scale = self._view(road, x, y)
        canvas = pg.Surface((self.width, self.height))
        canvas.fill(GRASS)
        lay = layout or SurfaceLayout()
        self._draw_road(pg, canvas, road, centre, scale, SURFACE_COLOURS.get(lay.base, (80,) * 3))
        self._draw_patches(pg, canvas, lay, centre, scale)
        self._draw_reference(pg, canvas, road, centre, scale, reference_speed)
        if trail is not None and len(trail) > 1:
            pts = self._to_screen(np.asarray(trail, dtype=np.float64)[:, :2], centre, scale)
            pg.draw.lines(canvas, TRAIL, False, pts.tolist(), 2)
        self._draw_car(pg, canvas, (x, y, yaw), car_size, centre, scale)
        lines = [title] if title else []
        if "approximation" in path.labels:  # never shown as the real circuit
            lines.append(f"track: {path.name} (approximation)")
        if step is not None:
            lines.append(f"step {step}")
        if speed is not None:
            lines.append(f"v = {speed:5.1f} m/s ({speed * 3.6:5.1f} km/h)")
        if surface is not None:
            lines.append(f"surface: {surface}")
        self._draw_hud(pg, canvas, lines)
        return np.ascontiguousarray(pg.surfarray.array3d(canvas).transpose(1, 0, 2))

    # ------------------------------------------------------------------ geometry
    def _road(self, path: ReferencePath) -> _RoadGeometry:
        """Cached road geometry of ``path`` (keyed by identity; the path is kept alive)."""
        entry = self._roads.get(id(path))
        if entry is None or entry[0] is not path:
            if len(self._roads) > 64:
                self._roads.clear()
            entry = (path, _road_geometry(path))
            self._roads[id(path)] = entry
        return entry[1]

    def _view(self, road: _RoadGeometry, x: float, y: float) -> tuple[np.ndarray, float]:
        """World point at the image centre and the scale [px/m]."""
        if self.follow:
            return np.array([x, y]), min(self.width, self.height) / self.window_m
        pts = np.concatenate([road.left, road.right])
        lo, hi = pts.min(axis=0), pts.max(axis=0)
        span = np.maximum(hi - lo, 1.0) * 1.05
        return 0.5 * (lo + hi), float(min(self.width / span[0], self.height / span[1]))

    def _to_screen(self, pts: np.ndarray, centre: np.ndarray, scale: float) -> np.ndarray:
        """World ``(..., 2)`` [m] to integer screen ``(..., 2)`` [px] (y up on screen)."""
        sx = self.width / 2 + (pts[..., 0] - centre[0]) * scale
        sy = self.height / 2 - (pts[..., 1] - centre[1]) * scale
        return np.stack([sx, sy], axis=-1).round().astype(np.int64)

    def _visible(self, pts: np.ndarray, centre: np.ndarray, scale: float) -> np.ndarray:
        """Bool mask of world points within the view (with a margin)."""
        half = 0.5 * max(self.width, self.height) / scale + 15.0
        return (np.abs(pts - centre) <= half).all(axis=-1)

    # ------------------------------------------------------------------ drawing
    def _segments(self, road: _RoadGeometry, centre: np.ndarray, scale: float) -> np.ndarray:
        """Indices ``i`` of the visible segments from sample ``i`` to ``i + 1``."""
        m = len(road.centre)
        vis = self._visible(road.centre, centre, scale)
        nxt = np.roll(vis, -1)
        seg = vis | nxt
        if not road.closed:
            seg[-1] = False
        return np.nonzero(seg)[0] if m > 1 else np.zeros(0, dtype=np.int64)

    def _draw_road(self, pg, canvas, road, centre, scale, colour) -> None:
        """Road surface quads and edge lines."""
        idx = self._segments(road, centre, scale)
        if len(idx) == 0:
            return
        nxt = (idx + 1) % len(road.centre)
        left = self._to_screen(road.left, centre, scale)
        right = self._to_screen(road.right, centre, scale)
        quads = np.stack([left[idx], left[nxt], right[nxt], right[idx]], axis=1)
        for quad in quads.tolist():
            pg.draw.polygon(canvas, colour, quad)
        for edge in (left, right):
            for a, b in zip(edge[idx].tolist(), edge[nxt].tolist(), strict=True):
                pg.draw.line(canvas, EDGE, a, b, 2)

    def _draw_patches(self, pg, canvas, layout: SurfaceLayout, centre, scale) -> None:
        """Patch rectangles coloured by surface."""
        reach = 0.75 * max(self.width, self.height) / scale
        for p in layout.patches:
            if math.hypot(p.cx - centre[0], p.cy - centre[1]) > reach + p.length + p.width:
                continue
            c, s = math.cos(p.yaw), math.sin(p.yaw)
            hl, hw = p.length / 2, p.width / 2
            corners = np.array(
                [[p.cx + a * hl * c - b * hw * s, p.cy + a * hl * s + b * hw * c]
                 for a, b in ((1, 1), (1, -1), (-1, -1), (-1, 1))]
            )  # fmt: skip
            colour = SURFACE_COLOURS.get(p.surface, (255, 0, 255))
            pg.draw.polygon(canvas, colour, self._to_screen(corners, centre, scale).tolist())

    def _draw_reference(self, pg, canvas, road, centre, scale, speed) -> None:
        """The reference line, optionally coloured by target speed."""
        idx = self._segments(road, centre, scale)
        if len(idx) == 0:
            return
        nxt = (idx + 1) % len(road.centre)
        pts = self._to_screen(road.centre, centre, scale)
        colours = [REFERENCE] * len(idx)
        if speed is not None and self.speed_colours:
            v = np.asarray(speed, dtype=np.float64)[idx]
            t = np.clip((v - v.min()) / max(float(np.ptp(v)), 1e-6), 0.0, 1.0)
            colours = [(int(255 * a), 60, int(255 * (1 - a))) for a in t.tolist()]
        for a, b, col in zip(pts[idx].tolist(), pts[nxt].tolist(), colours, strict=True):
            pg.draw.line(canvas, col, a, b, 1)

    def _draw_car(self, pg, canvas, pose, size, centre, scale) -> None:
        """The car as an oriented rectangle with a white heading mark at the front."""
        x, y, yaw = pose
        length, width = size
        c, s = math.cos(yaw), math.sin(yaw)

        def body(a: float, b: float) -> list[float]:
            return [x + a * c - b * s, y + a * s + b * c]

        # Never smaller than a few pixels, so the car stays visible on a whole-track view.
        grow = max(1.0, 10.0 / (length * scale))
        hl, hw = grow * length / 2, grow * width / 2
        length = 2 * hl
        rect = np.array([body(hl, hw), body(hl, -hw), body(-hl, -hw), body(-hl, hw)])
        pg.draw.polygon(canvas, CAR, self._to_screen(rect, centre, scale).tolist())
        nose = np.array([body(hl, 0.0), body(hl - 0.4 * length, 0.0)])
        a, b = self._to_screen(nose, centre, scale).tolist()
        pg.draw.line(canvas, (255, 255, 255), a, b, 2)

    def _draw_hud(self, pg, canvas, lines: list[str]) -> None:
        """Text lines in the top-left corner on a dark band."""
        if not lines:
            return
        if self._font is None:
            pg.font.init()
            self._font = pg.font.Font(None, max(14, self.height // 26))
        y = 4
        for line in lines:
            text = self._font.render(line, True, HUD_TEXT, HUD_BACK)
            canvas.blit(text, (4, y))
            y += text.get_height() + 2


def tile_frames(frames: Sequence[np.ndarray], columns: int | None = None) -> np.ndarray:
    """Tile equally sized ``(H, W, 3)`` frames into one grid image (row-major)."""
    if not frames:
        raise ConfigError("tile_frames needs at least one frame")
    n = len(frames)
    cols = columns or math.ceil(math.sqrt(n))
    rows = math.ceil(n / cols)
    h, w, c = frames[0].shape
    out = np.zeros((rows * h, cols * w, c), dtype=np.uint8)
    for i, frame in enumerate(frames):
        r, q = divmod(i, cols)
        out[r * h : (r + 1) * h, q * w : (q + 1) * w] = frame
    return out
