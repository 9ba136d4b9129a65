"""THE Lua template that changes a ground model's friction, and its recogniser.

beamngpy 1.36 has no friction API. On real BeamNG the env changes a surface by sending a game-engine
Lua chunk through ``bng.control.queue_lua_command(chunk)``: the chunk edits the ground model's
``cdata`` in ``core_environment.groundModels`` and hands it back with ``be:setGroundModel`` (see
``shared/reference/beamngpy-protocol.md`` §5). :func:`render_ground_model_lua` writes that chunk;
the env imports it from here. The stand-in recognises *exactly* what the renderer produces
(:func:`parse_ground_model_lua`, a round trip checked by the tests); any other chunk is logged and
acknowledged without effect, just as real BeamNG swallows Lua errors. So the env has one code path
for both simulators.

Real BeamNG reloads its ground models when a level loads and (conservatively assumed) on scenario
restart, so the env must send the chunk again after ``load`` and ``restart``; the stand-in resets
its table at the same moments so forgetting it shows up in tests.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

from gym_s3.errors import ConfigError

#: first line of every rendered block; it names the template version
TEMPLATE_TAG = "sim2sim2sim ground model v1"
#: accepted friction coefficients [-] (BeamNG's typical range is 0.1 to 2; patches allow up to 3)
COEFFICIENT_RANGE = (0.0, 3.0)

_NAME = r"[A-Z][A-Z0-9_]{0,30}"
_NUMBER = r"[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?"
_BLOCK_TEMPLATE = (
    "do -- {tag}\n"
    "  local gm = core_environment.groundModels['{name}']\n"
    "  gm.cdata.staticFrictionCoefficient = {static}\n"
    "  gm.cdata.slidingFrictionCoefficient = {sliding}\n"
    "  be:setGroundModel('{name}', gm.cdata)\n"
    "end"
)
_BLOCK_RE = re.compile(
    re.escape("do -- " + TEMPLATE_TAG + "\n")
    + rf"  local gm = core_environment\.groundModels\['(?P<name>{_NAME})'\]\n"
    + rf"  gm\.cdata\.staticFrictionCoefficient = (?P<static>{_NUMBER})\n"
    + rf"  gm\.cdata\.slidingFrictionCoefficient = (?P<sliding>{_NUMBER})\n"
    + r"  be:setGroundModel\('(?P=name)', gm\.cdata\)\n"
    + r"end"
)
_SEPARATOR_RE = re.compile(r"\s*")


@dataclass(frozen=True)
class GroundModelUpdate:
    """New friction coefficients for one BeamNG ground model.

    Attributes:
        name: ground model name as BeamNG spells it, upper case (``"ASPHALT"``, ``"ICE"``, ...).
        static: ``staticFrictionCoefficient`` [-], the peak friction the stand-in uses.
        sliding: ``slidingFrictionCoefficient`` [-].
    """

    name: str
    static: float
    sliding: float

    def __post_init__(self) -> None:
        """Validate the name and both coefficients."""
        if not re.fullmatch(_NAME, self.name):
            raise ConfigError(
                f"ground model name {self.name!r} is not a BeamNG ground model name: use upper "
                "case letters, digits and '_' (e.g. 'ASPHALT', 'ICE'), at most 31 characters"
            )
        low, high = COEFFICIENT_RANGE
        for field in ("static", "sliding"):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ConfigError(
                    f"{field} friction of {self.name} must be a number, got {value!r}"
                )
            if not (math.isfinite(value) and low < value <= high):
                raise ConfigError(
                    f"{field} friction of {self.name} must be finite and in ({low}, {high}], "
                    f"got {value!r}"
                )
            object.__setattr__(self, field, float(value))


def render_ground_model_lua(name: str, static: float, sliding: float) -> str:
    """Render the GE Lua chunk that sets one ground model's friction on real BeamNG.

    Args:
        name: ground model name, upper case (``"ASPHALT"`` is the drivable ground of every level).
        static: new ``staticFrictionCoefficient`` [-] (peak friction).
        sliding: new ``slidingFrictionCoefficient`` [-].

    Returns:
        The chunk for ``bng.control.queue_lua_command``.

    Raises:
        ConfigError: bad name or a coefficient outside :data:`COEFFICIENT_RANGE`.
    """
    return _render(GroundModelUpdate(name, static, sliding))


def render_ground_models_lua(updates: Iterable[GroundModelUpdate]) -> str:
    """Render several template blocks as one chunk (one round trip for all surfaces).

    Raises:
        ConfigError: ``updates`` is empty.
    """
    blocks = [_render(update) for update in updates]
    if not blocks:
        raise ConfigError("render_ground_models_lua needs at least one GroundModelUpdate")
    return "\n".join(blocks)


def parse_ground_model_lua(chunk: str) -> tuple[GroundModelUpdate, ...] | None:
    """Recognise a chunk made only of :func:`render_ground_model_lua` blocks.

    Whitespace between and around blocks is allowed; anything else makes the chunk foreign.

    Args:
        chunk: a GE Lua chunk as received in ``QueueLuaCommandGE``.

    Returns:
        The updates in order, or ``None`` when the chunk is not (only) the template or a value
        in it is out of range.
    """
    updates: list[GroundModelUpdate] = []
    pos = _SEPARATOR_RE.match(chunk, 0).end()
    while pos < len(chunk):
        match = _BLOCK_RE.match(chunk, pos)
        if match is None:
            return None
        try:
            updates.append(
                GroundModelUpdate(match["name"], float(match["static"]), float(match["sliding"]))
            )
        except ConfigError:
            return None
        pos = _SEPARATOR_RE.match(chunk, match.end()).end()
    return tuple(updates) if updates else None


def _render(update: GroundModelUpdate) -> str:
    return _BLOCK_TEMPLATE.format(
        tag=TEMPLATE_TAG,
        name=update.name,
        static=_lua_number(update.static),
        sliding=_lua_number(update.sliding),
    )


def _lua_number(value: float) -> str:
    """Shortest text that reads back as exactly ``value`` (valid Lua and Python)."""
    return repr(float(value))
