"""Small, fast ``S3Distilled-v0`` configurations shared by the env and adapter tests.

Pools are cached in-process by config, so every test that uses the same keyword set below pays
for the pool once per session.
"""

from __future__ import annotations

import pytest
import torch
from torch_helpers import SMALL, one_torch_thread

from gym_s3.tracks.layouts import LayoutConfig, PatchConfig

#: Putnam Park on dry asphalt with one full-width, 30 m ice patch; a start every 5 m.
ICE_LAYOUT = LayoutConfig(
    base=("asphalt",),
    patches=PatchConfig(count=(1, 1), length_m=(30.0, 30.0), coverage=(1.0, 1.0)),
)


@pytest.fixture(autouse=True)
def _one_torch_thread(request):
    """Run the ``S3Distilled-v0`` tests (small batches) on one intra-op thread.

    With N of a few cars there is nothing to parallelise, and on a shared, busy 2-core machine
    OpenMP's second thread makes every small op wait for a descheduled peer (3-4x slower steps).
    Other test modules in this folder keep the session setting.
    """
    if not request.module.__name__.startswith("test_distilled"):
        yield
        return
    with one_torch_thread():
        yield


@pytest.fixture
def small_kwargs() -> dict:
    """Keyword arguments of a small env (one track, two layouts)."""
    return dict(SMALL)


@pytest.fixture
def ice_kwargs() -> dict:
    """Keyword arguments of an env whose only layout has one full-width ice patch."""
    from gym_s3.scenarios.pool import PoolConfig

    return {
        "tracks": ("putnam",),
        "layouts_per_track": 1,
        "layout": ICE_LAYOUT,
        "pool": PoolConfig(start_spacing_m=5.0),
        "layout_seed": 3,
    }


def track_reference(obs: torch.Tensor) -> torch.Tensor:
    """A pure-pursuit driver on the observation: steer to the 10 m reference point, hold speed.

    Args:
        obs: ``(N, F)`` observations.

    Returns:
        ``(N, 2)`` actions ``[steer, accel]``.
    """
    from gym_s3.spec import feature_index

    x = obs[:, feature_index("ref_x_10m")]
    y = obs[:, feature_index("ref_y_10m")]
    v = obs[:, feature_index("v_long")]
    v_ref = obs[:, feature_index("ref_v_10m")]
    curvature = 2.0 * y / (x.square() + y.square()).clamp(min=1.0)
    steer = -torch.atan(2.8 * curvature) / 0.45  # +steer = right = negative road-wheel angle
    accel = 0.5 * (v_ref - v)
    return torch.stack([steer, accel], dim=-1).clamp(-1.0, 1.0)


@pytest.fixture
def driver():
    """The reference-tracking driver :func:`track_reference`."""
    return track_reference
