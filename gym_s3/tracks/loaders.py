"""Load user track geometry: TUMFTM-style centreline CSVs and left/right boundary polylines.

No licensed track data ships with the package; a user who has a track's geometry loads it here.

* :func:`load_tumftm_csv`: the format of the TUMFTM racetrack database: one point per line,
  ``x_m, y_m, w_tr_right_m, w_tr_left_m`` (centreline [m] and the distances to the right and left
  track edges [m]), a closed loop without a repeated end point, header ``# x_m,y_m,...``. A fifth
  column ``z_m`` (elevation [m]) is accepted when the header names it (or as the third column of a
  header-less five-column file).
* :func:`load_boundaries`: two files with the left and right edges as ``x, y[, z]`` lines (left
  and right as seen in the driving direction); the centreline is the midline between them.

Files are validated line by line. A malformed file raises :class:`~gym_s3.errors.TrackFormatError`
naming the file, the line and the fix: non-numeric or NaN cells, a wrong number of columns, too
few points, a point repeated on consecutive lines, a self-crossing polyline, negative widths.
Geometry is then smoothed and resampled by :mod:`gym_s3.tracks.resample`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gym_s3.errors import ConfigError, TrackFormatError
from gym_s3.safe_io import MAX_TEXT_BYTES, read_bounded
from gym_s3.tracks.analysis import detect_corners
from gym_s3.tracks.geometry import polyline_crossings
from gym_s3.tracks.path import ReferencePath
from gym_s3.tracks.resample import (
    Resampled,
    interp_along,
    nearest_points,
    point_segment_distance,
    smooth_centreline,
)

TUMFTM_COLUMNS = ("x_m", "y_m", "w_tr_right_m", "w_tr_left_m")
TUMFTM_Z_COLUMNS = ("x_m", "y_m", "z_m", "w_tr_right_m", "w_tr_left_m")
MIN_POINTS = 4
DUPLICATE_TOL_M = 1e-3


@dataclass(frozen=True)
class Table:
    """Numeric rows of a CSV file with the line each row came from.

    Attributes:
        file: the file name (for messages).
        columns: column names.
        values: ``(n, k)`` float64 values.
        lines: ``(n,)`` 1-based line number of every row.
    """

    file: str
    columns: tuple[str, ...]
    values: np.ndarray
    lines: np.ndarray

    def column(self, name: str) -> np.ndarray:
        """The values of one column."""
        return self.values[:, self.columns.index(name)]


def _fail(file: str, line: int | None, problem: str, fix: str) -> TrackFormatError:
    """Build the error message: where, what, and how to fix it."""
    where = f"{file}, line {line}" if line is not None else file
    return TrackFormatError(f"{where}: {problem}. Fix: {fix}")


def _split(text: str) -> list[str]:
    """Cells of a CSV line (commas, or whitespace when the line has no comma)."""
    return [c.strip() for c in text.split(",")] if "," in text else text.split()


def read_table(path: str | Path, defaults: dict[int, tuple[str, ...]]) -> Table:
    """Read a numeric CSV with an optional header line (``# a,b,c`` or ``a,b,c``).

    Args:
        path: the file.
        defaults: column names by column count for files without a header.

    Raises:
        TrackFormatError: on unreadable files, unknown layouts, bad cells or wrong column counts.
    """
    file = str(path)
    try:
        raw = read_bounded(path, limit=MAX_TEXT_BYTES, what="track CSV", error=TrackFormatError)
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise _fail(file, None, f"cannot read the file ({exc})", "check the path") from exc
    columns: tuple[str, ...] | None = None
    rows, lines = [], []
    for number, raw in enumerate(text.splitlines(), start=1):
        body = raw.strip()
        if not body:
            continue
        is_comment = body.startswith("#")
        cells = _split(body.lstrip("#").strip())
        if columns is None and not rows and _is_header(cells, defaults):
            columns = tuple(c.lower() for c in cells)
            continue
        if is_comment:
            continue
        if columns is None:
            if len(cells) not in defaults:
                counts = " or ".join(str(k) for k in sorted(defaults))
                raise _fail(
                    file,
                    number,
                    f"found {len(cells)} columns and no header",
                    f"give {counts} columns or a header line naming them",
                )
            columns = defaults[len(cells)]
        if len(cells) != len(columns):
            raise _fail(
                file,
                number,
                f"found {len(cells)} columns, expected {len(columns)} ({', '.join(columns)})",
                "make every line have the same columns",
            )
        rows.append(
            [_number(file, number, cell, name) for cell, name in zip(cells, columns, strict=True)]
        )
        lines.append(number)
    if columns is None or not rows:
        raise _fail(file, None, "the file has no data lines", "add one point per line")
    values = np.array(rows, dtype=np.float64).reshape(len(rows), len(columns))
    return Table(file, columns, values, np.array(lines, dtype=np.int64))


def _is_header(cells: list[str], defaults: dict[int, tuple[str, ...]]) -> bool:
    """Whether a line names the columns: all cells are names and one is a known column name.

    Free-text comments (``# generated by ...``) are not headers.
    """
    known = {name for names in defaults.values() for name in names}
    names = [c.lower() for c in cells]
    if not all(c and (c[0].isalpha() or c[0] == "_") for c in names):
        return False
    return any(c in known or c.removesuffix("_m") in known for c in names)


def _number(file: str, line: int, cell: str, column: str) -> float:
    """Parse one finite number or raise with the line and column."""
    try:
        value = float(cell)
    except ValueError:
        raise _fail(
            file,
            line,
            f"column '{column}' holds {cell!r}, which is not a number",
            "write plain decimal numbers (no units, no empty cells)",
        ) from None
    if not math.isfinite(value):
        raise _fail(
            file,
            line,
            f"column '{column}' is {cell!r} (not finite)",
            "replace NaN/inf by a measured value or delete the line",
        )
    return value


def _check_sampling(ds: float, smoothing_m: float) -> None:
    """Reject a non-positive spacing or a negative smoothing width."""
    if not ds > 0 or not smoothing_m >= 0:
        raise ConfigError(f"need ds > 0 and smoothing_m >= 0 [m], got {ds} and {smoothing_m}")


def _drop_closing_repeat(table: Table, xy: np.ndarray) -> Table:
    """Drop a last point that repeats the first (a loop written with its start twice)."""
    if len(xy) > 1 and np.hypot(*(xy[-1] - xy[0])) < DUPLICATE_TOL_M:
        return Table(table.file, table.columns, table.values[:-1], table.lines[:-1])
    return table


def validate_polyline(table: Table, xy: np.ndarray, *, closed: bool) -> None:
    """Check point count, consecutive duplicates and self-crossings of a polyline.

    Raises:
        TrackFormatError: naming the file, the offending line(s) and the fix.
    """
    if len(xy) < MIN_POINTS:
        where = f"lines {table.lines[0]}-{table.lines[-1]} hold" if len(xy) else "the file holds"
        raise _fail(
            table.file,
            None,
            f"{where} only {len(xy)} points; a track needs at least {MIN_POINTS}",
            "give the whole track, one point per line",
        )
    step = np.hypot(*np.diff(xy, axis=0).T)
    dup = np.nonzero(step < DUPLICATE_TOL_M)[0]
    if dup.size:
        i = int(dup[0])
        raise _fail(
            table.file,
            int(table.lines[i + 1]),
            f"repeats the point of line {table.lines[i]}",
            "delete one of the two lines",
        )
    crossings = polyline_crossings(xy[:, 0], xy[:, 1], closed=closed)
    if crossings:
        i, j = crossings[0]
        n = len(xy)
        a, b = table.lines[i], table.lines[(i + 1) % n]
        c, d = table.lines[j], table.lines[(j + 1) % n]
        raise _fail(
            table.file,
            int(a),
            f"the polyline crosses itself: the segment of lines "
            f"{a}-{b} crosses the segment of lines {c}-{d}",
            "check the point order and remove stray points (or pass closed=False for an open path)",
        )


def load_tumftm_csv(
    path: str | Path,
    *,
    ds: float = 1.0,
    name: str | None = None,
    closed: bool = True,
    smoothing_m: float = 1.0,
) -> ReferencePath:
    """Load a TUMFTM racetrack-database centreline file.

    Args:
        path: CSV file with ``x_m, y_m, w_tr_right_m, w_tr_left_m`` (optionally ``z_m``).
        ds: sample spacing of the returned path [m].
        name: path name (defaults to the file stem).
        closed: whether the points form a loop (the database's tracks do).
        smoothing_m: Gaussian smoothing of the centreline along the path [m].

    Returns:
        The :class:`ReferencePath`, with corners detected from its curvature as features.

    Raises:
        TrackFormatError: if the file is malformed (names the file, the line and the fix).
    """
    _check_sampling(ds, smoothing_m)
    table = read_table(path, {4: TUMFTM_COLUMNS, 5: TUMFTM_Z_COLUMNS})
    missing = [c for c in TUMFTM_COLUMNS if c not in table.columns]
    if missing:
        raise _fail(
            table.file,
            None,
            f"missing column(s) {', '.join(missing)}",
            f"name the columns {','.join(TUMFTM_COLUMNS)}[,z_m] in the header",
        )
    xy = np.stack([table.column("x_m"), table.column("y_m")], axis=1)
    if closed:
        table = _drop_closing_repeat(table, xy)
        xy = xy[: len(table.values)]
    for col in ("w_tr_right_m", "w_tr_left_m"):
        bad = np.nonzero(table.column(col) < 0)[0]
        if bad.size:
            value = table.column(col)[bad[0]]
            raise _fail(
                table.file,
                int(table.lines[bad[0]]),
                f"{col} = {value} is negative",
                "widths are distances from the centreline to the track edge and must be >= 0",
            )
    validate_polyline(table, xy, closed=closed)
    z = table.column("z_m") if "z_m" in table.columns else np.zeros(len(xy))
    res = smooth_centreline(xy, closed=closed, ds=ds, smoothing_m=smoothing_m)
    s = res.s
    wl, wr, z = (
        interp_along(
            s, res.source_s, table.column(col) if col else z, closed=closed, length=res.length
        )
        for col in ("w_tr_left_m", "w_tr_right_m", None)
    )
    kind = f"TUMFTM centreline, smoothed {smoothing_m} m"
    return _build(Path(path), name, res, z, wl, wr, closed, kind)


def _build(
    path: Path,
    name: str | None,
    res: Resampled,
    z: np.ndarray,
    wl: np.ndarray,
    wr: np.ndarray,
    closed: bool,
    kind: str,
) -> ReferencePath:
    """A path from a resampled centreline and per-sample elevation and widths [m]."""
    args = (np.column_stack([res.xy, z]), res.heading, res.curvature, wl, wr)
    draft = ReferencePath.from_arrays(name or path.stem, *args, ds=res.ds, closed=closed)
    return ReferencePath.from_arrays(
        draft.name,
        *args,
        ds=res.ds,
        closed=closed,
        description=f"loaded from {path} ({kind})",
        labels=("circuit", "file") if closed else ("file",),
        features=detect_corners(draft),
    )


def _read_boundary(path: str | Path, closed: bool | None) -> tuple[Table, np.ndarray, bool]:
    """Read and validate one boundary file; decide open/closed if not given."""
    table = read_table(path, {2: ("x", "y"), 3: ("x", "y", "z")})
    cols = {c.removesuffix("_m"): k for k, c in enumerate(table.columns)}
    if "x" not in cols or "y" not in cols:
        raise _fail(table.file, None, "no x and y columns", "name the columns x,y[,z]")
    z = table.values[:, cols["z"]] if "z" in cols else np.zeros(len(table.values))
    table = Table(
        table.file,
        ("x", "y", "z"),
        np.column_stack([table.values[:, cols["x"]], table.values[:, cols["y"]], z]),
        table.lines,
    )
    xy = table.values[:, :2]
    if closed is None:
        total = float(np.hypot(*np.diff(xy, axis=0).T).sum())
        gap = float(np.hypot(*(xy[-1] - xy[0])))
        closed = gap < 0.05 * total
    if closed:
        table = _drop_closing_repeat(table, xy)
        xy = xy[: len(table.values)]
    validate_polyline(table, xy, closed=closed)
    return table, xy, closed


def load_boundaries(
    left: str | Path,
    right: str | Path,
    *,
    ds: float = 1.0,
    closed: bool | None = None,
    name: str | None = None,
    smoothing_m: float = 1.0,
) -> ReferencePath:
    """Load a track from its left and right edge polylines (``x, y[, z]`` per line).

    The centreline is the midpoint between every left point and the nearest right point,
    smoothed and resampled; the widths are the distances from the centreline to each edge.

    Args:
        left: file with the left edge (as seen in the driving direction).
        right: file with the right edge.
        ds: sample spacing [m].
        closed: whether the edges are loops; ``None`` decides from the gap between the first and
            last points (under 5 % of the edge length: closed).
        name: path name (defaults to the left file's stem).
        smoothing_m: Gaussian smoothing of the centreline along the path [m].

    Raises:
        TrackFormatError: if a file is malformed or the edges are swapped.
    """
    _check_sampling(ds, smoothing_m)
    lt, lxy, closed_l = _read_boundary(left, closed)
    rt, rxy, closed_r = _read_boundary(right, closed if closed is not None else closed_l)
    closed = closed_l and closed_r
    lz, rz = lt.column("z"), rt.column("z")
    mate = nearest_points(lxy, rxy)
    mid = 0.5 * (lxy + rxy[mate])
    keep = np.concatenate([[True], np.hypot(*np.diff(mid, axis=0).T) > 0.05])
    mid, mid_z = mid[keep], (0.5 * (lz + rz[mate]))[keep]
    if closed and len(mid) > 1 and np.hypot(*(mid[-1] - mid[0])) <= 0.05:
        mid, mid_z = mid[:-1], mid_z[:-1]
    res = smooth_centreline(mid, closed=closed, ds=ds, smoothing_m=smoothing_m)
    normal = np.stack([-np.sin(res.heading), np.cos(res.heading)], axis=1)
    side = ((lxy[nearest_points(res.xy, lxy)] - res.xy) * normal).sum(1)
    if np.median(side) < 0:
        raise _fail(
            lt.file,
            None,
            f"this edge lies to the right of the driving direction (and {rt.file} to the left)",
            "swap the two files (left edge first, as seen in the driving direction), or reverse "
            "the point order of both if they run against the driving direction",
        )
    if polyline_crossings(res.xy[:, 0], res.xy[:, 1], closed=closed):
        raise _fail(
            lt.file,
            None,
            f"the midline between this edge and {rt.file} crosses itself",
            "check that both edges belong to the same road and have no stray points",
        )
    wl = point_segment_distance(res.xy, lxy, closed=closed)
    wr = point_segment_distance(res.xy, rxy, closed=closed)
    z = interp_along(res.s, res.source_s, mid_z, closed=closed, length=res.length)
    kind = f"left/right edges with {rt.file}, smoothed {smoothing_m} m"
    return _build(Path(left), name, res, z, wl, wr, closed, kind)
