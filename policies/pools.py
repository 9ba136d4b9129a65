"""The surface distributions PPO trains on (``PPOConfig.pool``).

``all_surfaces`` is the pool of policies that must hold on every surface: every base surface,
full-ice and full-snow laps, ice patches where they hurt (braking zones, apexes and exits of the
corners), and long asphalt -> ice -> asphalt stretches. ``default`` is the env's default
distribution (mostly dry asphalt, a few patches anywhere); ``default_ice`` is that with full-ice
laps mixed in (15 % of the layouts): the default pool has patches of ice but no lap on it, so no
hairpin braking zone on ice. ``ice_transitions`` adds friction transitions in both directions:
the default distribution in 70 % of the layouts, full-ice laps in 15 % (as ``default_ice``), ice
laps with one long asphalt or wet-asphalt stretch in 7.5 % (the car gathers speed on the stretch
and must shed it before the ice corners) and asphalt, wet-asphalt, gravel or snow laps with one long
full-width stretch of ice in 7.5 %. It is in no preset: four ``dytr`` seeds
trained on it failed 15, 17, 7 and 4 of the 48-lap town stall set where the shipped recipe's
seeds failed 1, 0 and 3 (docs/experiments.md, friction transitions both ways in the pool).
"""

from __future__ import annotations

from gym_s3.envs.config import DEFAULT_LAYOUT
from gym_s3.tracks.layouts import LayoutConfig, LayoutMix, PatchConfig


def _transition(base: tuple[str, ...], stretch: str) -> LayoutConfig:
    """Layouts on ``base`` with one long (150-400 m) full-width stretch of ``stretch``."""
    band = PatchConfig(count=(1, 1), length_m=(150.0, 400.0), coverage=(1.0, 1.0), surface=stretch)
    return LayoutConfig(base=base, patches=band)


#: Full-ice laps.
_FULL_ICE = LayoutConfig(base=("ice",))

#: Every surface the policies must hold on, in the shares a training pool draws them.
ALL_SURFACES = LayoutMix(
    options=(
        # mixed grip with a few patches anywhere
        LayoutConfig(
            base=("asphalt", "asphalt_wet", "gravel", "dirt"), patches=PatchConfig(count=(0, 2))
        ),  # fmt: skip
        LayoutConfig(base=("snow",)),  # full-snow laps
        _FULL_ICE,
        # ice where it hurts: braking zones, apexes, exits
        LayoutConfig(
            base=("asphalt", "asphalt_wet", "gravel", "dirt", "snow"),
            patches=PatchConfig(count=(3, 6), placement="corners"),
        ),  # fmt: skip
        # asphalt -> ice -> asphalt: one long full-width stretch of ice
        _transition(("asphalt", "asphalt_wet"), "ice"),
    ),
    weights=(0.25, 0.15, 0.2, 0.25, 0.15),
)
#: The env's default distribution with full-ice laps in 15 % of the layouts.
DEFAULT_WITH_ICE = LayoutMix(options=(DEFAULT_LAYOUT, _FULL_ICE), weights=(0.85, 0.15))

#: Default 70 %, full ice 15 % (as ``default_ice``), and transitions both ways 15 %.
ICE_TRANSITIONS = LayoutMix(
    options=(
        DEFAULT_LAYOUT,
        _FULL_ICE,
        _transition(("ice",), "asphalt"),  # ice lap with a dry stretch
        _transition(("ice",), "asphalt_wet"),
        _transition(("asphalt", "asphalt_wet", "gravel", "snow"), "ice"),  # dry lap, ice stretch
    ),
    weights=(0.70, 0.15, 0.05, 0.025, 0.075),
)
#: Surface distributions of the training pool (``PPOConfig.pool``).
TRAINING_POOLS: dict[str, LayoutConfig | LayoutMix] = {
    "all_surfaces": ALL_SURFACES,
    "default": DEFAULT_LAYOUT,
    "default_ice": DEFAULT_WITH_ICE,
    "ice_transitions": ICE_TRANSITIONS,
}
