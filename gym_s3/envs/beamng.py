"""``S3BeamNG-v0``: one car in BeamNG.tech (or the open stand-in) through the real beamngpy client.

The environment shares everything but the source of the car state with ``S3Distilled-v0``: the
spaces come from :mod:`gym_s3.spec`, the scenario, observation, reward terms and termination from
:class:`gym_s3.task.TrackingTask`. The cars come from :class:`gym_s3.sources.SimLinkCars`: BeamNG's
``State`` and ``Electrics`` sensors polled after every deterministic 20 Hz step.

The code path is the same for a real BeamNG.tech and for the stand-in: surfaces are set with the
ground-model Lua template (:mod:`gym_s3.beamng.lua`), ice patches are ``ProceduralCube`` objects
with a patch material (:mod:`gym_s3.beamng.materials`), orientation follows
:mod:`gym_s3.beamng.frames`.
Only optional stand-in sensor extras (``s3_*`` electrics, e.g. the instantaneous yaw rate) are used
when present; otherwise the yaw rate is the heading change over the last step.

Version history: v0 — initial version (spec version 1).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from gymnasium.error import ResetNeeded

from gym_s3.beamng.client.link import BeamNGConfig, Measurement, SimLink, ground_model_updates
from gym_s3.beamng.lua import render_ground_models_lua
from gym_s3.errors import ActionError, ConfigError
from gym_s3.observations import EgoState
from gym_s3.plausibility import check_seed
from gym_s3.rows import ResetRows
from gym_s3.scenarios.pool import PoolConfig, ScenarioPool
from gym_s3.sources import SimLinkCars
from gym_s3.spec import CONTROL_DT_S, single_action_space, single_observation_space
from gym_s3.task import TaskConfig, TrackingTask, lap_task
from gym_s3.tracks.lap_layouts import lap_layout, parse_lap_surface
from gym_s3.tracks.path import ReferencePath
from gym_s3.tracks.registry import cached_track
from gym_s3.tracks.surfaces import SurfaceLayout, get_surface

__all__ = ["BeamNGConfig", "BeamNGEnvConfig", "EpisodeStepLimit", "S3BeamNGEnv"]


@dataclass(frozen=True)
class BeamNGEnvConfig:
    """Everything ``S3BeamNG-v0`` is built from.

    Attributes:
        sim: simulator connection settings.
        track: built-in track name (see ``gym_s3.tracks``) used when ``reference`` is None.
        surface: base surface name (asphalt, asphalt_wet, gravel, dirt, snow, ice), or a
            transition lap such as ``"asphalt>ice"`` (one full-width stretch of the second
            surface, see :mod:`gym_s3.tracks.lap_layouts`).
        ice_patches: number of ice patches placed along the track (seeded by ``layout_seed``).
        layout_seed: seed of the patch placement.
        layout: an explicit surface layout (overrides ``surface``/``ice_patches``).
        start_s: arc length of the start position on the reference [m].
        task: episode, reward and termination settings (shared with the distilled env).
        pool: speed-profile settings of the reference trajectory.
        scenarios: drive one scenario of ``S3Distilled-v0``'s default pool filtered by these
            labels (``()``: all) instead of a lap of ``track``; with the distilled env's task
            (start noise, 400 steps) unless a config with its own task is given.
        scenario: index of that scenario in the filtered pool (default: drawn by
            ``layout_seed``); setting it alone selects from the whole pool.
        target_speed: explicit target speed at every sample of the reference [m/s] (e.g. an
            expert's driven speed); ``None`` computes the friction-aware speed profile.
    """

    sim: BeamNGConfig = field(default_factory=BeamNGConfig)
    track: str = "putnam"
    surface: str = "asphalt"
    ice_patches: int = 0
    layout_seed: int = 0
    layout: SurfaceLayout | None = None
    start_s: float = 0.0
    task: TaskConfig = field(default_factory=lap_task)
    pool: PoolConfig = field(default_factory=PoolConfig)
    scenarios: tuple[str, ...] | None = None
    scenario: int | None = None
    target_speed: tuple[float, ...] | None = None


class S3BeamNGEnv(gym.Env):
    """Track a reference trajectory with one car in BeamNG.tech or the open stand-in.

    Keyword arguments mirror :class:`BeamNGEnvConfig` and :class:`BeamNGConfig` (``host``,
    ``port``, ``standin``, ``home``, ``launch``, ``level``, ``vehicle_model``, ``socket_timeout``,
    ``track``, ``surface``, ``ice_patches``, ``layout_seed``, ``layout``, ``start_s``,
    ``scenarios``, ``scenario``), plus
    ``obs_mode``, ``max_episode_steps``, ``reference`` (a :class:`ReferencePath`) and
    ``render_mode="rgb_array"``. Nothing connects until the first :meth:`reset`.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": round(1 / CONTROL_DT_S)}

    def __init__(
        self,
        *,
        config: BeamNGEnvConfig | None = None,
        reference: ReferencePath | None = None,
        obs_mode: str | None = None,
        max_episode_steps: int | None = None,
        render_mode: str | None = None,
        **kwargs: Any,
    ) -> None:
        if isinstance(kwargs.get("scenarios"), str):
            kwargs["scenarios"] = (kwargs["scenarios"],)
        cfg = config or BeamNGEnvConfig()
        sim_keys = set(BeamNGConfig.__dataclass_fields__)
        env_keys = set(BeamNGEnvConfig.__dataclass_fields__) - {"sim", "task", "pool"}
        unknown = set(kwargs) - sim_keys - env_keys
        if unknown:
            valid = sorted(sim_keys | env_keys | {"obs_mode", "max_episode_steps", "reference"})
            raise ConfigError(f"unknown S3BeamNG-v0 option(s) {sorted(unknown)}; valid: {valid}")
        sim = replace(cfg.sim, **{k: v for k, v in kwargs.items() if k in sim_keys})
        task = cfg.task
        if obs_mode is not None:
            task = replace(task, obs_mode=obs_mode)
        if max_episode_steps is not None:
            task = _step_limited(task, max_episode_steps)
        cfg = replace(cfg, sim=sim, task=task, **{k: v for k, v in kwargs.items() if k in env_keys})
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ConfigError(f"render_mode must be one of {self.metadata['render_modes']}")
        parse_lap_surface(cfg.surface)
        if cfg.scenarios is not None or cfg.scenario is not None:
            placed = ("track", "surface", "ice_patches", "layout", "start_s", "target_speed")
            clash = sorted(k for k in placed if k in kwargs) + (["reference"] if reference else [])
            if clash:
                raise ConfigError(
                    f"scenarios/scenario choose the path, surfaces and start; drop {clash} (or "
                    "drop scenarios/scenario to place the car yourself)"
                )
            if config is None or config.task == BeamNGEnvConfig().task:
                # a pool scenario is driven with the distilled env's task, not the lap's
                task = TaskConfig(obs_mode=cfg.task.obs_mode)
                if max_episode_steps is not None:
                    task = _step_limited(task, max_episode_steps)
                cfg = replace(cfg, task=task)
            cfg, reference = self._pick_scenario(cfg)
        self.config = cfg
        self.render_mode = render_mode
        self.reference = reference if reference is not None else cached_track(cfg.track)
        self.layout = cfg.layout or self._make_layout()
        self.observation_space = single_observation_space(cfg.task.obs_mode)
        self.action_space = single_action_space()
        self._pool = self._build_pool()
        self.task = TrackingTask(self._pool, 1, cfg.task)
        self._generator = torch.Generator().manual_seed(0)
        self._link: SimLink | None = None
        self._closed = False
        self._cars: SimLinkCars | None = None
        self._wheel_mu = torch.ones(1, 4)
        self._trail: list[tuple[float, float]] = []
        self._ego: EgoState | None = None

    # ------------------------------------------------------------------ layout and scenario
    @staticmethod
    def _pick_scenario(cfg: BeamNGEnvConfig) -> tuple[BeamNGEnvConfig, ReferencePath]:
        """The config and reference of the chosen scenario of the default pool."""
        from gym_s3.envs.config import ScenarioConfig
        from gym_s3.envs.pools import scenario_placement, scenario_source

        source = scenario_source(ScenarioConfig(labels=tuple(cfg.scenarios or ())))
        index = cfg.scenario
        if index is None:
            gen = torch.Generator().manual_seed(cfg.layout_seed)
            index = int(torch.randint(source.pool.num_scenarios, (1,), generator=gen))
        place = scenario_placement(source, index)
        cfg = replace(cfg, layout=place["layout"], start_s=place["start_s"], scenario=index,
                      target_speed=place["target_speed"])  # fmt: skip
        return cfg, place["reference"]

    def _build_pool(self) -> ScenarioPool:
        """The one-scenario pool of this env: reference, layout, start and target speeds."""
        cfg = self.config
        speeds = [cfg.target_speed] if cfg.target_speed is not None else None
        return ScenarioPool.build([self.reference], [[self.layout]], cfg.pool,
                                  starts=[[cfg.start_s]], speeds=speeds)  # fmt: skip

    def _make_layout(self) -> SurfaceLayout:
        cfg = self.config
        return lap_layout(self.reference, cfg.surface, cfg.ice_patches, cfg.layout_seed)

    def friction_lua(self) -> str:
        """The Lua chunk that gives the level ground the base surface and patches their friction."""
        return render_ground_models_lua(ground_model_updates(self.layout))

    def _start_pose(self) -> tuple[float, float, float]:
        smp = self.reference.sample(torch.tensor([self.config.start_s], dtype=torch.float64))
        return (float(smp.x[0]), float(smp.y[0]), float(smp.heading[0]))

    def set_max_episode_steps(self, steps: int) -> None:
        """End episodes after exactly ``steps`` steps (replaces a lap's derived time limit).

        ``gym.make("S3BeamNG-v0", max_episode_steps=N)`` calls this through
        :class:`EpisodeStepLimit`; it takes effect at the next :meth:`reset`.
        """
        self.config = replace(self.config, task=_step_limited(self.config.task, steps))
        self.task = TrackingTask(self._pool, 1, self.config.task)

    @property
    def ego(self) -> EgoState | None:
        """The car's state after the last reset or step (``None`` before the first reset)."""
        return self._ego

    @property
    def link(self) -> SimLink | None:
        """The simulator link (``None`` until the first reset)."""
        return self._link

    @property
    def measurement(self) -> Measurement | None:
        """The simulator's last sensor reading (what a recorder logs; ``None`` before a reset)."""
        return self._cars.measurement if self._cars is not None else None

    @property
    def label(self) -> str:
        """``"S3BeamNG-v0 (<simulator>)"``, the simulator as it named itself when connecting.

        ``"open stand-in"`` or ``"BeamNG.tech"`` from the server's greeting
        (:func:`gym_s3.beamng.client.link.identify_simulator`), never from the ``standin`` flag;
        just
        ``"S3BeamNG-v0"`` before the first reset.
        """
        who = self._link.simulator if self._link is not None else None
        return f"S3BeamNG-v0 ({who})" if who else "S3BeamNG-v0"

    # ------------------------------------------------------------------ gym API
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Start an episode: teleport to the start, zero the controls, re-apply the surfaces.

        ``options``: ``{"surface": name}`` changes the base surface for this and later episodes.
        """
        super().reset(seed=None if seed is None else check_seed(seed))
        if seed is not None:
            self._generator.manual_seed(seed)
        if options and "surface" in options:
            surf = get_surface(options["surface"])
            self.layout = replace(self.layout, base=surf.name, base_mu=surf.mu)
            self._pool = self._build_pool()
            self.task = TrackingTask(self._pool, 1, self.config.task)
            if self._link is not None:
                self._link.layout = self.layout  # re-applied by the teleport below
        if self._link is None:
            self._link = SimLink(self.config.sim, self.layout, self._start_pose(),
                                 scenario_name="s3_tracking", purpose="S3BeamNG-v0")  # fmt: skip
            self._link.open()
            self._cars = SimLinkCars(self._link)
        assert self._cars is not None
        every = ResetRows(torch.ones(1, dtype=torch.bool))
        start = self.task.begin(every, self._generator)
        self._wheel_mu = self.task.wheel_friction(start.ego())
        ego = self._ego = self._cars.place(every, start, self._wheel_mu)
        self._trail = [(float(ego.x[0]), float(ego.y[0]))]
        obs = self.task.observe(ego)
        info = {"standin": self._link.is_standin, "simulator": self._link.simulator}
        return obs[0].numpy().copy(), info

    def step(self, action: Any):
        """Apply ``[steer, accel]`` for one 50 ms step and observe.

        Raises:
            ResetNeeded: before the first :meth:`reset` or after :meth:`close`.
        """
        if self._link is None:
            state = "closed" if self._closed else "not reset yet"
            raise ResetNeeded(
                f"S3BeamNG-v0 is {state}: call reset() before step() (reset() connects to the "
                "simulator, again after close())"
            )
        act = self._validate(action)
        assert self._cars is not None
        moved = self._cars.advance(act, self.task.surfaces, self._wheel_mu)
        ego = self._ego = moved.ego
        self._trail.append((float(ego.x[0]), float(ego.y[0])))
        out = self.task.step(ego, act, fault=moved.fault)
        self._wheel_mu = out.info["wheel_mu"]
        info = {k: v[0].item() if v.ndim == 1 else v[0].numpy().copy() for k, v in out.info.items()}
        return (
            out.obs[0].numpy().copy(),
            float(out.reward[0]),
            bool(out.terminated[0]),
            bool(out.truncated[0]),
            info,
        )

    def _validate(self, action: Any) -> torch.Tensor:
        arr = np.asarray(action)
        if arr.shape != (2,):
            raise ActionError(
                f"S3BeamNG-v0 expects an action of shape (2,) = [steer, accel], got shape "
                f"{arr.shape}; for batched policies use S3Distilled-v0 or index one car."
            )
        if not np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.complexfloating):
            raise ActionError(f"action must be real numbers, got dtype {arr.dtype}")
        if not np.isfinite(arr).all():
            raise ActionError(
                f"action {arr.tolist()} contains NaN or inf; check the policy output (e.g. a "
                f"diverged network) before sending it to the simulator."
            )
        return torch.as_tensor(np.clip(arr, -1.0, 1.0), dtype=torch.float32)[None]

    def render(self):
        """Top-down view of the track, surfaces, reference and the car (``rgb_array``)."""
        if self.render_mode != "rgb_array" or self._ego is None:
            return None
        from gym_s3.envs.render import TopDownRenderer

        if not hasattr(self, "_renderer"):
            self._renderer = TopDownRenderer()
        ego = self._ego
        return self._renderer.render(
            path=self.reference,
            layout=self.layout,
            pose=(float(ego.x[0]), float(ego.y[0]), float(ego.yaw[0])),
            trail=np.asarray(self._trail),
            speed=float(ego.v_long[0]),
            title=self.label,
        )

    def close(self) -> None:
        """Disconnect; quit the simulator only if this env launched it; stop an own stand-in."""
        link, self._link, self._cars = self._link, None, None
        self._closed = True
        if link is not None:
            link.close()
        super().close()


def _step_limited(task: TaskConfig, steps: int) -> TaskConfig:
    """``task`` ending every episode after exactly ``steps`` steps (no derived lap limit)."""
    if not isinstance(steps, int) or isinstance(steps, bool) or steps < 1:
        raise ConfigError(f"max_episode_steps must be an int >= 1, got {steps!r}")
    return replace(task, max_episode_steps=steps, time_limit_factor=None)


class EpisodeStepLimit(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Hands ``gym.make``'s ``max_episode_steps`` to the env's own time limit.

    ``gym.make(id, max_episode_steps=N)`` keeps ``N`` for its :class:`gymnasium.wrappers.TimeLimit`
    and never passes it to the env, whose task would still end a lap by its own (longer) limit.
    Registered as an additional wrapper of ``S3BeamNG-v0``, this wrapper (applied after the
    ``TimeLimit``) finds that ``N`` and sets it as the task's limit, so the episode ends after
    ``N`` steps as ``time_limit`` with the task's episode metrics. Without a ``TimeLimit`` it
    does nothing.
    """

    def __init__(self, env: gym.Env) -> None:
        gym.utils.RecordConstructorArgs.__init__(self)
        gym.Wrapper.__init__(self, env)
        inner = env
        while isinstance(inner, gym.Wrapper):
            if isinstance(inner, gym.wrappers.TimeLimit):
                env.unwrapped.set_max_episode_steps(int(inner._max_episode_steps))
                break
            inner = inner.env
