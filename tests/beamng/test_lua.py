"""The friction Lua template: rendering, exact recognition, and the patch material table."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gym_s3.beamng.lua import (
    GroundModelUpdate,
    parse_ground_model_lua,
    render_ground_model_lua,
    render_ground_models_lua,
)
from gym_s3.beamng.materials import PATCH_MATERIALS, ground_model_of_material, patch_material
from gym_s3.errors import ConfigError
from gym_s3.tracks.surfaces import SURFACES

names = st.from_regex(r"[A-Z][A-Z0-9_]{0,20}", fullmatch=True)
coefficients = st.floats(min_value=1e-6, max_value=3.0, allow_nan=False, allow_infinity=False)


@given(names, coefficients, coefficients)
def test_render_parse_round_trip_is_exact(name: str, static: float, sliding: float) -> None:
    """Whatever the env renders, the stand-in reads back bit for bit."""
    chunk = render_ground_model_lua(name, static, sliding)
    assert parse_ground_model_lua(chunk) == (GroundModelUpdate(name, static, sliding),)


def test_several_blocks_in_one_chunk() -> None:
    """A chunk of several template blocks (with blank lines around) yields all updates in order."""
    updates = (GroundModelUpdate("ASPHALT", 0.7, 0.6), GroundModelUpdate("ICE", 0.08, 0.05))
    chunk = "\n\n" + render_ground_models_lua(updates) + "\n"
    assert parse_ground_model_lua(chunk) == updates


def test_template_is_the_beamng_ground_model_edit() -> None:
    """The chunk edits core_environment's cdata and hands it to be:setGroundModel."""
    chunk = render_ground_model_lua("ASPHALT", 0.25, 0.2)
    assert "core_environment.groundModels['ASPHALT']" in chunk
    assert "gm.cdata.staticFrictionCoefficient = 0.25" in chunk
    assert "gm.cdata.slidingFrictionCoefficient = 0.2" in chunk
    assert "be:setGroundModel('ASPHALT', gm.cdata)" in chunk


@pytest.mark.parametrize(
    "chunk",
    [
        "",
        "print('hello')",
        render_ground_model_lua("ASPHALT", 0.5, 0.4).replace("0.5", "0.5 + 0.1"),
        render_ground_model_lua("ASPHALT", 0.5, 0.4) + "\nprint('x')",
        render_ground_model_lua("ASPHALT", 0.5, 0.4).replace("'ASPHALT', gm", "'ICE', gm"),
        render_ground_model_lua("ASPHALT", 0.5, 0.4).replace("0.5", "9.5"),  # out of range
        render_ground_model_lua("ASPHALT", 0.5, 0.4).replace("  local", "local"),
    ],
)
def test_anything_but_the_template_is_foreign(chunk: str) -> None:
    """Edited, extended, out-of-range or unrelated chunks are not recognised."""
    assert parse_ground_model_lua(chunk) is None


@pytest.mark.parametrize(
    ("name", "static", "sliding", "match"),
    [
        ("asphalt", 1.0, 0.9, "upper case"),
        ("ASPHALT", float("nan"), 0.9, "finite"),
        ("ASPHALT", 1.0, 0.0, r"\(0.0, 3.0\]"),
        ("ASPHALT", True, 0.9, "number"),
    ],
)
def test_render_rejects_bad_values(name: str, static: float, sliding: float, match: str) -> None:
    """Bad names and coefficients raise ConfigError naming the problem."""
    with pytest.raises(ConfigError, match=match):
        render_ground_model_lua(name, static, sliding)
    with pytest.raises(ConfigError, match="at least one"):
        render_ground_models_lua([])


def test_patch_materials_cover_every_surface() -> None:
    """Each project surface has exactly one patch material, and the lookup goes both ways."""
    assert sorted(PATCH_MATERIALS.values()) == sorted(s.ground_model for s in SURFACES.values())
    for surface in SURFACES.values():
        material = patch_material(surface.ground_model)
        assert ground_model_of_material(material) == surface.ground_model
    assert ground_model_of_material("tig_road_rubber_sticky") is None
    assert ground_model_of_material(None) is None
    with pytest.raises(ConfigError, match="known ground models"):
        patch_material("LAVA")
