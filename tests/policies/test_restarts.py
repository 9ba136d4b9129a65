"""The restart check tells a policy that gets going from standstill from one that never does.

Three scripted drivers on the same starts (at rest, up to 2 m off the line and 0.8 rad turned
away, asphalt and snow; float64 eager reference physics, no compilation): one that brakes for
ever must score 0 and stall every car; one that drives in circles at full lock must score 0 too
(it covers 5 m on some starts before it leaves the road or spins: a check that counted the
progress of cars that failed gives it 8-33 %); one that steers at the 5 m lookahead point with
half throttle must get going from nearly every start.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import torch
from torch import Tensor

from gym_s3.errors import ConfigError
from policies.restarts import RestartConfig, restart_check

#: observation columns of the 5 m lookahead point's car-frame y (see gym_s3.observations)
_LOOK5_Y = 12


@dataclass
class _Scripted:
    """A stand-in for :class:`policies.checkpoint.Policy`: ``act(obs)`` from a rule."""

    accel: float
    steer_gain: float
    steer_bias: float = 0.0
    obs_mode: str = "default"

    def act(self, obs: Tensor) -> Tensor:
        steer = -self.steer_gain * obs[:, _LOOK5_Y] + self.steer_bias  # BeamNG: +1 steers right
        steer = steer.clamp(-1.0, 1.0)
        return torch.stack([steer, torch.full_like(steer, self.accel)], dim=-1)


CONFIG = RestartConfig(tracks=("procedural:301",), surfaces=("asphalt", "snow"), starts=4,
                       cars=24, seconds=6.0, stall_time_s=3.0, min_progress_m=5.0,
                       fast=False)  # fmt: skip


def test_drivers_that_brake_or_circle_score_nothing_and_one_that_drives_gets_going():
    """Braking: 0 and every car stalled; circling: 0; steering at the line: >= 90 % / 75 %."""
    braking, circling, driving = restart_check(
        [("brakes", _Scripted(accel=-1.0, steer_gain=0.0)),
         ("circles", _Scripted(accel=0.6, steer_gain=0.0, steer_bias=1.0)),
         ("drives", _Scripted(accel=0.5, steer_gain=0.5))],
        CONFIG,
    )  # fmt: skip
    assert circling.drove_on == {"asphalt": 0.0, "snow": 0.0}
    assert braking.drove_on == {"asphalt": 0.0, "snow": 0.0}
    assert braking.stalled == {"asphalt": 1.0, "snow": 1.0}
    assert braking.cars == {"asphalt": 12, "snow": 12}
    assert driving.drove_on["asphalt"] >= 0.9 and driving.drove_on["snow"] >= 0.75
    assert driving.stalled == {"asphalt": 0.0, "snow": 0.0}
    assert driving.overall == pytest.approx(sum(driving.drove_on.values()) / 2)


def test_bad_restart_settings_say_what_is_wrong():
    """Impossible settings raise a ConfigError naming the setting."""
    with pytest.raises(ConfigError, match="seconds"):
        RestartConfig(seconds=0.0)
    with pytest.raises(ConfigError, match="heading_rad"):
        RestartConfig(heading_rad=-0.1)


def test_each_car_is_counted_under_the_surface_of_its_own_lap():
    """Two tracks x three surfaces: the surface a car is counted under is its lap's base."""
    from policies.restarts import _pool, _surface_of

    config = RestartConfig(tracks=("procedural:301", "procedural:302"),
                           surfaces=("asphalt", "snow", "ice"), starts=3, cars=18)  # fmt: skip
    pool = _pool(config)
    scenario = torch.arange(config.cars) % int(pool.scenario_variant.numel())
    surface = _surface_of(pool, scenario, config)
    bases = [pool.layouts[int(v)].base for v in pool.scenario_variant[scenario]]
    assert [config.surfaces[int(k)] for k in surface] == bases
    assert set(bases) == set(config.surfaces)
    with pytest.raises(ConfigError, match="one car per start place"):
        RestartConfig(cars=10)
