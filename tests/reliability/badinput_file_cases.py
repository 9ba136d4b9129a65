"""Catalogue cases of the file loaders: track geometry CSVs, driving logs and datasets.

Every file is written into the case's own empty folder: malformed TUMFTM centrelines and edge
polylines, and Parquet episodes that are truncated, foreign, of a newer schema, not Parquet at
all, or hold values no recorder writes.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from badinput_support import Case

from gym_s3.data.dataset import MANIFEST_FORMAT, MANIFEST_NAME, DrivingDataset
from gym_s3.data.files import read_episode, write_episode
from gym_s3.data.schema import COLUMNS, SCHEMA_VERSION, EpisodeMeta, layout_to_dict
from gym_s3.errors import DataFormatError, TrackFormatError
from gym_s3.tracks.loaders import load_boundaries, load_tumftm_csv
from gym_s3.tracks.surfaces import SurfaceLayout

HEADER = "# x_m,y_m,w_tr_right_m,w_tr_left_m\n"
#: a valid 100 m x 50 m rectangle of centreline points (closed loop, 4 m either side)
SQUARE = ["0,0,4,4", "100,0,4,4", "100,50,4,4", "0,50,4,4"]
#: rows of the synthetic episodes [rows]
ROWS = 40


def _tumftm(work: Path, rows: list[str]) -> Path:
    """Write a TUMFTM centreline file with ``rows`` after the header; returns its path."""
    path = work / "track.csv"
    path.write_text(HEADER + "\n".join(rows) + "\n")
    return path


def _load(work: Path, rows: list[str]) -> None:
    """Load a centreline file made of ``rows``."""
    load_tumftm_csv(_tumftm(work, rows))


def _swapped_edges(work: Path) -> None:
    """Load a square road whose left and right edge files were given the wrong way round."""
    inner = [(10, 10), (90, 10), (90, 40), (10, 40)]
    outer = [(0, 0), (100, 0), (100, 50), (0, 50)]
    left, right = work / "left.csv", work / "right.csv"
    # driving counter-clockwise, the inner edge is on the left: pass the outer one as "left"
    left.write_text("".join(f"{x},{y}\n" for x, y in outer))
    right.write_text("".join(f"{x},{y}\n" for x, y in inner))
    load_boundaries(left, right, closed=True)


def episode_columns(n: int = ROWS) -> dict[str, np.ndarray]:
    """``n`` rows of a car standing still on asphalt (every value valid)."""
    cols = {c.name: np.zeros(n, dtype=c.dtype) for c in COLUMNS}
    cols["t"] = (np.arange(n) * 0.05).astype(np.float32)
    return cols


def episode_meta(session: str = "s0", episode: str = "e0", **changes: object) -> EpisodeMeta:
    """Metadata of a synthetic episode (changed fields in ``changes``)."""
    meta = EpisodeMeta(session_id=session, episode_id=episode, source="standin-batched",
                       device="scripted-expert", track="putnam",
                       layout=layout_to_dict(SurfaceLayout.uniform("asphalt")))  # fmt: skip
    return meta.replace(**changes) if changes else meta


def write_log(work: Path, session: str = "s0", **columns: np.ndarray) -> Path:
    """Write a valid episode of ``session`` into ``work`` (some columns replaced); returns it."""
    cols = {**episode_columns(), **columns}
    return write_episode(work / f"{session}__e0.parquet", cols, episode_meta(session))


def _truncated(work: Path) -> None:
    """Read an episode file cut in half (as by a full disk or a killed copy)."""
    path = write_log(work)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    read_episode(path)


def _foreign_parquet(work: Path) -> None:
    """Read a Parquet file written by another tool."""
    path = work / "other.parquet"
    pq.write_table(pa.table({"speed": [1.0, 2.0], "lap": [1, 1]}), path)
    read_episode(path)


def _newer_schema(work: Path) -> None:
    """Read an episode written by a future release (newer log schema)."""
    path = work / "future.parquet"
    write_episode(path, episode_columns(), episode_meta(schema_version=SCHEMA_VERSION + 1))
    read_episode(path)


def _not_parquet(work: Path) -> None:
    """Read a CSV export that was given the ``.parquet`` suffix."""
    path = work / "export.parquet"
    path.write_text("t,x,y\n0.0,0.0,0.0\n")
    read_episode(path)


def _nan_position(work: Path) -> None:
    """Read an episode whose ``x`` column holds a NaN at row 5."""
    x = np.zeros(ROWS, dtype=np.float32)
    x[5] = np.nan
    read_episode(write_log(work, x=x))


def _time_backwards(work: Path) -> None:
    """Read an episode whose clock jumps back at row 7."""
    t = (np.arange(ROWS) * 0.05).astype(np.float32)
    t[7] = 0.0
    read_episode(write_log(work, t=t))


def _modified_after_manifest(work: Path) -> None:
    """Load a dataset whose episode was rewritten after its manifest was made."""
    path = write_log(work)
    cols, meta = read_episode(path)
    from gym_s3.data.dataset import episode_digest

    entry = {"path": path.name, "digest": episode_digest(cols, meta), "rows": ROWS}
    (work / MANIFEST_NAME).write_text(json.dumps({"format": MANIFEST_FORMAT, "files": [entry]}))
    cols["x"][3] = 1.0
    path.unlink()
    write_episode(path, cols, meta)
    DrivingDataset.load(work)


def _manifest_without_paths(work: Path) -> None:
    """Load a dataset whose manifest lists entries without their file names."""
    write_log(work)
    manifest = {"format": MANIFEST_FORMAT, "files": [{"digest": "00", "rows": ROWS}]}
    (work / MANIFEST_NAME).write_text(json.dumps(manifest))
    DrivingDataset.load(work)


CASES: tuple[Case, ...] = (
    Case("track-missing-file", lambda w: load_tumftm_csv(w / "nowhere.csv"),
         TrackFormatError, r"nowhere\.csv: cannot read the file", r"check the path"),
    Case("track-nan-cell", lambda w: _load(w, [*SQUARE[:2], "nan,50,4,4", SQUARE[3]]),
         TrackFormatError, r"track\.csv, line 4: column 'x_m' is 'nan'",
         r"replace NaN/inf by a measured value or delete the line"),
    Case("track-text-cell", lambda w: _load(w, [*SQUARE[:3], "0,50 m,4,4"]),
         TrackFormatError, r"line 5: column 'y_m' holds '50 m', which is not a number",
         r"plain decimal numbers"),
    Case("track-too-few-points", lambda w: _load(w, SQUARE[:3]),
         TrackFormatError, r"only 3 points; a track needs at least 4",
         r"give the whole track, one point per line"),
    Case("track-duplicate-point", lambda w: _load(w, [*SQUARE[:2], SQUARE[1], *SQUARE[2:]]),
         TrackFormatError, r"line 4: repeats the point of line 3", r"delete one of the two lines"),
    Case("track-self-crossing", lambda w: _load(w, [SQUARE[0], SQUARE[2], SQUARE[1], SQUARE[3]]),
         TrackFormatError, r"the polyline crosses itself", r"check the point order"),
    Case("track-negative-width", lambda w: _load(w, [*SQUARE[:3], "0,50,-4,4"]),
         TrackFormatError, r"line 5: w_tr_right_m = -4\.0 is negative", r"must be >= 0"),
    Case("track-ragged-columns", lambda w: _load(w, [*SQUARE[:3], "0,50,4"]),
         TrackFormatError, r"line 5: found 3 columns, expected 4",
         r"make every line have the same columns"),
    Case("track-swapped-edges", _swapped_edges,
         TrackFormatError, r"lies to the right of the driving direction", r"swap the two files"),
    Case("log-truncated", _truncated,
         DataFormatError, r"not a readable Parquet file; it is truncated",
         r"s3 data recover.*regenerate or delete"),
    Case("log-foreign-parquet", _foreign_parquet,
         DataFormatError, r"other\.parquet: not a sim2sim2sim driving log",
         r"only files written by `s3 collect` or `s3 data generate`"),
    Case("log-newer-schema", _newer_schema,
         DataFormatError, rf"log schema version {SCHEMA_VERSION + 1}, newer",
         r"upgrade sim2sim2sim"),
    Case("log-not-parquet", _not_parquet,
         DataFormatError, r"export\.parquet: not a readable Parquet file",
         r"regenerate or delete the file"),
    Case("log-nan-position", _nan_position,
         DataFormatError, r"column 'x' has 1 non-finite values \(first at row 5\)",
         r"regenerate|re-record|delete"),
    Case("log-time-backwards", _time_backwards,
         DataFormatError, r"column 't' is not strictly increasing", r"regenerate|re-record|delete"),
    Case("dataset-empty-folder", lambda w: DrivingDataset.load(w),
         DataFormatError, r"no episode files \(\*\.parquet\) found",
         r"s3 collect.*s3 data generate"),
    Case("dataset-missing-path", lambda w: DrivingDataset.load(w / "no_such_dataset"),
         DataFormatError, r"no_such_dataset: no such", r"check the path|s3 data generate"),
    Case("dataset-file-changed-after-manifest", _modified_after_manifest,
         DataFormatError, r"content differs from manifest\.json", r"regenerate the dataset"),
    Case("dataset-manifest-without-paths", _manifest_without_paths,
         DataFormatError, r"manifest\.json.*malformed|manifest\.json.*no file name",
         r"regenerate"),
)  # fmt: skip
