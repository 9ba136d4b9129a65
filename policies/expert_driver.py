"""The scripted expert as a lap driver: the reference row of every lap table.

:class:`ExpertDriver` drives the laps of :func:`policies.evaluate.drive_laps` exactly as a policy
does (same env, layout, start and task, so the same metrics), with the scripted expert's
pure-pursuit + PI controller reading the car's state and the lap's reference path instead of an
observation. It runs without noise, perturbations or a speed scale, so its lap is the expert's
best effort on the friction-aware target speeds, and a policy's ratio to it says how far the
policy is from the driver that produced its training data.

The controller itself is :class:`wheel_collector.expert.BatchedExpert`, imported at the one
place below; the episode-loop redesign moves it into ``gym_s3`` (then only that import changes).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gym_s3.errors import ConfigError

#: Name of the expert's rows in the lap tables.
EXPERT = "expert"


def _expert_controller(seed: int) -> Any:
    """A one-car scripted expert without noise, perturbations or speed scale."""
    from wheel_collector.expert import BatchedExpert
    from wheel_collector.expert_config import ExpertConfig, PerturbationConfig

    config = ExpertConfig(steer_noise=0.0, accel_noise=0.0, speed_scale=(1.0, 1.0),
                          perturbations=PerturbationConfig.none())  # fmt: skip
    return BatchedExpert(1, config, seed=seed)


class ExpertDriver:
    """The scripted expert behind the driver interface of :func:`policies.evaluate.run_episode`.

    :meth:`start` is called after each reset with the env (``S3BeamNG-v0`` or the one-car face
    of ``S3Distilled-v0``; both expose ``ego``, ``reference`` and ``layout``), :meth:`act` then
    returns the ``(1, 2)`` action for the car's current state.

    Args:
        seed: seed of the controller (it draws nothing when noise-free; kept for symmetry).
    """

    name = EXPERT
    obs_mode = "default"
    backend = EXPERT

    def __init__(self, seed: int = 0) -> None:
        self._expert = _expert_controller(seed)
        self._env: Any = None
        self._track: Any = None

    def start(self, env: Any) -> None:
        """A lap begins in ``env``: follow its reference path, layout and target speeds."""
        from gym_s3.data.trackside import TrackSide

        inner = env.unwrapped
        if not all(hasattr(inner, k) for k in ("ego", "reference", "layout")):
            raise ConfigError(
                f"the scripted expert drives S3BeamNG-v0 or one car of S3Distilled-v0 (it reads "
                f"ego, reference and layout); got {type(inner).__name__}"
            )
        config = inner.config  # S3BeamNG-v0 holds the pool settings, S3Distilled-v0 its scenario
        pool = config.pool if hasattr(config, "pool") else config.scenario.pool
        self._env = inner
        self._track = TrackSide.single(inner.reference, inner.layout, pool_config=pool)
        self._expert.reset()

    def act(self, obs: np.ndarray) -> np.ndarray:
        """``(1, 2)`` float32 ``[steer, accel]`` for the car's state (``obs`` is not used)."""
        if self._env is None:
            raise ConfigError("ExpertDriver.act called before start(env)")
        ego = self._env.ego
        sample = self._track.measure(ego.x, ego.y, ego.yaw)
        return self._expert.act(ego, sample, self._track).numpy()
