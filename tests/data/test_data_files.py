"""Episode files: schema, metadata round trips, and clear errors for corrupted or foreign files."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
from data_helpers import meta_for, straight_columns, write_straight

from gym_s3.data.files import columns_to_table, read_episode, read_meta, write_episode
from gym_s3.data.schema import (
    COLUMN_NAMES,
    META_KEY,
    SCHEMA_VERSION,
    EpisodeMeta,
    layout_from_dict,
    layout_to_dict,
)
from gym_s3.errors import ConfigError, DataFormatError
from gym_s3.tracks.layouts import LayoutConfig, PatchConfig, sample_layout

#: The columns of the data contract (notes/data_contract.md), written out here on purpose.
CONTRACT_COLUMNS = (
    "t x y z yaw v_long v_lat yaw_rate ax ay omega_fl omega_fr omega_rl omega_rr steer accel "
    "steer_cmd_raw throttle_cmd brake_cmd steer_applied throttle_applied brake_applied mu_fl "
    "mu_fr mu_rl mu_rr surface_fl surface_fr surface_rl surface_rr s d target_speed fault"
).split()


def test_columns_are_the_contract() -> None:
    """The schema has exactly the contract's columns, in the contract's order."""
    assert list(COLUMN_NAMES) == CONTRACT_COLUMNS


def test_meta_json_round_trip() -> None:
    """EpisodeMeta -> JSON -> EpisodeMeta gives equal metadata (tuples survive as tuples)."""
    meta = meta_for("sess", "e7", track_labels=("town", "intersection"), seed=4,
                    labels=("hard_braking",), extra={"a": [1, 2]})  # fmt: skip
    back = EpisodeMeta.from_json(meta.to_json(), "x")
    assert back == meta
    assert back.track_labels == ("town", "intersection")


def test_meta_rejects_bad_values() -> None:
    """Unknown sources and empty ids are refused with ConfigError."""
    with pytest.raises(ConfigError, match="unknown log source"):
        dataclasses.replace(meta_for(), source="carla")
    with pytest.raises(ConfigError, match="session_id"):
        dataclasses.replace(meta_for(), session_id="")


def test_newer_schema_version_is_refused() -> None:
    """Metadata of a newer schema version raises a DataFormatError asking for an upgrade."""
    data = json.loads(meta_for().to_json())
    data["schema_version"] = SCHEMA_VERSION + 1
    with pytest.raises(DataFormatError, match="newer"):
        EpisodeMeta.from_json(json.dumps(data), "f.parquet")


def test_layout_round_trip(circle) -> None:
    """A layout with patches survives the JSON form: same friction everywhere on the path."""
    cfg = LayoutConfig(base=("snow",), patches=PatchConfig(count=(3, 3)))
    layout = sample_layout(circle, cfg, np.random.default_rng(0))
    back = layout_from_dict(json.loads(json.dumps(layout_to_dict(layout))))
    assert back == layout
    pts = circle.xyz[None, :, :2].float()
    assert torch.equal(back.friction_at(pts), layout.friction_at(pts))


def test_write_read_round_trip(tmp_path: Path) -> None:
    """Values, dtypes and metadata read back exactly; num_rows is filled in."""
    cols = straight_columns(30, speed=7.0, mu=0.25, surface="snow")
    path = write_episode(tmp_path / "a.parquet", cols, meta_for(surface="snow"))
    back, meta = read_episode(path)
    for name in COLUMN_NAMES:
        assert back[name].dtype == cols[name].dtype, name
        np.testing.assert_array_equal(back[name], cols[name])
    assert meta.num_rows == 30 and meta.base_surface == "snow"
    assert read_meta(path) == meta
    assert not list(tmp_path.glob("*.tmp"))  # the temporary file was renamed


def test_truncated_file_names_file_and_fix(tmp_path: Path) -> None:
    """A file cut short raises DataFormatError naming the file and `s3 data recover`."""
    path = write_straight(tmp_path, "s", "e", 50)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(DataFormatError) as err:
        read_episode(path)
    assert str(path) in str(err.value) and "recover" in str(err.value)


def test_flipped_bytes_are_detected(tmp_path: Path) -> None:
    """Corrupted data pages fail their checksum: DataFormatError naming the file."""
    path = write_straight(tmp_path, "s", "e", 400)
    data = bytearray(path.read_bytes())
    for i in range(200, 260):  # inside the first column chunk's data
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(DataFormatError, match="corrupted") as err:
        read_episode(path)
    assert str(path) in str(err.value)


def test_foreign_parquet_is_refused(tmp_path: Path) -> None:
    """A Parquet file without sim2sim2sim metadata is reported as foreign."""
    path = tmp_path / "foreign.parquet"
    pq.write_table(pa.table({"t": [0.0, 0.05]}), path)
    with pytest.raises(DataFormatError, match="not a sim2sim2sim driving log") as err:
        read_episode(path)
    assert str(path) in str(err.value)


def test_not_parquet_is_refused(tmp_path: Path) -> None:
    """A text file with the right suffix is not readable Parquet."""
    path = tmp_path / "notes.parquet"
    path.write_text("t,x\n0,0\n")
    with pytest.raises(DataFormatError, match="not a readable Parquet file"):
        read_episode(path)


def test_nan_in_required_column_is_named(tmp_path: Path) -> None:
    """NaN where a value is required (v_long) is refused naming the column and row."""
    cols = straight_columns(10)
    cols["v_long"][4] = np.nan
    path = write_episode(tmp_path / "nan.parquet", cols, meta_for())
    with pytest.raises(DataFormatError, match="'v_long'.*row 4"):
        read_episode(path)


def test_nan_allowed_where_not_reported(tmp_path: Path) -> None:
    """Wheel spin and actuator states may be NaN (real BeamNG does not report them)."""
    cols = straight_columns(10)
    cols["omega_fl"][:] = np.nan
    cols["steer_applied"][:] = np.nan
    back, _ = read_episode(write_episode(tmp_path / "ok.parquet", cols, meta_for()))
    assert np.isnan(back["omega_fl"]).all()


def test_missing_column_is_named(tmp_path: Path) -> None:
    """A log without the 'ax' column is refused naming it."""
    table = columns_to_table(straight_columns(5), meta_for()).drop_columns(["ax"])
    path = tmp_path / "short.parquet"
    pq.write_table(table, path)
    with pytest.raises(DataFormatError, match="missing log columns.*'ax'"):
        read_episode(path)


def test_row_count_disagreeing_with_metadata(tmp_path: Path) -> None:
    """Rows removed after writing (metadata says more) are reported as truncated."""
    meta = meta_for().replace(num_rows=10)
    table = columns_to_table(straight_columns(10), meta).slice(0, 7)
    path = tmp_path / "cut.parquet"
    pq.write_table(table.replace_schema_metadata({META_KEY: meta.to_json()}), path)
    with pytest.raises(DataFormatError, match="7 rows but its metadata says 10"):
        read_episode(path)


def test_time_must_increase(tmp_path: Path) -> None:
    """A log whose time column goes backwards is refused."""
    cols = straight_columns(6)
    cols["t"][3] = 0.0
    path = write_episode(tmp_path / "t.parquet", cols, meta_for())
    with pytest.raises(DataFormatError, match="'t' is not strictly increasing"):
        read_episode(path)
