"""The one batched core behind every face of ``S3Distilled-v0``.

:class:`DistilledCore` owns N cars as ``(N, ...)`` tensors on one device: the dynamics backend
state, the shared :class:`~gym_s3.task.TrackingTask` (scenario, Frenet tracking, observation,
reward terms, termination and truncation, episode statistics) and a seeded CPU
:class:`torch.Generator` that draws scenarios and start noise. It has two operations, both
batched and free of host synchronisation on accelerators:

* :meth:`DistilledCore.reset` resets the cars of a boolean mask (``torch.where`` selection, no
  boolean indexing) and returns every car's observation;
* :meth:`DistilledCore.step` advances every car by one control period (20 Hz) without
  resetting anything.

The faces (:mod:`gym_s3.envs.distilled`, :mod:`gym_s3.envs.vector`,
:mod:`gym_s3.adapters.torchrl`) only convert types and apply their autoreset convention through
:meth:`DistilledCore.autoreset`.

On the CPU, where reading a mask costs nothing, two shortcuts apply (same results): a step in which
no car finished skips the autoreset, and backend start states (which learned backends prefill from
their steady start history) are built for the reset cars only.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

import torch
from gymnasium.error import ResetNeeded
from torch import Tensor

from gym_s3.dynamics import BackendState
from gym_s3.envs.actions import sanitize_action, validate_action
from gym_s3.envs.backends import resolve_backends
from gym_s3.envs.config import DistilledConfig
from gym_s3.envs.pools import scenario_source
from gym_s3.errors import ConfigError
from gym_s3.observations import EgoState
from gym_s3.plausibility import check_seed
from gym_s3.rows import ResetRows
from gym_s3.sources import BackendCars, EnsembleCars
from gym_s3.task import TrackingTask
from gym_s3.threads import configure_threads


@dataclass(frozen=True)
class CoreStep:
    """Result of one core step; every tensor has leading dimension N.

    Attributes:
        obs: ``(N, F)`` float32 observation after the step (before any reset).
        reward: ``(N,)`` float32 reward.
        terminated: ``(N,)`` bool: off road, spin-out, non-finite state or route completed.
        truncated: ``(N,)`` bool: time limit reached (never together with ``terminated``).
        info: per-car ``(N, ...)`` diagnostics of the task (``reward/<term>``, errors,
            termination reasons, ``episode/<metric>`` valid where done) plus
            ``action_nonfinite``.
    """

    obs: Tensor
    reward: Tensor
    terminated: Tensor
    truncated: Tensor
    info: dict[str, Tensor]

    @property
    def done(self) -> Tensor:
        """``(N,)`` bool: terminated or truncated."""
        return self.terminated | self.truncated


class DistilledCore:
    """N cars driven by a dynamics backend through the shared tracking task.

    Args:
        num_envs: number of cars N.
        config: the environment config.

    Attributes:
        backends: the dynamics models (on ``device``, in ``dtype``): one, or an ensemble's K.
        backend: the first of them (the only one unless the config names an ensemble).
        cars: the source of the N cars: :class:`~gym_s3.sources.BackendCars` of ``backend``, or
            :class:`~gym_s3.sources.EnsembleCars` of the K models, each moving N / K cars.
        task: the tracking task of the N cars.
        pool: the scenario pool episodes are drawn from.
        paths: the reference paths of the pool (index = path id).
        generator: CPU generator of scenario draws and start noise.
        state: the backend state of the N cars (with an ensemble, a concatenated copy of the
            models' states: read it, do not write it).
        wheel_mu: ``(N, 4)`` friction under the wheels at the current state [-].
        obs: ``(N, F)`` the latest observation of every car.
        episode_id: ``(N,)`` int64 number of resets of each car (identifies its episode).
    """

    def __init__(self, num_envs: int, config: DistilledConfig) -> None:
        if not isinstance(num_envs, int) or num_envs < 1:
            raise ConfigError(f"num_envs must be a positive integer, got {num_envs!r}")
        self.num_envs = num_envs
        self.config = config
        self.device = torch.device(config.device)
        configure_threads(config.threads, device=self.device)
        self.dtype = config.torch_dtype
        self.backends = resolve_backends(config)
        self.backend = self.backends[0]
        source = scenario_source(config.scenario, self.device, self.dtype)
        self.pool = source.pool
        self.paths = source.paths
        self.task = TrackingTask(self.pool, num_envs, config.task, device=self.device)
        self.generator = torch.Generator(device="cpu")
        self.seed(config.seed)
        n, dev, dt = num_envs, self.device, self.dtype
        self.wheel_mu = torch.ones(n, 4, device=dev, dtype=dt)
        if len(self.backends) == 1:
            self.cars: BackendCars | EnsembleCars = BackendCars(self.backend, n, dev, dt)
        else:
            self.cars = EnsembleCars(self.backends, n, dev, dt)
        self.obs = torch.zeros(n, self.observation_size, device=dev)
        self.episode_id = torch.full((n,), -1, dtype=torch.int64, device=dev)
        self._started = False
        # On the CPU, where reading a mask costs nothing, the backend's start states are built for
        # the reset cars only (learned backends prefill their caches from the start history).
        self._subset_resets = self.device.type == "cpu"
        self._step_fn = self._step_impl
        self._reset_fn = self._reset_impl
        if config.compile:
            # The step is one static graph. The reset breaks the graph where the task draws from
            # the CPU generator; automatic dynamic shapes keep the resumed fragments (which see
            # Python floats and N) from exhausting dynamo's recompile limit across envs.
            self._step_fn = torch.compile(self._step_impl, fullgraph=True, dynamic=False)
            self._reset_fn = torch.compile(self._reset_impl)

    # ------------------------------------------------------------------ properties
    @property
    def state(self) -> BackendState:
        """The backend state of the N cars (held by :attr:`cars`)."""
        return self.cars.state

    def ego(self) -> EgoState:
        """The N cars' :class:`~gym_s3.observations.EgoState` now."""
        return self.cars.ego()

    @property
    def observation_size(self) -> int:
        """Length F of the observation vector."""
        from gym_s3.spec import observation_size

        return observation_size(self.config.task.obs_mode)

    @property
    def started(self) -> bool:
        """Whether :meth:`reset` has been called at least once."""
        return self._started

    def seed(self, seed: int | None) -> int:
        """Reseed the generator (``None``: fresh entropy); returns the seed used."""
        seed = secrets.randbits(63) if seed is None else check_seed(seed)
        self.generator.manual_seed(seed)
        return seed

    # ------------------------------------------------------------------ reset
    def reset(
        self, mask: Tensor | None = None, *, seed: int | None = None, scenario: Tensor | None = None
    ) -> Tensor:
        """Reset the cars of ``mask`` (all cars when ``None`` or before the first reset).

        Args:
            mask: ``(N,)`` bool, cars to reset.
            seed: reseed the generator first (same seed, same draws).
            scenario: optional ``(N,)`` int64 scenario ids instead of random draws.

        Returns:
            ``(N, F)`` observation of every car (fresh for the reset cars, unchanged otherwise).
        """
        if seed is not None:
            self.seed(seed)
        if mask is None or not self._started:
            mask = torch.ones(self.num_envs, dtype=torch.bool, device=self.device)
        else:
            mask = self._check_mask(mask)
        if scenario is not None:
            scenario = torch.as_tensor(scenario, dtype=torch.int64, device=self.device)
            if scenario.shape != (self.num_envs,):
                raise ConfigError(f"scenario must have shape ({self.num_envs},)")
            if bool(((scenario < 0) | (scenario >= self.pool.num_scenarios)).any()):
                raise ConfigError(f"scenario ids must lie in [0, {self.pool.num_scenarios})")
        with torch.no_grad():
            self.obs = self._reset_fn(mask, scenario)
        self._started = True
        return self.obs

    def _reset_impl(self, mask: Tensor, scenario: Tensor | None) -> Tensor:
        """Reset the masked cars (see :meth:`reset`).

        Accelerators reset every row and select with ``torch.where`` (sync-free); the CPU, where
        reading the mask costs nothing, does the work for the reset cars only (identical values).
        """
        select = ResetRows.indexed(mask) if self._subset_resets else ResetRows(mask)
        if select.empty:
            return self.obs
        start = self.task.begin(
            select, self.generator, None if scenario is None else select.pick(scenario)
        )
        mu = self.task.wheel_friction(start.ego(), rows=select.rows)
        placed = self.cars.place(select, start, mu)
        self.wheel_mu = select.put(self.wheel_mu, mu)
        self.episode_id = self.episode_id + mask.to(torch.int64)
        if select.rows is None:  # observe every car (keeps the others' projection hints current)
            obs = self.task.observe(self.ego(), self.wheel_mu)
        else:
            obs = self.task.observe(placed, mu, rows=select.rows)
        return select.put(self.obs, obs)

    def _check_mask(self, mask: Tensor) -> Tensor:
        """A reset mask as a ``(N,)`` bool tensor on the device (numpy accepted)."""
        mask = torch.as_tensor(mask, device=self.device)
        if mask.dtype != torch.bool or tuple(mask.shape) != (self.num_envs,):
            raise ConfigError(
                f"reset_mask must be a bool array of shape ({self.num_envs},), got "
                f"{str(mask.dtype).removeprefix('torch.')} {tuple(mask.shape)}"
            )
        return mask

    # ------------------------------------------------------------------ step
    def validate(self, action, *, allow_flat: bool = False) -> Tensor:
        """Validate an action batch (see :mod:`gym_s3.envs.actions`)."""
        return validate_action(
            action,
            self.num_envs,
            device=self.device,
            dtype=self.dtype,
            nonfinite=self.config.nonfinite_action,
            allow_flat=allow_flat,
        )

    def step(self, action, *, allow_flat: bool = False) -> CoreStep:
        """Advance every car by one control period (no reset).

        Args:
            action: ``(N, 2)`` ``[steer, accel]`` (validated here; clipped to ``[-1, 1]``).
            allow_flat: accept ``(2,)`` when N = 1.

        Raises:
            ResetNeeded: before the first :meth:`reset`.
            ActionError: bad shape, dtype or non-finite values (see ``nonfinite_action``).
        """
        if not self._started:
            raise ResetNeeded("call reset() before step() on S3Distilled-v0")
        act = self.validate(action, allow_flat=allow_flat)
        with torch.no_grad():
            obs, reward, terminated, truncated, info = self._step_fn(act)
        self.obs = obs
        return CoreStep(obs, reward, terminated, truncated, info)

    def _step_impl(self, action: Tensor):
        """One sync-free step of every car; returns the fields of :class:`CoreStep`."""
        action, nonfinite = sanitize_action(action)
        cars = self.cars.advance(action, self.task.surfaces, self.wheel_mu)
        out = self.task.step(cars.ego, action, fault=cars.fault)
        self.wheel_mu = out.info["wheel_mu"]
        info = dict(out.info)
        info["action_nonfinite"] = nonfinite
        return out.obs, out.reward, out.terminated, out.truncated, info

    def autoreset(self, done: Tensor) -> Tensor:
        """Reset the cars that are ``done`` and return every car's current observation.

        On accelerators the reset always runs (masked, no host synchronisation). On the CPU,
        where reading ``done.any()`` costs nothing, a step in which no car finished skips it.
        """
        if self.device.type == "cpu" and not bool(done.any()):
            return self.obs
        return self.reset(done)

    # ------------------------------------------------------------------ introspection
    def car_tensors(self) -> dict[str, Tensor]:
        """Every per-car tensor of the core (backend state, task state, buffers).

        With an ensemble the backend state's tensors are concatenated copies (their sizes are
        right; writing them changes nothing).
        """
        out = {f"state.{k}": v for k, v in self.state.tensors().items()}
        task = self.task
        names = ("scenario", "variant", "pid", "hint", "s", "steps", "prev_action")
        if task.keeps_history:
            names += ("history", "last_motion", "seen")
        for name in names:
            out[f"task.{name}"] = getattr(task, name)
        for name, value in vars(task.surfaces).items():
            out[f"task.surfaces.{name}"] = value
        for name, value in vars(task.stats).items():
            out[f"task.stats.{name}"] = value
        out.update(wheel_mu=self.wheel_mu, obs=self.obs, episode_id=self.episode_id)
        return out

    def bytes_per_env(self) -> float:
        """Memory of the per-car tensors divided by N [bytes] (shared pool not included)."""
        total = sum(t.numel() * t.element_size() for t in self.car_tensors().values())
        return total / self.num_envs
