"""Reading the prefab beamngpy renders, and turning cubes into friction patches."""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch

from gym_s3.beamng.frames import wrap_angle, yaw_to_quat
from gym_s3.beamng.standin.ground import Cube, GroundModel, default_ground_models, surface_layout
from gym_s3.beamng.standin.prefab import PrefabError, parse_prefab


def test_prefab_from_beamngpy_scenario(bngpy: Any) -> None:
    """Vehicles (pose, model, options), trailing-comma roads and other objects are all read."""
    scenario = bngpy.Scenario("smallgrid", "prefab_test")
    ego = bngpy.Vehicle("ego", model="etk800", license="S3", color="Red")
    other = bngpy.Vehicle("other", model="pickup")
    scenario.add_vehicle(ego, pos=(1.0, 2.0, 0.5), rot_quat=yaw_to_quat(0.3))
    scenario.add_vehicle(other, pos=(-4.0, 0.0, 0.0), rot_quat=yaw_to_quat(-2.0))
    road = bngpy.Road("tig_road_rubber_sticky", rid="r1")
    road.add_nodes((0, 0, 0, 8), (50, 0, 0, 8), (100, 20, 0, 8))
    scenario.add_road(road)
    mesh = bngpy.MeshRoad("s3_ice", rid="m1")
    mesh.add_nodes((0, 0, 0, 8, 0.1), (10, 0, 0, 8, 0.1))
    scenario.add_mesh_road(mesh)
    scenario.add_checkpoints([(1, 1, 1)], [(1, 1, 1)])

    prefab = parse_prefab(scenario._get_prefab())
    by_name = {v.name: v for v in prefab.vehicles}
    assert set(by_name) == {"ego", "other"}
    assert by_name["ego"].model == "etk800" and by_name["other"].model == "pickup"
    assert by_name["ego"].position == (1.0, 2.0, 0.5)
    assert wrap_angle(by_name["ego"].yaw - 0.3) == pytest.approx(0.0, abs=1e-9)
    assert wrap_angle(by_name["other"].yaw + 2.0) == pytest.approx(0.0, abs=1e-9)
    assert by_name["ego"].options["licenseText"] == "S3"
    classes = {o.cls: o for o in prefab.objects}
    assert set(classes) == {"DecalRoad", "MeshRoad", "BeamNGWaypoint", "SimGroup"}
    assert classes["DecalRoad"].fields["nodes"][2] == [100, 20, 0, 8]
    assert prefab.skipped_lines == 0


def test_unreadable_vehicle_is_an_error_other_lines_are_skipped() -> None:
    """A broken vehicle line raises; a broken object line is skipped and counted."""
    good = '{"name": "a", "class": "BeamNGVehicle", "jBeam": "etk800", "position": [0, 0, 0]}'
    prefab = parse_prefab(good + "\n{ not json at all (1, 2)\n")
    assert [v.name for v in prefab.vehicles] == ["a"] and prefab.skipped_lines == 1
    with pytest.raises(PrefabError, match="looks like a vehicle"):
        parse_prefab('{"class": "BeamNGVehicle", oops}')
    with pytest.raises(PrefabError, match="jBeam"):
        parse_prefab('{"name": "a", "class": "BeamNGVehicle", "position": [0, 0, 0]}')
    with pytest.raises(PrefabError, match="position"):
        parse_prefab('{"name": "a", "class": "BeamNGVehicle", "jBeam": "x", "position": [0, 0]}')


def test_cube_patch_friction_follows_ground_models() -> None:
    """An s3_ice cube is an oriented patch with ICE's friction; unknown materials add none."""
    cube = Cube.from_request("ice", (10.0, 0.0, 0.0), (8.0, 2.0, 0.05), None, "s3_ice")
    rotated = Cube.from_request(
        "snow", (0.0, 20.0, 0.0), (8.0, 2.0, 0.05), _z_quat(math.pi / 2), "s3_snow"
    )
    plain = Cube.from_request("box", (0.0, 0.0, 0.0), (100.0, 100.0, 1.0), None, "plain_mat")
    models = default_ground_models()
    models["ICE"] = GroundModel(0.05, 0.04)
    layout = surface_layout(models, [plain, cube, rotated])
    points = torch.tensor(
        [[[10.0, 0.0], [13.9, 0.9], [10.0, 1.5], [0.0, 23.9], [3.0, 20.0], [50.0, 50.0]]],
        dtype=torch.float64,
    )
    mu = layout.friction_at(points)[0].tolist()
    assert mu == pytest.approx([0.05, 0.05, 1.0, 0.25, 1.0, 1.0])
    models["ASPHALT"] = GroundModel(0.6, 0.5)
    assert surface_layout(models, []).base_mu == 0.6


def _z_quat(angle: float) -> tuple[float, float, float, float]:
    return (0.0, 0.0, math.sin(angle / 2), math.cos(angle / 2))
