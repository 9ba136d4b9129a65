"""The scripted expert as an input device of the collection session (``ExpertInput``)."""

from __future__ import annotations

import pytest
import torch
from path_helpers import cars_on_road

from gym_s3.errors import ConfigError
from gym_s3.scenarios.pool import PoolConfig, ScenarioPool
from gym_s3.tracks import SurfaceLayout, get_track
from wheel_collector.commands import SAFE_COMMAND, InputStatus
from wheel_collector.expert import BatchedExpert, ExpertConfig, ExpertInput, PerturbationConfig

QUIET = ExpertConfig(perturbations=PerturbationConfig.none())


def test_expert_input_is_an_input_source() -> None:
    """NO_DEVICE and SAFE_COMMAND until observed; then live expert commands; closed -> safe."""
    pool = ScenarioPool.build([get_track("putnam")], [[SurfaceLayout.uniform("asphalt")]],
                              PoolConfig(), starts=[[0.0]])  # fmt: skip
    source = ExpertInput(QUIET, seed=2)
    reading = source.poll()
    assert reading.status is InputStatus.NO_DEVICE and reading.command == SAFE_COMMAND
    one = torch.zeros(1, dtype=torch.int64)
    track, ego = cars_on_road(pool, one, torch.tensor([50.0]), speed=5.0)
    smp = track.measure(ego)
    source.observe(ego, smp, track)
    reading = source.poll()
    assert reading.live and reading.command.source == "expert"
    expected = BatchedExpert(1, QUIET, seed=2).act(ego, smp, track)[0]
    assert reading.command.steer == pytest.approx(float(expected[0]), abs=1e-6)
    assert reading.command.accel == pytest.approx(float(expected[1]), abs=1e-6)
    source.close()
    assert source.poll().command == SAFE_COMMAND
    two, two_ego = cars_on_road(pool, torch.zeros(2, dtype=torch.int64), torch.tensor([50.0, 60.0]))
    with pytest.raises(ConfigError, match="one car"):
        source.observe(two_ego, two.measure(two_ego), two)
