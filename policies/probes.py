"""Counterfactual probes: which part of its observation makes a policy brake where it stalled?

A lap that ends ``stalled`` is a car that came to rest while the policy kept braking.
:func:`find_stall` drives the lap in ``S3Distilled-v0`` and keeps the observation at which the car
has stood (forward speed below ``stall_speed_mps``) for ``standing_s`` seconds; :func:`probe_stall`
asks the policy for its action on copies of that observation with one group of features edited
(:data:`PROBES`: tracking errors zeroed, the speed raised, the lookahead target speeds scaled, the
road ahead straightened). An edit that flips brake to throttle names what the policy brakes for, and
:func:`expert_action_at` says what the scripted expert (the teacher of the taught recipes) would do
in the same state.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from gym_s3.errors import ConfigError
from gym_s3.spec import CONTROL_DT_S, LOOKAHEAD_M, observation_features
from policies.checkpoint import Policy

__all__ = ["PROBES", "Stall", "expert_action_at", "find_stall", "probe_stall"]


@dataclass(frozen=True)
class Stall:
    """Where a policy's car stood still.

    Attributes:
        step: control step of the kept observation (the car has stood ``standing_s`` by then).
        observation: ``(F,)`` the observation at ``step`` (float32, the env's spec).
        action: ``(2,)`` the policy's ``[steer, accel]`` there.
        names: ``(F,)`` feature names of the observation (:func:`gym_s3.spec.observation_features`).
    """

    step: int
    observation: np.ndarray
    action: np.ndarray
    names: tuple[str, ...]

    def feature(self, name: str) -> float:
        """The value of one named feature."""
        return float(self.observation[self.names.index(name)])


def _edit(**values: float) -> Callable[[np.ndarray, tuple[str, ...]], np.ndarray]:
    """A probe that sets named features to fixed values."""

    def apply(obs: np.ndarray, names: tuple[str, ...]) -> np.ndarray:
        for name, value in values.items():
            obs[names.index(name)] = value
        return obs

    return apply


def _speed(v: float) -> Callable[[np.ndarray, tuple[str, ...]], np.ndarray]:
    """A probe that sets the forward speed to ``v`` [m/s] and moves the speed error with it."""

    def apply(obs: np.ndarray, names: tuple[str, ...]) -> np.ndarray:
        i, j = names.index("v_long"), names.index("speed_error")
        obs[j] += v - obs[i]
        obs[i] = v
        return obs

    return apply


def _scale_targets(factor: float) -> Callable[[np.ndarray, tuple[str, ...]], np.ndarray]:
    """A probe that scales every target speed (lookahead and the one in the speed error)."""

    def apply(obs: np.ndarray, names: tuple[str, ...]) -> np.ndarray:
        for d in LOOKAHEAD_M:
            obs[names.index(f"ref_v_{d:g}m")] *= factor
        v, j = obs[names.index("v_long")], names.index("speed_error")
        obs[j] = v - factor * (v - obs[j])  # speed error = v - target
        return obs

    return apply


def _straight(obs: np.ndarray, names: tuple[str, ...]) -> np.ndarray:
    """The lookahead points straight ahead of the car, at their arc-length distances."""
    for d in LOOKAHEAD_M:
        obs[names.index(f"ref_x_{d:g}m")] = d
        obs[names.index(f"ref_y_{d:g}m")] = 0.0
    return obs


#: The probes: name -> edit of a copy of the observation (features by name).
PROBES: dict[str, Callable[[np.ndarray, tuple[str, ...]], np.ndarray]] = {
    "as observed": lambda obs, names: obs,
    "no cross-track error": _edit(cross_track_error=0.0),
    "no heading error": _edit(heading_error=0.0),
    "no cross-track or heading error": _edit(cross_track_error=0.0, heading_error=0.0),
    "no previous action": lambda obs, names: _edit(
        **{n: 0.0 for n in ("prev_steer", "prev_accel", "steer_1", "accel_1") if n in names}
    )(obs, names),
    "speed 2 m/s": _speed(2.0),
    "target speeds x2": _scale_targets(2.0),
    "target speeds x3": _scale_targets(3.0),
    "straight road ahead": _straight,
}


def find_stall(
    policy: Policy,
    env: Any,
    *,
    standing_s: float = 2.0,
    stall_speed_mps: float = 0.5,
    seed: int = 0,
    max_steps: int | None = None,
) -> Stall | None:
    """Drive one episode of ``env`` with ``policy``; the observation once the car has stood.

    The standing start does not count: the clock starts once the car has first moved faster
    than ``stall_speed_mps`` (on ice a car needs about 2.5 s to get there from rest).

    Args:
        policy: the driver (deterministic actions).
        env: a single-car env of the shared spec (e.g.
            :func:`policies.evaluate_distilled.distilled_lap_env`), in ``policy.obs_mode``.
        standing_s: how long the car must have stood without a break [s].
        stall_speed_mps: forward speed below which the car counts as standing [m/s].
        seed: reset seed.
        max_steps: cap on the steps driven (``None``: until the episode ends).

    Returns:
        The :class:`Stall`, or ``None`` when the car never stood that long.

    Raises:
        ConfigError: ``standing_s`` or ``stall_speed_mps`` is not a positive number.
    """
    if not (standing_s > 0 and stall_speed_mps > 0):
        raise ConfigError(
            f"standing_s [s] and stall_speed_mps [m/s] must be positive numbers, got "
            f"{standing_s} and {stall_speed_mps}"
        )
    names = tuple(f.name for f in observation_features(policy.obs_mode))
    speed = names.index("v_long")
    need = max(1, round(standing_s / CONTROL_DT_S))
    obs, _ = env.reset(seed=seed)
    standing, step, moved = 0, 0, False
    while max_steps is None or step < max_steps:
        action = np.asarray(policy.act(np.asarray(obs, dtype=np.float32)), dtype=np.float32)
        still = abs(float(obs[speed])) < stall_speed_mps
        moved = moved or not still
        standing = standing + 1 if still and moved else 0
        if standing >= need:
            return Stall(step=step, observation=np.array(obs, dtype=np.float32), action=action,
                         names=names)  # fmt: skip
        obs, _, terminated, truncated, _ = env.step(action)
        step += 1
        if terminated or truncated:
            return None
    return None


def probe_stall(policy: Policy, stall: Stall) -> dict[str, np.ndarray]:
    """The policy's ``(2,)`` action on each :data:`PROBES` edit of the stall's observation."""
    return {
        name: np.asarray(policy.act(edit(stall.observation.copy(), stall.names)), dtype=np.float32)
        for name, edit in PROBES.items()
    }


def expert_action_at(env: Any, *, seed: int = 0) -> np.ndarray:
    """The noise-free scripted expert's ``(2,)`` ``[steer, accel]`` at ``env``'s current state.

    A fresh expert (its speed controller's integral cleared), as the taught recipes' labels of a
    car that has just started: after :func:`find_stall`, the env still holds the stall's state.

    Args:
        env: ``S3BeamNG-v0`` or a one-car ``S3Distilled-v0`` (the envs the expert reads).
        seed: seed of the expert (it draws nothing when noise-free).
    """
    from policies.expert_driver import ExpertDriver

    expert = ExpertDriver(seed)
    expert.start(env)
    return np.asarray(expert.act(np.zeros(0, np.float32)), dtype=np.float32).reshape(2)
