"""S3BeamNG-v0 through the real beamngpy client against the open stand-in (loopback TCP)."""

from __future__ import annotations

import socket
import time

import numpy as np
import pytest

pytest.importorskip("beamngpy")

from path_helpers import make_straight  # noqa: E402

from gym_s3.envs.beamng import S3BeamNGEnv  # noqa: E402
from gym_s3.errors import (  # noqa: E402
    ActionError,
    ConfigError,
    SimulatorConnectionError,
    SimulatorTimeoutError,
)
from gym_s3.scenarios.pool import PoolConfig  # noqa: E402
from gym_s3.spec import single_action_space, single_observation_space  # noqa: E402
from gym_s3.task import TaskConfig  # noqa: E402
from gym_s3.tracks.surfaces import RectPatch, SurfaceLayout  # noqa: E402

pytestmark = pytest.mark.timeout(240)


def _straight_env(layout: SurfaceLayout, **kwargs) -> S3BeamNGEnv:
    """A straight 600 m road, start at 20 m/s (a fraction of the straight's target speed)."""
    frac = 20.0 / PoolConfig().speed.v_max
    task = TaskConfig(max_episode_steps=2000, start_speed_fraction=(frac, frac),
                      start_lateral_m=0.0, start_heading_rad=0.0)  # fmt: skip
    from gym_s3.envs.beamng import BeamNGEnvConfig

    return S3BeamNGEnv(config=BeamNGEnvConfig(task=task), reference=make_straight(600.0),
                       layout=layout, standin=True, **kwargs)  # fmt: skip


def _brake_to_stop(env: S3BeamNGEnv) -> tuple[float, float]:
    """Full brake from the start; returns (start speed, distance until v < 0.3 m/s) [m/s, m]."""
    obs, _ = env.reset(seed=0)
    v0 = float(obs[0])
    s0 = None
    for _ in range(1500):
        obs, _, term, trunc, info = env.step(np.array([0.0, -1.0], dtype=np.float32))
        s0 = info["s"] if s0 is None else s0
        if obs[0] < 0.3 or term or trunc:
            break
    return v0, info["s"]


def test_spaces_are_the_spec():
    """The env's spaces are exactly the shared spec's (same as S3Distilled-v0)."""
    env = S3BeamNGEnv(standin=True, obs_mode="oracle")
    assert env.observation_space == single_observation_space("oracle")
    assert env.action_space == single_action_space()
    env.close()


@pytest.mark.slow  # ~25 s of driving; the ice-patch test below covers friction in the default run
def test_braking_distance_scales_with_friction():
    """From 20 m/s, full braking on ice takes ~mu_asphalt/mu_ice (10x) the asphalt distance."""
    dist = {}
    for surface in ("asphalt", "ice"):
        env = _straight_env(SurfaceLayout.uniform(surface))
        v0, d = _brake_to_stop(env)
        env.close()
        assert v0 == pytest.approx(20.0, abs=0.5)
        dist[surface] = d
    ratio = dist["ice"] / dist["asphalt"]
    assert 20.0 < dist["asphalt"] < 40.0, dist
    assert 6.0 < ratio < 14.0, dist


def test_ice_patch_changes_motion_only_while_on_it():
    """Braking over a rectangle of ice decelerates less only while the car is on the patch."""
    patch = RectPatch(cx=40.0, cy=0.0, yaw=0.0, length=20.0, width=9.0, mu=0.1, surface="ice")
    runs = {}
    for name, layout in (("dry", SurfaceLayout.uniform("asphalt")),
                         ("patch", SurfaceLayout(patches=(patch,)))):  # fmt: skip
        env = _straight_env(layout)
        env.reset(seed=0)
        trace = []
        for _ in range(110):
            obs, _, _, _, info = env.step(np.array([0.0, -0.2], dtype=np.float32))
            trace.append((info["s"], float(obs[0])))
        env.close()
        runs[name] = np.array(trace)
    dry, ice = runs["dry"], runs["patch"]
    before = dry[:, 0] < 25.0
    assert before.sum() > 5
    np.testing.assert_allclose(ice[before, 1], dry[before, 1], atol=1e-4)

    def decel(run: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(position, speed, deceleration) of every step while the car still moves."""
        a = -np.diff(run[:, 1]) / 0.05
        moving = run[1:, 1] > 2.0
        return run[1:, 0][moving], run[1:, 1][moving], a[moving]

    s_dry, v_dry, a_dry = decel(dry)
    s_ice, v_ice, a_ice = decel(ice)
    on = (s_ice > 33.0) & (s_ice < 47.0)
    after = s_ice > 53.0
    assert on.sum() >= 3 and after.sum() >= 3
    # on the patch (x in 30..50 m) braking grips far less than on asphalt at that speed ...
    dry_same_speed = np.interp(v_ice[on], v_dry[::-1], a_dry[::-1])
    assert (a_ice[on] < 0.4 * dry_same_speed).all()
    # ... and once off it the car decelerates exactly like on asphalt at the same speed.
    dry_same_speed = np.interp(v_ice[after], v_dry[::-1], a_dry[::-1])
    np.testing.assert_allclose(a_ice[after], dry_same_speed, rtol=0.1)


def test_same_seed_same_rollout_and_check_env():
    """Two resets with the same seed give bitwise-identical rollouts; check_env passes."""
    from gymnasium.utils.env_checker import check_env

    env = S3BeamNGEnv(standin=True, max_episode_steps=50)
    check_env(env, skip_render_check=True)
    rollouts = []
    for _ in range(2):
        obs, _ = env.reset(seed=3)
        seq = [obs]
        for k in range(20):
            obs, *_ = env.step(np.array([0.3 * np.sin(k / 3), 0.6], dtype=np.float32))
            seq.append(obs)
        rollouts.append(np.stack(seq))
    env.close()
    np.testing.assert_array_equal(rollouts[0], rollouts[1])


def test_bad_actions_are_refused_clearly():
    """NaN and wrong-shape actions raise ActionError naming the problem; out-of-range is clipped."""
    env = S3BeamNGEnv(standin=True)
    env.reset(seed=0)
    with pytest.raises(ActionError, match="NaN"):
        env.step(np.array([np.nan, 0.0]))
    with pytest.raises(ActionError, match=r"shape \(2,\)"):
        env.step(np.zeros((1, 2)))
    obs, *_ = env.step(np.array([5.0, -5.0]))
    assert obs[3] == 1.0 and obs[4] == -1.0  # previous action clipped to the unit box
    env.close()


def test_nothing_listening_names_the_fix():
    """With no simulator on the port, reset says how to start the stand-in."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = S3BeamNGEnv(port=port, socket_timeout=1.0)
    with pytest.raises(SimulatorConnectionError, match="s3 standin"):
        env.reset()
    env.close()


def test_server_killed_mid_episode_gives_clear_error_fast():
    """Stopping the stand-in mid-episode raises a simulator error within the timeout, no hang."""
    env = S3BeamNGEnv(standin=True, socket_timeout=2.0)
    env.reset(seed=0)
    env.step(np.array([0.0, 0.5], dtype=np.float32))
    env.link.server.stop()
    t0 = time.monotonic()
    with pytest.raises((SimulatorConnectionError, SimulatorTimeoutError)):
        for _ in range(3):
            env.step(np.array([0.0, 0.5], dtype=np.float32))
    assert time.monotonic() - t0 < 15.0
    env.close()


def test_a_pool_scenario_is_driven_where_the_distilled_env_drives_it():
    """``scenarios``/``scenario`` place the car on that pool scenario's path, layout and start.

    The env's reference, layout and start equal the pool's for that index, and the task is the
    distilled env's (400-step episodes), not the lap's.
    """
    from gym_s3.envs.config import ScenarioConfig
    from gym_s3.envs.pools import scenario_placement, scenario_source

    source = scenario_source(ScenarioConfig(labels=("hard_braking",)))
    env = S3BeamNGEnv(standin=True, scenarios="hard_braking", scenario=3)
    try:
        place = scenario_placement(source, 3)
        assert env.reference is place["reference"] and env.layout == place["layout"]
        assert env.config.start_s == place["start_s"]
        assert env.config.task == TaskConfig()
        drawn = S3BeamNGEnv(standin=True, scenarios=("hard_braking",), layout_seed=5)
        assert drawn.config.scenario is not None and 0 <= drawn.config.scenario < len(
            source.pool.scenario_variant
        )
    finally:
        env.close()
    with pytest.raises(ConfigError, match="outside the pool"):
        S3BeamNGEnv(standin=True, scenarios="hard_braking", scenario=10**6)
    with pytest.raises(ConfigError, match="valid labels"):
        S3BeamNGEnv(standin=True, scenarios="drifting")
    with pytest.raises(ConfigError, match=r"drop \['ice_patches', 'surface'\]"):
        S3BeamNGEnv(standin=True, scenarios="hard_braking", surface="ice", ice_patches=3)
    from gym_s3.envs.beamng import BeamNGEnvConfig

    via_config = S3BeamNGEnv(config=BeamNGEnvConfig(scenarios=("hard_braking",)), standin=True)
    assert via_config.config.task == TaskConfig()  # the same task as with keyword options
