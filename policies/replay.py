"""Replay a high-fidelity lap's actions open loop in the distilled models: the model or the policy?

When a policy completes a lap in ``S3Distilled-v0`` and fails it in the high-fidelity simulator,
either its dynamics model moves the car differently under the same actions (the model is wrong
there), or the policy acts differently because it sees other states (the closed loop parts).
:func:`replay_lap` separates the two. It drives the policy's lap in the stand-in's vehicle model
(:func:`policies.evaluate_model.evaluate_model`, the batched high-fidelity physics), then, in each
distilled model the policy trained in:

* replays exactly those actions, one per control step, without looking at the observation
  (:class:`ActionReplay`): the replay's speed and cross-track traces against the high-fidelity
  ones are the model's own error on the policy's actions, compounding along the lap as any
  open-loop prediction does;
* lets the policy drive the same lap closed loop: where its actions part from the
  high-fidelity ones is where the policy saw something else.

The laps start from rest at the line (as ``s3 evaluate`` and ``s3 gap`` drive them). Action
``k`` of the recording is replayed as the replay's action ``k``; the stand-in's reset also takes
one neutral step at rest before the first observation (the teleport's step,
:mod:`policies.evaluate_model`), which the distilled env's does not, so the car the replay starts
is the same car at rest.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gym_s3.errors import ConfigError
from gym_s3.spec import CONTROL_DT_S
from policies.checkpoint import Policy
from policies.evaluate import RunResult, run_episode

__all__ = ["ActionReplay", "LapReplay", "ModelReplay", "replay_lap", "replay_rows"]


@dataclass
class ActionReplay:
    """A driver that gives a recorded action sequence, one per step, whatever it observes.

    Attributes:
        actions: ``(T, 2)`` ``[steer, accel]`` per control step [1]; after the last one it is
            held.
        obs_mode: observation mode of the env it drives (that of the driver it replays).
        name: the driver's name in tables.
    """

    actions: np.ndarray
    obs_mode: str = "default"
    name: str = "replay"
    _step: int = field(default=0, init=False, repr=False)

    def __post_init__(self) -> None:
        actions = np.asarray(self.actions, dtype=np.float32)
        if actions.ndim != 2 or actions.shape[1] != 2 or len(actions) == 0:
            raise ConfigError(
                f"a replay needs a (T, 2) action sequence with T >= 1, got shape {actions.shape}"
            )
        self.actions = actions

    def start(self, env: Any) -> None:
        """Rewind to the first action (:func:`policies.evaluate.run_episode` calls it per reset)."""
        del env
        self._step = 0

    def act(self, obs: np.ndarray) -> np.ndarray:
        """``(B, 2)`` the next recorded action for each of the ``B`` observations ``(B, F)``."""
        action = self.actions[min(self._step, len(self.actions) - 1)]
        self._step += 1
        return np.repeat(action[None], np.asarray(obs).shape[0], axis=0)


@dataclass(frozen=True)
class ModelReplay:
    """One distilled model's two drives of the lap.

    Attributes:
        model: the dynamics model (backend name or checkpoint stem).
        replay: the high-fidelity actions replayed open loop.
        closed_loop: the policy driving the lap itself.
    """

    model: str
    replay: RunResult
    closed_loop: RunResult


@dataclass(frozen=True)
class LapReplay:
    """A lap in the high-fidelity vehicle model and its replays.

    Attributes:
        highfi: the policy's lap in the stand-in's vehicle model (its ``actions`` are replayed).
        models: one :class:`ModelReplay` per distilled model.
    """

    highfi: RunResult
    models: tuple[ModelReplay, ...]


def replay_lap(
    policy: Policy,
    *,
    track: str,
    surface: str,
    ice_patches: int = 0,
    seed: int = 0,
    models: Sequence[str] | None = None,
    max_steps: int | None = None,
    extra_s: float = 10.0,
    fast: bool = True,
) -> LapReplay:
    """Drive ``policy``'s lap in the high-fidelity vehicle model and replay it in each model.

    Args:
        policy: the policy.
        track: the lap's track (e.g. ``"town:4001"``).
        surface: the lap surface (a base surface or a transition such as ``"asphalt>ice"``).
        ice_patches: ice patches on the lap [count].
        seed: the patch placement and episode seed.
        models: distilled models of the policy's backend: paths, the backend's name (its
            shipped model) or shipped sets such as ``"ddm:ice"`` (default: those it trained in
            where its record names ones that can be found, else the backend's shipped model;
            :func:`policies.gap.distilled_models`).
        max_steps: cap on the high-fidelity lap's steps (at least 1).
        extra_s: the distilled closed-loop drive goes on this long past the high-fidelity lap's
            end [s] (the replay stops with the recorded actions).
        fast: the high-fidelity physics in float32 through ``torch.compile`` (as ``s3 evaluate``
            gives the stand-in); ``False``: the float64 eager reference.
    """
    from gym_s3.dynamics.io import shipped_name
    from gym_s3.tracks.lap_layouts import lap_layout
    from gym_s3.tracks.registry import cached_track
    from policies.evaluate_distilled import distilled_lap_env, lap_backend
    from policies.evaluate_model import evaluate_model, lap_grid
    from policies.gap import distilled_models

    if max_steps is not None and max_steps < 1:
        raise ConfigError(f"max_steps must be at least 1, got {max_steps}")
    if extra_s < 0:
        raise ConfigError(f"extra_s must be >= 0 s, got {extra_s}")
    chosen = distilled_models(policy, policy.backend, models)
    for model in chosen:  # a model of another backend is refused before any lap is driven
        lap_backend(policy.backend, None if model == policy.backend else model)
    layout = lap_layout(cached_track(track), surface, ice_patches, seed)  # checks the lap first
    grid = lap_grid([track], [surface], [ice_patches])
    (highfi,) = evaluate_model([(policy.backend, policy)], grid, seed=seed, max_steps=max_steps,
                               expert=False, fast=fast, progress=False)  # fmt: skip
    steps = len(highfi.actions)
    condition = {"track": track, "surface": surface, "ice_patches": ice_patches}
    drives = []
    for model in chosen:
        checkpoint = None if model == policy.backend else model
        runs = []
        for driver, cap in (
            (ActionReplay(highfi.actions, obs_mode=policy.obs_mode), steps),
            (policy, steps + round(extra_s / CONTROL_DT_S)),
        ):
            env = distilled_lap_env(track, layout, backend=policy.backend,
                                    obs_mode=policy.obs_mode, seed=seed,
                                    checkpoint=checkpoint)  # fmt: skip
            try:
                runs.append(run_episode(env, driver, env_name=f"S3Distilled-v0/{model}",
                                        condition=condition, seed=seed, max_steps=cap))  # fmt: skip
            finally:
                env.close()
        drives.append(ModelReplay(shipped_name(model) or str(model), *runs))
    return LapReplay(highfi, tuple(drives))


def replay_rows(lap: LapReplay, model: ModelReplay, every_s: float = 1.0) -> list[dict[str, Any]]:
    """The traces of one model's drives beside the high-fidelity lap, every ``every_s`` seconds.

    Row ``k`` is the state at the end of control step ``k`` (time ``t = (k + 1) * 50 ms`` [s])
    and the action given at that step: the high-fidelity arc length ``s_highfi`` [m], speed
    ``v_highfi`` [m/s], cross-track error ``cte_highfi`` [m] (+ left), pedal ``accel_highfi`` and
    steering ``steer_highfi`` [1]; the replay's ``v_replay`` and ``cte_replay``; the closed
    loop's ``s_closed``, ``v_closed``, ``cte_closed``, ``accel_closed`` and ``steer_closed``. The
    rows run to the longest of the three drives; a drive that has ended gives ``None``.
    """
    if every_s <= 0:
        raise ConfigError(f"every_s must be positive, got {every_s}")
    hf, rep, closed = lap.highfi, model.replay, model.closed_loop

    def at(run: RunResult, k: int, trace: str, column: int | None = None) -> float | None:
        values = getattr(run, trace)
        if k >= len(values):
            return None
        return float(values[k] if column is None else values[k, column])

    stride = max(1, round(every_s / CONTROL_DT_S))
    longest = max(len(hf.speed), len(rep.speed), len(closed.speed))
    return [
        {
            "t": (k + 1) * CONTROL_DT_S,
            "s_highfi": at(hf, k, "s"),
            "v_highfi": at(hf, k, "speed"),
            "cte_highfi": at(hf, k, "cte"),
            "accel_highfi": at(hf, k, "actions", 1),
            "steer_highfi": at(hf, k, "actions", 0),
            "v_replay": at(rep, k, "speed"),
            "cte_replay": at(rep, k, "cte"),
            "s_closed": at(closed, k, "s"),
            "v_closed": at(closed, k, "speed"),
            "cte_closed": at(closed, k, "cte"),
            "accel_closed": at(closed, k, "actions", 1),
            "steer_closed": at(closed, k, "actions", 0),
        }  # fmt: skip
        for k in range(0, longest, stride)
    ]
