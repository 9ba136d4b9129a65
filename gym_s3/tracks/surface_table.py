"""The named road surfaces with their peak friction, and the patch shapes of a surface layout.

Peak tyre-road friction for passenger-car tyres (project defaults, ``vehicle-dynamics.md`` §3.1):

=============  ======  ==========================================================================
surface        mu [-]  sources
=============  ======  ==========================================================================
asphalt        1.00    modern tyres on dry asphalt; Wong, *Theory of Ground Vehicles*: 0.8-0.9
                       peak; MathWorks Magic-Formula dry-tarmac preset D = 1.0
asphalt_wet    0.70    Wong 0.5-0.7 peak; MathWorks wet-tarmac preset D = 0.82
gravel         0.60    Wong 0.6 peak / 0.55 sliding
dirt           0.65    Wong dry dirt road 0.68 peak; Noon (1994) loose moist dirt 0.60-0.65
snow           0.25    packed snow: Wong 0.2; Noon 0.20-0.25; MathWorks snow preset D = 0.3
ice            0.10    Wong 0.1 peak / 0.07 sliding; Noon 0.10-0.15; MathWorks ice preset D = 0.1
=============  ======  ==========================================================================

Sliding friction (about 0.75-0.9 of peak) follows from the tyre model's curve shape, not from
this table. Re-exported by :mod:`gym_s3.tracks.surfaces`, which holds the layouts and the
friction lookup.
"""

from __future__ import annotations

from dataclasses import dataclass

from gym_s3.errors import ConfigError


@dataclass(frozen=True)
class Surface:
    """A named road surface.

    Attributes:
        name: identifier used throughout the project.
        mu: peak tyre-road friction coefficient [-] for passenger-car tyres.
        ground_model: the BeamNG ground-model name the surface maps to.
        source: where the value comes from.
    """

    name: str
    mu: float
    ground_model: str
    source: str


#: Peak friction of the named surfaces. Values are the project's defaults from the textbook
#: ranges: Wong, *Theory of Ground Vehicles* (peak/sliding tables), Noon (1994) as quoted in
#: road-accident reconstruction references, and the MathWorks Magic-Formula presets; see
#: ``vehicle-dynamics.md`` §3.1. "Dry asphalt 1.0" reflects modern passenger tyres (textbook
#: 0.8-0.9).
SURFACES: dict[str, Surface] = {
    s.name: s
    for s in (
        Surface("asphalt", 1.0, "ASPHALT", "modern tyres, dry asphalt; Wong 0.8-0.9, MF preset 1"),
        Surface("asphalt_wet", 0.7, "ASPHALT_WET", "Wong 0.5-0.7; MF wet-tarmac preset 0.82"),
        Surface("gravel", 0.6, "GRAVEL", "Wong gravel 0.6 peak / 0.55 sliding"),
        Surface("dirt", 0.65, "DIRT", "Wong dry dirt road 0.68; Noon loose moist dirt 0.60-0.65"),
        Surface("snow", 0.25, "SNOW", "packed snow: Wong 0.2, Noon 0.20-0.25, MF preset 0.3"),
        Surface("ice", 0.10, "ICE", "Wong 0.1, Noon 0.10-0.15, MF preset 0.1"),
    )
}
SURFACE_ALIASES: dict[str, str] = {"wet": "asphalt_wet", "dry": "asphalt", "tarmac": "asphalt"}
#: Stable integer ids (for logs): index into this tuple.
SURFACE_NAMES: tuple[str, ...] = tuple(SURFACES)


def get_surface(name: str) -> Surface:
    """Look up a surface by name or alias; the error lists the valid names."""
    key = SURFACE_ALIASES.get(name.lower(), name.lower())
    if key not in SURFACES:
        valid = ", ".join(list(SURFACES) + list(SURFACE_ALIASES))
        raise ConfigError(f"unknown surface '{name}'; valid surfaces: {valid}")
    return SURFACES[key]


@dataclass(frozen=True)
class RectPatch:
    """An oriented rectangle of another surface, in world coordinates.

    Attributes:
        cx: centre x [m].
        cy: centre y [m].
        yaw: orientation of the long side [rad, CCW from +x].
        length: extent along ``yaw`` [m].
        width: extent across ``yaw`` [m].
        mu: peak friction on the patch [-].
        surface: surface name (for logs and rendering).
    """

    cx: float
    cy: float
    yaw: float
    length: float
    width: float
    mu: float
    surface: str = "ice"

    def __post_init__(self) -> None:
        """Validate the fields (raises :class:`~gym_s3.errors.ConfigError`)."""
        if not (self.length > 0 and self.width > 0):
            raise ConfigError(f"patch size must be positive, got {self.length} x {self.width} m")
        if not 0.0 <= self.mu <= 3.0:
            raise ConfigError(f"patch friction must be in [0, 3], got {self.mu}")


@dataclass(frozen=True)
class PatchBand:
    """A patch as drawn along a path (the Frenet view of a group of :class:`RectPatch`).

    Attributes:
        s_start: arc length where it begins [m].
        length: extent along the path [m].
        d_min: lateral start, positive left [m].
        d_max: lateral end [m].
        surface: surface name.
        mu: peak friction [-].
    """

    s_start: float
    length: float
    d_min: float
    d_max: float
    surface: str
    mu: float
