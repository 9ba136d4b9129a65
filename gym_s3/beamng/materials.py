"""Material names for surface patches, and the BeamNG ground model each one stands for.

On real BeamNG the friction under a wheel comes from the ground type of the material it touches.
The env places a patch (e.g. an ice patch on the track) as a thin ``ProceduralCube`` whose
``material`` is one of the names below; a material of that name must exist in the level with the
listed ``groundType`` (the env's job on real BeamNG). The stand-in maps the same name to the
ground model and uses that ground model's current friction inside the cube's footprint. Both sides
import this table, so the names cannot drift apart.

BeamNG uses ASPHALT for a material without a ground type; a cube with an unknown material
therefore behaves like the level's ASPHALT ground and the stand-in gives it no patch.
"""

from __future__ import annotations

from types import MappingProxyType

from gym_s3.errors import ConfigError

#: patch material name -> BeamNG ground model name
PATCH_MATERIALS: MappingProxyType[str, str] = MappingProxyType(
    {
        "s3_asphalt": "ASPHALT",
        "s3_asphalt_wet": "ASPHALT_WET",
        "s3_gravel": "GRAVEL",
        "s3_dirt": "DIRT",
        "s3_snow": "SNOW",
        "s3_ice": "ICE",
    }
)
#: the ground model of the drivable ground of every level the stand-in serves
LEVEL_GROUND_MODEL = "ASPHALT"


def ground_model_of_material(material: str | None) -> str | None:
    """Ground model of a patch material, or ``None`` when the material is not a patch material."""
    if material is None:
        return None
    return PATCH_MATERIALS.get(material)


def patch_material(ground_model: str) -> str:
    """Material name to give a patch cube so that it has ``ground_model``'s friction.

    Raises:
        ConfigError: no patch material exists for that ground model.
    """
    for material, model in PATCH_MATERIALS.items():
        if model == ground_model:
            return material
    known = ", ".join(sorted(set(PATCH_MATERIALS.values())))
    raise ConfigError(
        f"no patch material for ground model {ground_model!r}; known ground models: {known}"
    )
