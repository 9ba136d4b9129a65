"""The versioned on-disk schema of a driving log: columns, units and episode metadata.

One episode is one table sampled at the control rate (20 Hz). Row ``k`` holds the state measured at
``t_k`` **and** the action applied from ``t_k`` to ``t_{k+1}`` (the row semantics of
:data:`gym_s3.dynamics.base.HISTORY_FEATURES`). Finished episodes are Parquet files whose schema
metadata carries :class:`EpisodeMeta` as JSON under :data:`META_KEY` and whose fields carry their
units, so a file describes itself. The same columns are written by the scripted-expert generator,
the collection session (stand-in or real BeamNG) and the crash-safe journal.

Bump :data:`SCHEMA_VERSION` on any change of a column's meaning, unit or dtype; readers refuse
newer versions with a clear message.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from typing import Any

import numpy as np

from gym_s3.errors import ConfigError, DataFormatError
from gym_s3.spec import CONTROL_DT_S, WHEELS
from gym_s3.tracks.surfaces import PatchBand, RectPatch, SurfaceLayout

#: Version of the column layout and metadata below.
SCHEMA_VERSION = 1
#: Parquet / Arrow schema-metadata key holding the :class:`EpisodeMeta` JSON.
META_KEY = "sim2sim2sim.episode"
#: Where a log comes from.
SOURCES: tuple[str, ...] = ("standin-server", "standin-batched", "beamng")


@dataclass(frozen=True)
class Column:
    """One column of the episode table.

    Attributes:
        name: column name.
        dtype: numpy dtype name (``"float32"``, ``"int8"``, ``"bool"``).
        unit: SI unit (``"1"`` for dimensionless, ``"id"`` for indices).
        description: meaning and sign convention.
        nan_ok: whether NaN is a legal value (quantities a simulator may not report).
    """

    name: str
    dtype: str
    unit: str
    description: str
    nan_ok: bool = False


def _f(name: str, unit: str, description: str, nan_ok: bool = False) -> Column:
    """A float32 column."""
    return Column(name, "float32", unit, description, nan_ok)


COLUMNS: tuple[Column, ...] = (
    _f("t", "s", "time since the start of the episode"),
    _f("x", "m", "world x of the centre of gravity"),
    _f("y", "m", "world y of the centre of gravity"),
    _f("z", "m", "ground height under the car"),
    _f("yaw", "rad", "heading, CCW from world +x, unwrapped (continuous)"),
    _f("v_long", "m/s", "body-frame longitudinal velocity, + forward"),
    _f("v_lat", "m/s", "body-frame lateral velocity, + left"),
    _f("yaw_rate", "rad/s", "yaw rate, + CCW"),
    _f("ax", "m/s^2", "body-frame longitudinal acceleration, + forward"),
    _f("ay", "m/s^2", "body-frame lateral acceleration, + left"),
    *(_f(f"omega_{w}", "rad/s", f"{w.upper()} wheel spin (NaN if not reported)", True)
      for w in WHEELS),
    _f("steer", "1", "action: steering in [-1, 1], +1 = full right (applied from t_k to t_k+1)"),
    _f("accel", "1", "action: > 0 throttle, < 0 brake, in [-1, 1]"),
    _f("steer_cmd_raw", "1", "steering command sent to the simulator, +1 = right"),
    _f("throttle_cmd", "1", "throttle command sent to the simulator, [0, 1]"),
    _f("brake_cmd", "1", "brake command sent to the simulator, [0, 1]"),
    _f("steer_applied", "rad", "road-wheel steering angle, + left (NaN if unknown)", True),
    _f("throttle_applied", "1", "throttle actuator state (NaN if unknown)", True),
    _f("brake_applied", "1", "brake actuator state (NaN if unknown)", True),
    *(_f(f"mu_{w}", "1", f"peak tyre-road friction under the {w.upper()} wheel") for w in WHEELS),
    *(Column(f"surface_{w}", "int8", "id", f"surface under the {w.upper()} wheel: index into "
             "gym_s3.tracks.surfaces.SURFACE_NAMES") for w in WHEELS),
    _f("s", "m", "arc length of the projection on the episode's reference path"),
    _f("d", "m", "lateral offset from the reference path, + left"),
    _f("target_speed", "m/s", "friction-aware target speed of the reference at s"),
    Column("fault", "bool", "1", "the simulator flagged the car (non-finite or runaway state)"),
)  # fmt: skip
COLUMN_NAMES: tuple[str, ...] = tuple(c.name for c in COLUMNS)
COLUMN_BY_NAME: dict[str, Column] = {c.name: c for c in COLUMNS}
#: Float columns that must never be NaN.
REQUIRED_FINITE: tuple[str, ...] = tuple(
    c.name for c in COLUMNS if c.dtype == "float32" and not c.nan_ok
)


def empty_columns(n: int) -> dict[str, np.ndarray]:
    """Column arrays of ``n`` rows filled with NaN / 0 / False (to be filled by a writer)."""
    out: dict[str, np.ndarray] = {}
    for c in COLUMNS:
        if c.dtype == "float32":
            out[c.name] = np.full(n, np.nan, dtype=np.float32)
        else:
            out[c.name] = np.zeros(n, dtype=c.dtype)
    return out


# --------------------------------------------------------------------------- surface layouts
def layout_to_dict(layout: SurfaceLayout) -> dict[str, Any]:
    """JSON-ready description of a surface layout (base, patches as rectangles, Frenet bands)."""
    return {
        "base": layout.base,
        "base_mu": layout.base_mu,
        "patches": [asdict(p) for p in layout.patches],
        "bands": [asdict(b) for b in layout.bands],
    }


def layout_from_dict(data: dict[str, Any]) -> SurfaceLayout:
    """Inverse of :func:`layout_to_dict`.

    Raises:
        DataFormatError: the dict is not a layout description.
    """
    try:
        return SurfaceLayout(
            base=str(data["base"]),
            base_mu=float(data["base_mu"]),
            patches=tuple(RectPatch(**p) for p in data.get("patches", ())),
            bands=tuple(PatchBand(**b) for b in data.get("bands", ())),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise DataFormatError(f"malformed surface layout in log metadata: {exc}") from exc


# --------------------------------------------------------------------------- metadata
@dataclass(frozen=True)
class EpisodeMeta:
    """Everything a log file says about its episode (stored as JSON in the file).

    Attributes:
        session_id: id of the collection session (splits are made by session).
        episode_id: id of the episode, unique within the session.
        source: ``"standin-server"``, ``"standin-batched"`` or ``"beamng"``.
        device: input device: ``"scripted-expert"``, ``"wheel:<name>"`` or ``"keyboard"``.
        track: track name (``"putnam"``, ``"procedural:<seed>"``, ``"town:<seed>"``).
        layout: surface layout as :func:`layout_to_dict` (base surface and patches).
        track_labels: labels of the track (e.g. ``"circuit"``, ``"intersection"``).
        seed: seed of the episode (``None`` for human driving).
        dt: control period [s].
        vehicle: vehicle parameters (``VehicleParams.to_dict()``; empty when unknown).
        labels: scenario labels present in the episode (filled when the episode is finished).
        num_rows: rows in the file (filled when the episode is finished).
        version: sim2sim2sim version that wrote the file.
        created: UTC creation time, ISO 8601.
        schema_version: :data:`SCHEMA_VERSION` of the writer.
        extra: free-form JSON details (end reason, start position, recovery, ...).
    """

    session_id: str
    episode_id: str
    source: str
    device: str
    track: str
    layout: dict[str, Any]
    track_labels: tuple[str, ...] = ()
    seed: int | None = None
    dt: float = CONTROL_DT_S
    vehicle: dict[str, Any] = field(default_factory=dict)
    labels: tuple[str, ...] = ()
    num_rows: int = 0
    version: str = ""
    created: str = ""
    schema_version: int = SCHEMA_VERSION
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise ConfigError(f"unknown log source '{self.source}'; valid: {', '.join(SOURCES)}")
        for name in ("session_id", "episode_id", "device", "track"):
            if not isinstance(getattr(self, name), str) or not getattr(self, name):
                raise ConfigError(f"EpisodeMeta.{name} must be a non-empty string")
        if not (math.isfinite(self.dt) and self.dt > 0):
            raise ConfigError(f"EpisodeMeta.dt must be positive, got {self.dt}")
        object.__setattr__(self, "track_labels", tuple(self.track_labels))
        object.__setattr__(self, "labels", tuple(self.labels))
        if not self.version:
            from gym_s3 import __version__

            object.__setattr__(self, "version", __version__)
        if not self.created:
            stamp = datetime.now(timezone.utc).isoformat(timespec="seconds")
            object.__setattr__(self, "created", stamp)

    @property
    def surface_layout(self) -> SurfaceLayout:
        """The episode's :class:`~gym_s3.tracks.surfaces.SurfaceLayout`."""
        return layout_from_dict(self.layout)

    @property
    def base_surface(self) -> str:
        """Name of the episode's base surface."""
        return str(self.layout.get("base", "unknown"))

    def replace(self, **changes: Any) -> EpisodeMeta:
        """A copy with some fields changed."""
        return EpisodeMeta(**{**asdict(self), **changes})

    def to_json(self) -> str:
        """Serialise (sorted keys, so equal metadata gives equal bytes)."""
        return json.dumps(asdict(self), sort_keys=True, allow_nan=False)

    @staticmethod
    def from_json(text: str | bytes, where: str) -> EpisodeMeta:
        """Parse metadata written by :meth:`to_json`.

        Args:
            text: the JSON text.
            where: file name for error messages.

        Raises:
            DataFormatError: malformed JSON, missing fields, or a newer schema version.
        """
        try:
            data = json.loads(text)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise DataFormatError(f"{where}: episode metadata is not valid JSON ({exc})") from exc
        if not isinstance(data, dict):
            raise DataFormatError(f"{where}: episode metadata must be a JSON object")
        version = data.get("schema_version")
        if not isinstance(version, int) or version < 1:
            raise DataFormatError(f"{where}: episode metadata has no valid schema_version")
        if version > SCHEMA_VERSION:
            raise DataFormatError(
                f"{where} was written with log schema version {version}, newer than this "
                f"installation's {SCHEMA_VERSION}; upgrade sim2sim2sim to read it"
            )
        known = set(EpisodeMeta.__dataclass_fields__)
        try:
            return EpisodeMeta(**{k: v for k, v in data.items() if k in known})
        except (TypeError, ConfigError) as exc:
            raise DataFormatError(f"{where}: invalid episode metadata ({exc})") from exc
