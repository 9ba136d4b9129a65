"""Ground models and surface patches of the stand-in world, turned into one friction field.

The world keeps BeamNG's view of surfaces: a table of ground models (name -> static and sliding
friction), changed by the Lua template of :mod:`gym_s3.beamng.lua`, and procedural cubes whose
material names a ground model (:mod:`gym_s3.beamng.materials`). The drivable ground of every level
is the ASPHALT ground model, so overriding ASPHALT sets the base surface. :func:`surface_layout`
turns both into a :class:`~gym_s3.tracks.surfaces.SurfaceLayout`, the same friction lookup the
vehicle simulator and the distilled env use; the static coefficient is the peak friction.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gym_s3.beamng.frames import quat_to_matrix
from gym_s3.beamng.materials import LEVEL_GROUND_MODEL, ground_model_of_material
from gym_s3.errors import ConfigError
from gym_s3.tracks.surfaces import SURFACES, RectPatch, SurfaceLayout

LOGGER = logging.getLogger(__name__)

#: sliding / static friction ratio used for the default table [-] (sliding is about 0.75-0.9 of
#: peak, ``vehicle-dynamics.md`` §3.1; the stand-in's physics only uses the static value)
DEFAULT_SLIDING_RATIO = 0.9
#: ground model name -> project surface name (for the surface ids of a ``SurfaceLayout``)
SURFACE_OF_GROUND_MODEL: dict[str, str] = {s.ground_model: s.name for s in SURFACES.values()}


@dataclass(frozen=True)
class GroundModel:
    """Friction coefficients of one BeamNG ground model.

    Attributes:
        static: ``staticFrictionCoefficient`` [-], used as peak friction.
        sliding: ``slidingFrictionCoefficient`` [-], reported only.
    """

    static: float
    sliding: float


def default_ground_models() -> dict[str, GroundModel]:
    """The table a level starts with: one entry per project surface (peak mu from ``SURFACES``)."""
    return {
        s.ground_model: GroundModel(s.mu, round(s.mu * DEFAULT_SLIDING_RATIO, 6))
        for s in SURFACES.values()
    }


@dataclass(frozen=True)
class Cube:
    """A ``ProceduralCube`` placed in the world.

    Attributes:
        name: object name.
        center: ``(x, y, z)`` centre [m].
        size: ``(length, width, height)`` along the cube's local x, y, z [m].
        yaw: heading of the cube's local x axis [rad, CCW from +x].
        material: material name (may be ``None``).
    """

    name: str
    center: tuple[float, float, float]
    size: tuple[float, float, float]
    yaw: float
    material: str | None

    @staticmethod
    def from_request(
        name: str, pos: Sequence[float], size: Sequence[float], rot: Sequence[float] | None,
        material: str | None,
    ) -> Cube:  # fmt: skip
        """Build from the fields of a ``CreateCube`` request (``rot`` is ``(x, y, z, w)``).

        Raises:
            ConfigError: malformed position, size or rotation.
        """
        center = _vector(pos, 3, "CreateCube pos")
        dims = _vector(size, 3, "CreateCube size")
        if min(dims) <= 0:
            raise ConfigError(f"CreateCube size must be positive, got {tuple(size)}")
        yaw = 0.0
        if rot is not None:
            m = quat_to_matrix(_vector(rot, 4, "CreateCube rot"))
            yaw = math.atan2(m[1][0], m[0][0])  # heading of the local x axis
        return Cube(name, center, dims, yaw, material)


def surface_layout(
    ground_models: Mapping[str, GroundModel], cubes: Sequence[Cube]
) -> SurfaceLayout:
    """Friction layout of the world: the level's ASPHALT everywhere, patches from cubes.

    Cubes whose material is not a patch material add no patch (BeamNG treats a material without
    a ground type as ASPHALT, which is the level ground anyway). Later cubes win where they
    overlap, like later patches of a layout.
    """
    base = ground_models[LEVEL_GROUND_MODEL]
    patches = []
    for cube in cubes:
        model = ground_model_of_material(cube.material)
        if model is None or model not in ground_models:
            continue
        patches.append(
            RectPatch(
                cx=cube.center[0],
                cy=cube.center[1],
                yaw=cube.yaw,
                length=cube.size[0],
                width=cube.size[1],
                mu=ground_models[model].static,
                surface=SURFACE_OF_GROUND_MODEL[model],
            )
        )
    return SurfaceLayout(
        base=SURFACE_OF_GROUND_MODEL[LEVEL_GROUND_MODEL],
        base_mu=base.static,
        patches=tuple(patches),
    )


def _vector(value: Sequence[float] | None, count: int, what: str) -> tuple[float, ...]:
    if value is None or len(value) != count:
        raise ConfigError(f"{what} must have {count} numbers, got {value!r}")
    try:
        numbers = tuple(float(v) for v in value)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{what} must have {count} numbers, got {value!r}") from exc
    if not all(math.isfinite(v) for v in numbers):
        raise ConfigError(f"{what} must be finite, got {value!r}")
    return numbers
