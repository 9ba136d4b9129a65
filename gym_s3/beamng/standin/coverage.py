"""What the open stand-in models of a BeamNG scenario, and the warnings for what it does not.

The stand-in serves every level as ground of the level's registered height
(:mod:`gym_s3.beamng.standin.terrain`, flat at z = 0 when none is registered) and every vehicle
model as
its one front-wheel-drive sedan (:data:`gym_s3.vehicle.SEDAN`). That is faithful for BeamNG's
flat ``smallgrid`` level and the ``etk800`` sedan the project drives; anything else (e.g.
``west_coast_usa``, ``italy``, a ``pickup``) silently becomes a flat-ground sedan. The server
logs :func:`coverage_warnings` when a scenario or vehicle asks for such things, and announces
what it models in its ``Hello`` reply, so the client
(:class:`gym_s3.beamng.client.link.SimLink`) warns
the user too.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from gym_s3.beamng.standin.terrain import registered_levels

#: BeamNG levels that are flat ground in BeamNG too, so the stand-in's flat ground is faithful
FLAT_LEVELS: tuple[str, ...] = ("smallgrid",)
#: jBeam models the stand-in's sedan stands for (every other model is simulated as this sedan)
MODELLED_VEHICLE_MODELS: tuple[str, ...] = ("etk800",)


def modelled_levels() -> tuple[str, ...]:
    """Levels whose ground the stand-in reproduces: the flat ones and those given a height."""
    return tuple(dict.fromkeys((*FLAT_LEVELS, *registered_levels())))


def coverage_warnings(
    level: str | None,
    models: Iterable[str],
    *,
    levels: Sequence[str] | None = None,
    vehicle_models: Sequence[str] | None = None,
) -> list[str]:
    """One message per thing of a scenario the stand-in does not model.

    Args:
        level: the BeamNG level asked for (``None``: not checked).
        models: jBeam vehicle models asked for.
        levels: the levels the stand-in models (default: :func:`modelled_levels` of this process;
            a client passes what the server announced).
        vehicle_models: the vehicle models it models (default :data:`MODELLED_VEHICLE_MODELS`).

    Returns:
        human-readable messages (empty when everything is modelled).
    """
    levels = modelled_levels() if levels is None else tuple(levels)
    vehicle_models = MODELLED_VEHICLE_MODELS if vehicle_models is None else tuple(vehicle_models)
    out = []
    if level is not None and level not in levels:
        out.append(
            f"the open stand-in has no terrain or roads of level {level!r}: it is served as flat "
            f"ground at z = 0 (modelled levels: {', '.join(levels)}); use BeamNG.tech for it"
        )
    for model in dict.fromkeys(models):
        if model not in vehicle_models:
            out.append(
                f"the open stand-in does not model vehicle {model!r}: it drives as the stand-in's "
                f"front-wheel-drive sedan (stands for: {', '.join(vehicle_models)}); use "
                "BeamNG.tech for other vehicles"
            )
    return out
