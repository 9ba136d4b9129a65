"""Bookkeeping records of the stand-in world: created scenarios and vehicles."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gym_s3.beamng.standin.fleet import Pose
from gym_s3.beamng.standin.prefab import Prefab


@dataclass(frozen=True)
class ScenarioRecord:
    """A scenario made with ``CreateScenario``.

    Attributes:
        path: the info-file path returned to the client (its handle for ``LoadScenario``).
        level: level name.
        name: scenario name.
        prefab: parsed prefab.
        info: the scenario info dict as sent.
    """

    path: str
    level: str
    name: str
    prefab: Prefab
    info: dict[str, Any]

    @property
    def player_vid(self) -> str | None:
        """Vehicle with ``startFocus`` in the info, else the first prefab vehicle."""
        for vid, props in (self.info.get("vehicles") or {}).items():
            if isinstance(props, dict) and props.get("startFocus"):
                return str(vid)
        return self.prefab.vehicles[0].name if self.prefab.vehicles else None


@dataclass
class VehicleEntry:
    """Bookkeeping of one vehicle (its physics lives in a row of the fleet).

    Attributes:
        vid: vehicle id.
        model: jBeam model name.
        object_id: BeamNG-style integer object id.
        owner: id of the GE connection that created it (``None``: nobody).
        transient: spawned during the scenario (removed by ``RestartScenario``).
        spawn: pose it is restored to on restart [m, rad].
        options: spawn options as sent (colour, licence text, ...).
        shift_mode: last ``SetShiftMode`` value.
        gear: latched gear request (-1 reverse, 0 neutral, >= 1 drive).
    """

    vid: str
    model: str
    object_id: int
    owner: int | None
    transient: bool
    spawn: Pose
    options: dict[str, Any] = field(default_factory=dict)
    shift_mode: int = 3
    gear: int = 1
