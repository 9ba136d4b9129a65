"""The scripted expert as a lap driver: the reference row of every lap table.

:class:`ExpertDriver` drives the laps of :func:`policies.evaluate.drive_laps` exactly as a policy
does (same env, layout, start and task, so the same metrics), with the scripted expert's
pure-pursuit + PI controller reading the car's state and the lap's reference path instead of an
observation. It runs without noise, perturbations or a speed scale, so its lap is the expert's
best effort on the friction-aware target speeds, and a policy's ratio to it says how far the
policy is from the driver that produced its training data.

The controller is the library's :class:`gym_s3.drivers.expert.BatchedExpert`; the road it reads
(projection, target speeds, friction under the wheels) is the env's own
:class:`~gym_s3.task.TrackingTask`, so the expert sees exactly what the task scores.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gym_s3.errors import ConfigError

#: Name of the expert's rows in the lap tables.
EXPERT = "expert"


def expert_controller(seed: int, n: int = 1) -> Any:
    """The scripted expert of ``n`` cars without noise, perturbations or speed scale.

    The one configuration of the expert's lap rows: :class:`ExpertDriver` drives one car with
    it, the batched lap runner (:mod:`policies.evaluate_model`) every expert lap of a table.
    """
    from gym_s3.drivers.expert import BatchedExpert, ExpertConfig, PerturbationConfig

    config = ExpertConfig(steer_noise=0.0, accel_noise=0.0, speed_scale=(1.0, 1.0),
                          perturbations=PerturbationConfig.none())  # fmt: skip
    return BatchedExpert(n, config, seed=seed)


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
        self._expert = expert_controller(seed)
        self._env: Any = None

    def start(self, env: Any) -> None:
        """A lap begins in ``env``: follow its reference path, layout and target speeds."""
        inner = env.unwrapped
        if not all(hasattr(inner, k) for k in ("ego", "task")):
            raise ConfigError(
                f"the scripted expert drives S3BeamNG-v0 or one car of S3Distilled-v0 (it reads "
                f"ego and task); got {type(inner).__name__}"
            )
        self._env = inner
        self._expert.reset()

    def act(self, obs: np.ndarray) -> np.ndarray:
        """``(1, 2)`` float32 ``[steer, accel]`` for the car's state (``obs`` is not used)."""
        if self._env is None:
            raise ConfigError("ExpertDriver.act called before start(env)")
        ego, task = self._env.ego, self._env.task
        return self._expert.act(ego, task.measure(ego), task).numpy()
