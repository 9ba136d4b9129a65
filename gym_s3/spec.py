"""THE contract shared by ``S3Distilled-v0`` and ``S3BeamNG-v0``: actions, observations, version.

Both environments build their spaces from this module and fill observations with
:func:`gym_s3.observations.build_observation`, so a policy trained in one runs in the other. Every
checkpoint stores :data:`SPEC_VERSION`; loading refuses a mismatch (:func:`check_spec_version`).

Action ``Box(-1, 1, (2,), float32)`` = ``[steer, accel]``: ``steer = +1`` is full right (the
BeamNG and racing-wheel convention), ``accel > 0`` is throttle and ``accel < 0`` brake. Mapped to
BeamNG as ``steering = steer``, ``throttle = max(accel, 0)``, ``brake = max(-accel, 0)``.

Observation (ordered features, float32): ego motion, the previous action, tracking errors, a
lookahead of reference points in the car frame with their target speeds, and, in the ``oracle``
mode only, the friction under each wheel; in the ``history`` mode only, what the car did in each of
the last :data:`HISTORY_STEPS` control steps (its measured accelerations and the action applied),
from which a policy can infer the grip it has. Angles are radians, distances metres, speeds m/s.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from gym_s3.errors import CheckpointError, ConfigError

#: Bump on any change of meaning, order, units or bounds of actions or observations.
SPEC_VERSION = 1
#: Control period of both environments [s] (20 Hz).
CONTROL_DT_S = 0.05
#: Arc-length distances ahead of the car's projection at which reference points are observed [m].
LOOKAHEAD_M: tuple[float, ...] = (2.0, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 65.0, 80.0)
#: Wheel order used for every per-wheel quantity.
WHEELS: tuple[str, ...] = ("fl", "fr", "rl", "rr")

#: Control steps the ``history`` observation mode looks back (0.2 s at 20 Hz).
HISTORY_STEPS = 4

ObsMode = Literal["default", "oracle", "history"]
OBS_MODES: tuple[str, ...] = ("default", "oracle", "history")


@dataclass(frozen=True)
class Feature:
    """One scalar of an action or observation vector.

    Attributes:
        name: unique identifier.
        unit: SI unit (``"1"`` for dimensionless).
        low: lower bound (observations are clipped to it).
        high: upper bound.
        description: meaning and sign convention.
    """

    name: str
    unit: str
    low: float
    high: float
    description: str


ACTION_FEATURES: tuple[Feature, ...] = (
    Feature("steer", "1", -1.0, 1.0, "steering command; +1 = full right, -1 = full left"),
    Feature("accel", "1", -1.0, 1.0, "throttle pedal if > 0, brake pedal if < 0"),
)
ACTION_SIZE = len(ACTION_FEATURES)

_EGO: tuple[Feature, ...] = (
    Feature("v_long", "m/s", -20.0, 80.0, "longitudinal speed in the body frame, + forward"),
    Feature("v_lat", "m/s", -40.0, 40.0, "lateral speed in the body frame, + left"),
    Feature("yaw_rate", "rad/s", -6.0, 6.0, "yaw rate, + counter-clockwise (left turn)"),
    Feature("prev_steer", "1", -1.0, 1.0, "steer of the previous action"),
    Feature("prev_accel", "1", -1.0, 1.0, "accel of the previous action"),
    Feature("cross_track_error", "m", -30.0, 30.0, "lateral offset from the reference, + left"),
    Feature("heading_error", "rad", -np.pi, np.pi, "car heading minus reference heading, wrapped"),
    Feature("speed_error", "m/s", -80.0, 80.0, "v_long minus the reference target speed"),
)


def _lookahead() -> tuple[Feature, ...]:
    feats = []
    for dist in LOOKAHEAD_M:
        tag = f"{dist:g}m"
        feats += [
            Feature(f"ref_x_{tag}", "m", -100.0, 100.0, f"reference point {tag} ahead, car x"),
            Feature(f"ref_y_{tag}", "m", -100.0, 100.0, f"reference point {tag} ahead, car y"),
            Feature(f"ref_v_{tag}", "m/s", 0.0, 80.0, f"target speed {tag} ahead"),
        ]
    return tuple(feats)


_ORACLE: tuple[Feature, ...] = tuple(
    Feature(f"mu_{w}", "1", 0.0, 1.5, f"peak tyre-road friction under the {w.upper()} wheel")
    for w in WHEELS
)


def _history() -> tuple[Feature, ...]:
    feats = []
    for k in range(1, HISTORY_STEPS + 1):
        step = "the last control step" if k == 1 else f"the control step {k - 1} before the last"
        feats += [
            Feature(f"accel_long_{k}", "m/s^2", -30.0, 30.0,
                    f"change of v_long over {step}, per second (0 before the episode's first)"),
            Feature(f"accel_lat_{k}", "m/s^2", -30.0, 30.0,
                    f"change of v_lat over {step}, per second"),
            Feature(f"yaw_accel_{k}", "rad/s^2", -60.0, 60.0,
                    f"change of yaw_rate over {step}, per second"),
            Feature(f"steer_{k}", "1", -1.0, 1.0, f"steer applied in {step}"),
            Feature(f"accel_{k}", "1", -1.0, 1.0, f"accel applied in {step}"),
        ]  # fmt: skip
    return tuple(feats)


#: Values of one history step: 3 measured accelerations and the 2 action components applied.
HISTORY_FRAME = 5


def _check_mode(mode: str) -> None:
    if mode not in OBS_MODES:
        raise ConfigError(f"unknown obs_mode '{mode}'; valid modes: {', '.join(OBS_MODES)}")


#: The ordered features of every mode, built once: a plain dict, so the env's compiled step and
#: reset, which check sizes and bounds, trace no ``functools.cache`` wrapper (dynamo warns about
#: one at every compile).
_MODE_EXTRA: dict[str, tuple[Feature, ...]] = {"default": (), "oracle": _ORACLE,
                                               "history": _history()}  # fmt: skip
_FEATURES: dict[str, tuple[Feature, ...]] = {
    mode: _EGO + _lookahead() + _MODE_EXTRA[mode] for mode in OBS_MODES
}


def observation_features(mode: ObsMode = "default") -> tuple[Feature, ...]:
    """The ordered observation features of ``mode``."""
    _check_mode(mode)
    return _FEATURES[mode]


def observation_size(mode: ObsMode = "default") -> int:
    """Length F of the observation vector of ``mode``."""
    return len(observation_features(mode))


def feature_index(name: str, mode: ObsMode = "default") -> int:
    """Position of feature ``name`` in the observation vector of ``mode``."""
    for i, feat in enumerate(observation_features(mode)):
        if feat.name == name:
            return i
    raise ConfigError(f"no observation feature '{name}' in mode '{mode}'")


def observation_bounds(mode: ObsMode = "default") -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper bounds ``(F,)`` float32 of the observation of ``mode``."""
    feats = observation_features(mode)
    low = np.array([f.low for f in feats], dtype=np.float32)
    high = np.array([f.high for f in feats], dtype=np.float32)
    return low, high


# ---------------------------------------------------------------------------- gymnasium spaces
def single_observation_space(mode: ObsMode = "default"):
    """``Box(low, high, (F,), float32)`` for one car."""
    from gymnasium.spaces import Box

    low, high = observation_bounds(mode)
    return Box(low, high, dtype=np.float32)


def single_action_space():
    """``Box(-1, 1, (2,), float32)`` for one car."""
    from gymnasium.spaces import Box

    return Box(-1.0, 1.0, (ACTION_SIZE,), dtype=np.float32)


def batched_observation_space(mode: ObsMode, num_envs: int):
    """Observation space of a batch of ``num_envs`` cars, ``(num_envs, F)``."""
    from gymnasium.vector.utils import batch_space

    return batch_space(single_observation_space(mode), num_envs)


def batched_action_space(num_envs: int):
    """Action space of a batch of ``num_envs`` cars, ``(num_envs, 2)``."""
    from gymnasium.vector.utils import batch_space

    return batch_space(single_action_space(), num_envs)


# ---------------------------------------------------------------------------- TorchRL specs
def torchrl_specs(mode: ObsMode, num_envs: int, device: Any = "cpu") -> dict[str, Any]:
    """TorchRL specs (with the batch dimension) for a native ``EnvBase`` of ``num_envs`` cars.

    Returns:
        dict with ``observation_spec``, ``action_spec``, ``reward_spec`` and ``done_spec``.
    """
    from gym_s3._optional import require

    require("torchrl", purpose="the TorchRL specs of S3Distilled-v0")
    import torch
    from torchrl.data import Bounded, Categorical, Composite, Unbounded

    low, high = observation_bounds(mode)
    n, f = num_envs, observation_size(mode)
    obs = Bounded(
        low=torch.as_tensor(low).expand(n, f),
        high=torch.as_tensor(high).expand(n, f),
        shape=(n, f),
        dtype=torch.float32,
        device=device,
    )
    flag = Categorical(2, shape=(n, 1), dtype=torch.bool, device=device)
    return {
        "observation_spec": Composite(observation=obs, shape=(n,), device=device),
        "action_spec": Bounded(
            -1.0, 1.0, shape=(n, ACTION_SIZE), dtype=torch.float32, device=device
        ),
        "reward_spec": Unbounded(shape=(n, 1), dtype=torch.float32, device=device),
        "done_spec": Composite(
            done=flag, terminated=flag.clone(), truncated=flag.clone(), shape=(n,), device=device
        ),
    }


# ---------------------------------------------------------------------------- versioning
def check_spec_version(found: Any, what: str) -> None:
    """Refuse an artefact made for another spec version.

    Args:
        found: the ``spec_version`` stored in the artefact (may be missing/None).
        what: description of the artefact for the message, e.g. a file path.

    Raises:
        CheckpointError: naming both versions and what to do.
    """
    if found != SPEC_VERSION:
        raise CheckpointError(
            f"{what} was made for observation/action spec version {found!r}, but this installation "
            f"uses spec version {SPEC_VERSION}. Re-train or re-export it with this version of "
            f"sim2sim2sim, or install the version it was made with."
        )


def spec_summary(mode: ObsMode = "default") -> list[dict[str, Any]]:
    """Feature table (name, unit, bounds, description) for docs, checkpoints and the CLI."""
    return [
        {"index": i, "name": f.name, "unit": f.unit, "low": f.low, "high": f.high,
         "description": f.description}
        for i, f in enumerate(observation_features(mode))
    ]  # fmt: skip
