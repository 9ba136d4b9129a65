"""Wheel friction and surface tested only near patches (eager CPU) equal testing every car."""

from __future__ import annotations

import math

import pytest
import torch

from gym_s3.errors import ConfigError
from gym_s3.tracks.surfaces import RectPatch, SurfaceBatch, SurfaceLayout
from gym_s3.vehicle.params import SEDAN


def test_culled_friction_equals_the_full_lookup_at_patch_edges() -> None:
    """Cars whose centre is outside a patch but whose wheel is on it keep that wheel's friction."""
    ice = RectPatch(cx=0.0, cy=0.0, yaw=0.3, length=6.0, width=2.0, mu=0.1)
    snow = RectPatch(cx=30.0, cy=5.0, yaw=-1.0, length=10.0, width=4.0, mu=0.3, surface="snow")
    layouts = [SurfaceLayout(), SurfaceLayout(patches=(ice,)), SurfaceLayout(patches=(ice, snow))]
    batch = SurfaceBatch.stack(layouts, dtype=torch.float64)
    gen = torch.Generator().manual_seed(0)
    n = 3000
    per_car = batch.index(torch.randint(0, 3, (n,), generator=gen))
    centre = torch.rand(n, 2, generator=gen, dtype=torch.float64) * torch.tensor([50.0, 20.0])
    centre -= torch.tensor([8.0, 6.0])
    yaw = torch.rand(n, generator=gen, dtype=torch.float64) * 2 * math.pi
    off = SEDAN.wheel_positions(dtype=torch.float64)
    c, s = torch.cos(yaw)[:, None], torch.sin(yaw)[:, None]
    wheels = torch.stack([centre[:, :1] + off[:, 0] * c - off[:, 1] * s,
                          centre[:, 1:] + off[:, 0] * s + off[:, 1] * c], -1)  # fmt: skip
    reach = float(off.norm(dim=-1).max())
    full, full_id = per_car.lookup(wheels)
    culled, culled_id = per_car.lookup(wheels, centre=centre, reach=reach)
    centre_inside = per_car.lookup(centre[:, None, :])[0][:, 0] < 1.0
    wheel_only = (full < 1.0).any(dim=1) & ~centre_inside
    assert int(wheel_only.sum()) > 20  # the edge cases the reach exists for are exercised
    assert torch.equal(culled, full)
    assert torch.equal(culled_id, full_id)  # the surface ids too
    assert torch.equal(per_car.friction_at(wheels, centre=centre, reach=reach), full)
    # a single layout shared by every car takes the same path
    shared = SurfaceBatch.stack([layouts[2]], dtype=torch.float64)
    assert torch.equal(
        shared.friction_at(wheels, centre=centre, reach=reach), shared.lookup(wheels)[0]
    )


def test_a_centre_per_row_is_required() -> None:
    """Centres that do not match the rows one to one are refused with the shape they need."""
    batch = SurfaceBatch.stack([SurfaceLayout()], dtype=torch.float64)
    wheels = torch.zeros(5, 4, 2, dtype=torch.float64)
    with pytest.raises(ConfigError, match=r"centre must have shape \(5, 2\)"):
        batch.lookup(wheels, centre=torch.zeros(4, 2, dtype=torch.float64), reach=2.0)
