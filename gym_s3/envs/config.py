"""Frozen configuration of ``S3Distilled-v0``.

:class:`DistilledConfig` holds everything that defines the environment: the dynamics backend (a
registered name, an instance, or a checkpoint), the device and dtype, the tracking task
(:class:`~gym_s3.task.TaskConfig`), where scenarios come from (:class:`ScenarioConfig`: tracks,
surface-layout distribution, label filter) and the seed. ``gym.make`` keyword arguments are mapped
onto it by :meth:`DistilledConfig.from_kwargs`, which rejects unknown names with the valid list.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal

import torch

from gym_s3.errors import ConfigError
from gym_s3.rewards import RewardWeights
from gym_s3.scenarios.labels import label_mask
from gym_s3.scenarios.pool import PoolConfig
from gym_s3.task import TaskConfig
from gym_s3.tracks.layouts import LayoutConfig, LayoutMix, PatchConfig
from gym_s3.tracks.surfaces import SurfaceLayout

#: Built-in tracks of the default scenario pool: the Putnam Park approximation, procedural
#: circuits and town routes with intersections.
DEFAULT_TRACKS: tuple[str, ...] = ("putnam", "procedural:0", "procedural:1", "town:0")

#: Default per-episode surface distribution: mostly dry asphalt, sometimes wet, loose or snowy,
#: with zero to three ice patches along the path.
DEFAULT_LAYOUT = LayoutConfig(
    base=("asphalt", "asphalt_wet", "gravel", "dirt", "snow"),
    weights=(0.5, 0.2, 0.1, 0.1, 0.1),
    patches=PatchConfig(count=(0, 3), surface="ice"),
)

NonFiniteAction = Literal["raise", "zero"]
_DTYPES: dict[str, torch.dtype] = {"float32": torch.float32, "float64": torch.float64}


@dataclass(frozen=True)
class ScenarioConfig:
    """Where episodes come from: tracks, their surface layouts and a label filter.

    Each track gets ``layouts_per_track`` surface layouts drawn from ``layout`` (seeded by
    ``layout_seed`` and the track name); every (track, layout) pair has its own friction-aware
    target-speed profile, and every pair is cut into scenarios (start positions) that are labelled
    by the driving that follows them. An episode draws one scenario, so each car drives a new
    surface layout per episode from this bank.

    Attributes:
        tracks: track names understood by :func:`gym_s3.tracks.registry.get_track`
            (``"putnam"``, ``"procedural:<seed>"``, ``"town:<seed>"``, ``"file:<csv>"``).
        layouts_per_track: surface layouts drawn per track.
        layout: the surface distribution (base surface weights, ice patches), or a
            :class:`~gym_s3.tracks.layouts.LayoutMix` of several.
        labels: keep only scenarios with these labels (``gym_s3.scenarios.LABELS``); empty keeps
            all.
        match: ``"any"`` keeps scenarios with at least one of ``labels``, ``"all"`` with all.
        pool: start spacing, label horizon, speed-profile limits.
        layout_seed: seed of the layout draws (the pool is the same for the same config).
        layouts: explicit surface layouts of the single track (replace the drawn ones; e.g.
            :func:`gym_s3.tracks.surfaces.lap_layout` to drive the laps of ``S3BeamNG-v0``).
        starts: explicit start positions on every track [m of arc length] (default: one every
            ``pool.start_spacing_m``).
        logs: driving logs (dataset folders or episode files) whose expert trajectories join
            the pool: the driven line as the reference, the driven speed as the target, the
            episode's surface layout (:mod:`gym_s3.scenarios.expert`).
        max_log_episodes: use at most this many episodes of each entry of ``logs``.
    """

    tracks: tuple[str, ...] = DEFAULT_TRACKS
    layouts_per_track: int = 8
    layout: LayoutConfig | LayoutMix = DEFAULT_LAYOUT
    labels: tuple[str, ...] = ()
    match: Literal["any", "all"] = "any"
    pool: PoolConfig = field(default_factory=PoolConfig)
    layout_seed: int = 0
    layouts: tuple[SurfaceLayout, ...] = ()
    starts: tuple[float, ...] = ()
    logs: tuple[str, ...] = ()
    max_log_episodes: int | None = None

    def __post_init__(self) -> None:
        if isinstance(self.tracks, str) or not (self.tracks or self.logs):
            raise ConfigError(
                f"tracks must be a non-empty sequence of track names (or give logs), got "
                f"{self.tracks!r}"
            )
        if isinstance(self.logs, str) or not all(isinstance(x, str) and x for x in self.logs):
            raise ConfigError(f"logs must be a sequence of paths, got {self.logs!r}")
        if self.max_log_episodes is not None and self.max_log_episodes < 1:
            raise ConfigError(f"max_log_episodes must be >= 1, got {self.max_log_episodes}")
        if not all(isinstance(t, str) and t for t in self.tracks):
            raise ConfigError(f"every track name must be a non-empty string, got {self.tracks!r}")
        if self.layouts_per_track < 1:
            raise ConfigError(f"layouts_per_track must be >= 1, got {self.layouts_per_track}")
        label_mask(self.labels)  # unknown labels raise with the valid list
        if self.match not in ("any", "all"):
            raise ConfigError(f"scenario match must be 'any' or 'all', got {self.match!r}")
        if self.layouts and len(self.tracks) != 1:
            raise ConfigError(
                f"explicit layouts belong to one track, got {len(self.tracks)} tracks; pass one "
                "track with layouts, or leave layouts empty to draw them from `layout`"
            )
        if not all(isinstance(x, SurfaceLayout) for x in self.layouts):
            raise ConfigError("layouts must be SurfaceLayout objects (see gym_s3.tracks.surfaces)")
        if not all(isinstance(x, int | float) and math.isfinite(x) and x >= 0 for x in self.starts):
            raise ConfigError(f"starts must be finite arc lengths >= 0 [m], got {self.starts!r}")

    def source_key(self) -> ScenarioConfig:
        """The part of the config that defines the unfiltered pool (the cache key)."""
        return replace(self, labels=(), match="any")


#: backend of ``gym.make("S3Distilled-v0")`` without ``backend``/``checkpoint``: the shipped DDM,
#: a learned model of the high-fidelity dynamics (the bicycle baseline does not carry over)
DEFAULT_BACKEND = "ddm"


def _default_backend(checkpoint: str | tuple[str, ...] | None) -> str:
    """The backend named in ``checkpoint``'s JSON sidecar (an ensemble's first), or the default."""
    if checkpoint is None:
        return DEFAULT_BACKEND
    first = checkpoint[0] if isinstance(checkpoint, tuple) else checkpoint
    from gym_s3 import dynamics
    from gym_s3.checkpoints import read_sidecar

    if first in dynamics.backend_names():
        return first
    name = read_sidecar(first).get("meta", {}).get("backend")
    return name if isinstance(name, str) else DEFAULT_BACKEND


def _checkpoints(value: Any) -> str | tuple[str, ...] | None:
    """``checkpoint`` as one path, a tuple of two or more (an ensemble), or ``None``.

    Shipped set names (``"ddm:ice"``, :func:`gym_s3.dynamics.io.shipped_sets`) are expanded to
    their members' paths.
    """
    from gym_s3.dynamics.io import expand_checkpoints

    if value is None:
        return None
    if not isinstance(value, str | os.PathLike) and (
        not isinstance(value, Sequence) or not all(isinstance(x, str | os.PathLike) for x in value)
    ):
        raise ConfigError(
            "checkpoint must be a path, or a list of paths (or backend names, for their shipped "
            f"checkpoints, or shipped set names such as 'ddm:ice') for an ensemble of dynamics "
            f"models, got {value!r}"
        )
    items = expand_checkpoints(value)
    if not items:
        raise ConfigError("checkpoint is an empty list; pass a path, a list of paths, or None")
    return items[0] if len(items) == 1 else items


@dataclass(frozen=True, eq=False)
class DistilledConfig:
    """Everything that defines an ``S3Distilled-v0`` environment.

    Attributes:
        backend: a registered backend name (``"bicycle"``, ``"ddm"``, ``"trans"``, ``"dytr"``) or
            a :class:`~gym_s3.dynamics.DynamicsBackend` instance; ``None`` (default): the
            backend of ``checkpoint`` when one is given, else :data:`DEFAULT_BACKEND` (the
            shipped DDM, a learned model of the stand-in's dynamics).
        checkpoint: path of a dynamics checkpoint to load (its backend must match ``backend``
            when a name is given); ``None`` loads the checkpoint shipped for that backend (the
            bicycle without one uses its default parameters). A list of two or more paths (a
            backend name stands for its shipped checkpoint; a shipped set name such as
            ``"ddm:ice"`` for its members) is an *ensemble*: the cars are split
            evenly between the models, each car keeping its model in every episode
            (:class:`~gym_s3.sources.EnsembleCars`); the models must share ``backend`` and
            architecture.
        device: torch device of every per-car tensor (``"cpu"``, ``"cuda"``, ``"cuda:1"``).
        dtype: float dtype of the simulation, ``"float32"`` or ``"float64"`` (observations are
            always float32).
        task: the tracking task (observation mode, episode length, reward weights, ...).
        scenario: tracks, surface layouts and label filter.
        seed: seed of the env's generator (``None``: fresh entropy); ``reset(seed=...)`` reseeds.
        compile: run the step and reset through ``torch.compile`` (first call compiles; faster
            afterwards, see ``benchmarks/bench_distilled.py``).
        nonfinite_action: ``"raise"`` (default): an action with NaN/inf raises
            :class:`~gym_s3.errors.ActionError` naming the car; ``"zero"``: such action entries
            are replaced by 0 and the car is flagged in ``info["action_nonfinite"]`` (no host
            synchronisation, for GPU training loops).
        threads: torch intra-op CPU threads set when the env is built (process-wide): ``None``
            applies :mod:`gym_s3.threads` (``$S3_TORCH_THREADS``, else 1 unless
            ``OMP_NUM_THREADS`` is set), ``0`` leaves torch's setting alone.
    """

    backend: Any = None
    checkpoint: str | tuple[str, ...] | None = None
    device: str = "cpu"
    dtype: str = "float32"
    task: TaskConfig = field(default_factory=TaskConfig)
    scenario: ScenarioConfig = field(default_factory=ScenarioConfig)
    seed: int | None = None
    compile: bool = False
    nonfinite_action: NonFiniteAction = "raise"
    threads: int | None = None

    def __post_init__(self) -> None:
        from gym_s3.dynamics import DynamicsBackend

        object.__setattr__(self, "checkpoint", _checkpoints(self.checkpoint))
        if self.backend is None:
            object.__setattr__(self, "backend", _default_backend(self.checkpoint))
        if not isinstance(self.backend, str | DynamicsBackend):
            raise ConfigError(
                "backend must be a registered backend name or a DynamicsBackend instance, "
                f"got {type(self.backend).__name__}"
            )
        if isinstance(self.backend, DynamicsBackend) and self.checkpoint is not None:
            raise ConfigError("give either a backend instance or a checkpoint path, not both")
        try:
            torch.empty(0, device=torch.device(self.device))  # parses it and checks it exists
        except (RuntimeError, TypeError, AssertionError) as exc:
            raise ConfigError(
                f"invalid or unavailable device {self.device!r} ({exc}); pass device='cpu', or "
                "'cuda' / 'cuda:<index>' on a machine with a CUDA build of torch and a GPU"
            ) from None
        if self.dtype not in _DTYPES:
            raise ConfigError(f"dtype must be one of {list(_DTYPES)}, got {self.dtype!r}")
        if self.nonfinite_action not in ("raise", "zero"):
            raise ConfigError(
                f"nonfinite_action must be 'raise' or 'zero', got {self.nonfinite_action!r}"
            )
        if self.threads is not None and not (isinstance(self.threads, int) and self.threads >= 0):
            raise ConfigError(
                f"threads must be None, 0 (torch's choice) or a positive int, got {self.threads!r}"
            )
        if self.seed is not None and not isinstance(self.seed, int):
            raise ConfigError(f"seed must be an int or None, got {self.seed!r}")

    @property
    def torch_dtype(self) -> torch.dtype:
        """The simulation dtype as a :class:`torch.dtype`."""
        return _DTYPES[self.dtype]

    @property
    def ensemble_size(self) -> int:
        """Number of dynamics models driving the cars (1 unless ``checkpoint`` lists several)."""
        return len(self.checkpoint) if isinstance(self.checkpoint, tuple) else 1

    @property
    def backend_name(self) -> str:
        """Name of the backend (for titles, logs and checkpoints)."""
        return self.backend if isinstance(self.backend, str) else type(self.backend).name or "?"

    # ------------------------------------------------------------------ from gym.make kwargs
    @staticmethod
    def from_kwargs(config: DistilledConfig | None = None, **kwargs: Any) -> DistilledConfig:
        """Build a config from flat ``gym.make`` keyword arguments.

        Besides the fields of :class:`DistilledConfig`, these shortcuts are accepted:
        ``obs_mode``, ``max_episode_steps``, ``reward`` (dict or :class:`RewardWeights`) set
        fields of ``task``; ``tracks`` (name or list), ``layouts_per_track``, ``layout``,
        ``scenarios`` (label filter, name or list), ``scenario_match``, ``pool``,
        ``layout_seed``, ``layouts``, ``starts``, ``logs`` and ``max_log_episodes`` set fields of
        ``scenario``.

        Args:
            config: base config to update (default: :class:`DistilledConfig()`).
            **kwargs: the arguments.

        Raises:
            ConfigError: for an unknown argument (the message lists the valid ones).
        """
        base = config if config is not None else DistilledConfig()
        if config is None and kwargs.get("checkpoint") is not None and "backend" not in kwargs:
            kwargs["backend"] = None  # a checkpoint alone: its own backend, not the default
        task_kw = {k: kwargs.pop(k) for k in _TASK_SHORTCUTS if k in kwargs}
        scen_kw = {_SCENARIO_SHORTCUTS[k]: kwargs.pop(k) for k in list(kwargs) if k in
                   _SCENARIO_SHORTCUTS}  # fmt: skip
        top = {f.name for f in fields(DistilledConfig)}
        unknown = sorted(set(kwargs) - top)
        if unknown:
            valid = sorted(top | set(_TASK_SHORTCUTS) | set(_SCENARIO_SHORTCUTS))
            raise ConfigError(
                f"unknown S3Distilled-v0 argument(s) {unknown}; valid arguments: {', '.join(valid)}"
            )
        if "dtype" in kwargs and isinstance(kwargs["dtype"], torch.dtype):
            kwargs["dtype"] = str(kwargs["dtype"]).removeprefix("torch.")
        if "device" in kwargs:
            kwargs["device"] = str(kwargs["device"])
        task = kwargs.pop("task", base.task)
        if task_kw:
            reward = task_kw.get("reward")
            if isinstance(reward, Mapping):
                task_kw["reward"] = RewardWeights.from_dict(dict(reward))
            task = replace(task, **task_kw)
        scenario = kwargs.pop("scenario", base.scenario)
        if scen_kw:
            if isinstance(scen_kw.get("logs"), os.PathLike):
                scen_kw["logs"] = (scen_kw["logs"],)
            logs = scen_kw.get("logs")
            if isinstance(logs, Sequence) and not isinstance(logs, str):
                scen_kw["logs"] = [os.fspath(x) if isinstance(x, os.PathLike) else x
                                   for x in scen_kw["logs"]]  # fmt: skip
            for key in ("tracks", "labels", "logs"):
                if key in scen_kw:
                    scen_kw[key] = _as_names(scen_kw[key], key)
            for key in ("layouts", "starts"):
                if key in scen_kw:
                    value = scen_kw[key]
                    single = isinstance(value, SurfaceLayout | int | float)
                    scen_kw[key] = (value,) if single else tuple(value)
            scenario = replace(scenario, **scen_kw)
        return replace(base, task=task, scenario=scenario, **kwargs)


_TASK_SHORTCUTS: tuple[str, ...] = ("obs_mode", "max_episode_steps", "reward")
_SCENARIO_SHORTCUTS: dict[str, str] = {
    "tracks": "tracks",
    "layouts_per_track": "layouts_per_track",
    "layout": "layout",
    "scenarios": "labels",
    "scenario_match": "match",
    "pool": "pool",
    "layout_seed": "layout_seed",
    "layouts": "layouts",
    "starts": "starts",
    "logs": "logs",
    "max_log_episodes": "max_log_episodes",
}


def _as_names(value: str | Sequence[str] | None, what: str) -> tuple[str, ...]:
    """A single name or a sequence of names as a tuple."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, Sequence):
        raise ConfigError(f"{what} must be a name or a list of names, got {value!r}")
    return tuple(value)
