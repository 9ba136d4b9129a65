"""``S3BeamNG-v0``: one car in BeamNG.tech (or the open stand-in) through the real beamngpy client.

The environment shares everything but the source of the car state with ``S3Distilled-v0``: the
spaces come from :mod:`gym_s3.spec`, the scenario, observation, reward terms and termination from
:class:`gym_s3.task.TrackingTask`. The car state comes from BeamNG's ``State`` and ``Electrics``
sensors polled after every deterministic 20 Hz step.

The code path is the same for a real BeamNG.tech and for the stand-in: surfaces are set with the
ground-model Lua template (:mod:`gym_s3.beamng.lua`), ice patches are ``ProceduralCube`` objects
with a patch material (:mod:`gym_s3.beamng.materials`), orientation follows
:mod:`gym_s3.beamng.frames`.
Only optional stand-in sensor extras (``s3_*`` electrics, e.g. the instantaneous yaw rate) are used
when present; otherwise the yaw rate is the heading change over the last step.

Version history: v0 — initial version (spec version 1).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from gym_s3._optional import require
from gym_s3.beamng.frames import dir_to_yaw, yaw_to_quat
from gym_s3.beamng.lua import GroundModelUpdate, render_ground_models_lua
from gym_s3.beamng.materials import LEVEL_GROUND_MODEL, patch_material
from gym_s3.errors import (
    ActionError,
    ConfigError,
    SimulatorConnectionError,
    SimulatorTimeoutError,
)
from gym_s3.observations import EgoState
from gym_s3.scenarios.pool import PoolConfig, ScenarioPool
from gym_s3.spec import CONTROL_DT_S, single_action_space, single_observation_space
from gym_s3.task import TaskConfig, TrackingTask
from gym_s3.tracks.path import ReferencePath, wrap_angle
from gym_s3.tracks.surfaces import SURFACES, LayoutConfig, SurfaceLayout, get_surface, sample_layout

#: Sliding friction as a share of the peak (static) value written into ground models.
SLIDING_SHARE = 0.85
#: Thickness of ice-patch slabs [m].
PATCH_THICKNESS_M = 0.02


@dataclass(frozen=True)
class BeamNGConfig:
    """How to reach the simulator.

    Attributes:
        host: address of BeamNG.tech or the stand-in.
        port: its game-engine port (BeamNG's default 25252).
        standin: start the open stand-in in-process on a free loopback port (ignores host/port).
        home: BeamNG.tech install folder, only needed with ``launch=True``.
        launch: let beamngpy start BeamNG.tech if nothing listens (never for the stand-in).
        level: level to build the scenario on (a large flat area for the virtual track).
        vehicle_model: BeamNG vehicle model id.
        socket_timeout: seconds to wait for any answer before raising a timeout error [s].
        steps_per_second: deterministic physics frame rate; one env step is
            ``steps_per_second * 0.05`` frames (must be a multiple of 20).
    """

    host: str = "127.0.0.1"
    port: int = 25252
    standin: bool = False
    home: str | None = None
    launch: bool = False
    level: str = "smallgrid"
    vehicle_model: str = "etk800"
    socket_timeout: float = 10.0
    steps_per_second: int = 60

    def __post_init__(self) -> None:
        if self.steps_per_second % 20 or self.steps_per_second <= 0:
            raise ConfigError(
                f"steps_per_second must be a positive multiple of 20 (one env step is 50 ms), "
                f"got {self.steps_per_second}"
            )
        if self.socket_timeout <= 0:
            raise ConfigError(f"socket_timeout must be positive, got {self.socket_timeout}")
        if not 0 < self.port < 65536:
            raise ConfigError(f"port must be in 1..65535, got {self.port}")

    @property
    def frames_per_step(self) -> int:
        """Physics frames per 50 ms env step."""
        return self.steps_per_second // 20


def _default_task() -> TaskConfig:
    # One lap from a standing start, 4 minutes at most.
    return TaskConfig(max_episode_steps=4800, start_speed_fraction=(0.0, 0.0),
                      start_lateral_m=0.0, start_heading_rad=0.0, complete_laps=1.0)  # fmt: skip


@dataclass(frozen=True)
class BeamNGEnvConfig:
    """Everything ``S3BeamNG-v0`` is built from.

    Attributes:
        sim: simulator connection settings.
        track: built-in track name (see ``gym_s3.tracks``) used when ``reference`` is None.
        surface: base surface name (asphalt, asphalt_wet, gravel, dirt, snow, ice).
        ice_patches: number of ice patches placed along the track (seeded by ``layout_seed``).
        layout_seed: seed of the patch placement.
        layout: an explicit surface layout (overrides ``surface``/``ice_patches``).
        start_s: arc length of the start position on the reference [m].
        task: episode, reward and termination settings (shared with the distilled env).
        pool: speed-profile settings of the reference trajectory.
    """

    sim: BeamNGConfig = field(default_factory=BeamNGConfig)
    track: str = "putnam"
    surface: str = "asphalt"
    ice_patches: int = 0
    layout_seed: int = 0
    layout: SurfaceLayout | None = None
    start_s: float = 0.0
    task: TaskConfig = field(default_factory=_default_task)
    pool: PoolConfig = field(default_factory=PoolConfig)


def resolve_track(name: str) -> ReferencePath:
    """A built-in track by name (``putnam`` works without the track registry)."""
    try:
        from gym_s3.tracks.registry import get_track
    except ImportError:  # pragma: no cover - registry not installed
        if name != "putnam":
            raise ConfigError(f"unknown track '{name}'") from None
        from gym_s3.tracks.putnam import putnam_park

        return putnam_park()
    return get_track(name)


class S3BeamNGEnv(gym.Env):
    """Track a reference trajectory with one car in BeamNG.tech or the open stand-in.

    Keyword arguments mirror :class:`BeamNGEnvConfig` and :class:`BeamNGConfig` (``host``,
    ``port``, ``standin``, ``home``, ``launch``, ``level``, ``vehicle_model``, ``socket_timeout``,
    ``track``, ``surface``, ``ice_patches``, ``layout_seed``, ``layout``, ``start_s``), plus
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
            task = replace(task, max_episode_steps=max_episode_steps)
        cfg = replace(cfg, sim=sim, task=task, **{k: v for k, v in kwargs.items() if k in env_keys})
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ConfigError(f"render_mode must be one of {self.metadata['render_modes']}")
        get_surface(cfg.surface)
        self.config = cfg
        self.render_mode = render_mode
        self.reference = reference if reference is not None else resolve_track(cfg.track)
        self.layout = cfg.layout or self._make_layout()
        self.observation_space = single_observation_space(cfg.task.obs_mode)
        self.action_space = single_action_space()
        self._pool = ScenarioPool.build(
            [self.reference], [[self.layout]], cfg.pool, starts=[[cfg.start_s]]
        )
        self.task = TrackingTask(self._pool, 1, cfg.task)
        self._generator = torch.Generator().manual_seed(0)
        self._server = None
        self._bng = None
        self._vehicle = None
        self._trail: list[tuple[float, float]] = []
        self._last_yaw: float | None = None
        self._ego: EgoState | None = None

    # ------------------------------------------------------------------ layout and scenario
    def _make_layout(self) -> SurfaceLayout:
        cfg = self.config
        layout_cfg = LayoutConfig(base=(get_surface(cfg.surface).name,))
        if cfg.ice_patches:
            from gym_s3.tracks.surfaces import PatchConfig

            layout_cfg = replace(layout_cfg, patches=PatchConfig(count=(cfg.ice_patches,) * 2))
        return sample_layout(self.reference, layout_cfg, np.random.default_rng(cfg.layout_seed))

    def friction_lua(self) -> str:
        """The Lua chunk that gives the level ground the base surface and patches their friction."""
        updates = [GroundModelUpdate(LEVEL_GROUND_MODEL, self.layout.base_mu,
                                     SLIDING_SHARE * self.layout.base_mu)]  # fmt: skip
        for name in sorted({p.surface for p in self.layout.patches}):
            surf = SURFACES[get_surface(name).name]
            if surf.ground_model != LEVEL_GROUND_MODEL:
                sliding = SLIDING_SHARE * surf.mu
                updates.append(GroundModelUpdate(surf.ground_model, surf.mu, sliding))
        return render_ground_models_lua(updates)

    @contextmanager
    def _sim_errors(self, what: str) -> Iterator[None]:
        """Translate client errors into errors that say what happened and what to do."""
        cfg = self.config.sim
        where = f"{cfg.host}:{self._port()}"
        try:
            yield
        except TimeoutError as exc:
            raise SimulatorTimeoutError(
                f"the simulator at {where} did not answer {what} within "
                f"{cfg.socket_timeout:g} s (x2 for beamngpy's retry). Check that BeamNG.tech or "
                f"the stand-in is running and not paused in a dialog, or raise socket_timeout."
            ) from exc
        except (ConnectionError, OSError) as exc:
            raise SimulatorConnectionError(
                f"lost the connection to the simulator at {where} while {what} ({exc}). Restart "
                f"the simulator (e.g. `s3 standin --port {self._port()}`) and reset the env."
            ) from exc
        except Exception as exc:  # beamngpy's BNGError / BNGDisconnectedError
            if type(exc).__module__.startswith("beamngpy"):
                raise SimulatorConnectionError(
                    f"the simulator at {where} failed while {what}: {exc}. If it was closed, "
                    f"restart it and reset the env."
                ) from exc
            raise

    def _port(self) -> int:
        return self._server.port if self._server is not None else self.config.sim.port

    def _connect(self) -> None:
        """Open the simulator (starting the stand-in if asked), build and load the scenario."""
        bngpy = require("beamngpy", purpose="S3BeamNG-v0")
        cfg = self.config.sim
        host = cfg.host
        if cfg.standin:
            from gym_s3.beamng.server import StandInServer

            self._server = StandInServer(host="127.0.0.1", port=0)
            self._server.start()
            host = "127.0.0.1"
        bng = bngpy.BeamNGpy(host, self._port(), home=cfg.home, quit_on_close=cfg.launch,
                             socket_timeout=cfg.socket_timeout)  # fmt: skip
        try:
            bng.open(launch=cfg.launch and not cfg.standin)
        except Exception as exc:
            self._stop_server()
            raise SimulatorConnectionError(
                f"nothing answers at {host}:{self._port()} ({exc}). Start the open stand-in with "
                f"`s3 standin --port {self._port()}` (or pass standin=True), or point host/port at "
                f"a running BeamNG.tech started with -tcom (or pass launch=True and home=...)."
            ) from exc
        self._bng = bng
        with self._sim_errors("setting up the scenario"):
            self._build_scenario(bngpy)

    def _build_scenario(self, bngpy: Any) -> None:
        bng, cfg = self._bng, self.config
        scenario = bngpy.Scenario(cfg.sim.level, "s3_tracking", description="sim2sim2sim")
        vehicle = bngpy.Vehicle("ego", model=cfg.sim.vehicle_model)
        vehicle.sensors.attach("electrics", bngpy.sensors.Electrics())
        pose = self._start_pose()
        scenario.add_vehicle(vehicle, pos=pose[:3], rot_quat=yaw_to_quat(pose[3]))
        for i, patch in enumerate(self.layout.patches):
            scenario.add_procedural_mesh(
                bngpy.ProceduralCube(
                    pos=(patch.cx, patch.cy, PATCH_THICKNESS_M / 2),
                    size=(patch.length, patch.width, PATCH_THICKNESS_M),
                    name=f"s3_patch_{i}",
                    rot_quat=(0.0, 0.0, math.sin(patch.yaw / 2), math.cos(patch.yaw / 2)),
                    material=patch_material(SURFACES[get_surface(patch.surface).name].ground_model),
                )
            )
        scenario.make(bng)
        bng.settings.set_deterministic(cfg.sim.steps_per_second)
        bng.scenario.load(scenario)
        bng.scenario.start()
        bng.control.pause()
        vehicle.connection.skt.timeout = cfg.sim.socket_timeout
        vehicle.connection.skt.skt.settimeout(cfg.sim.socket_timeout)
        self._vehicle = vehicle

    def _start_pose(self) -> tuple[float, float, float, float]:
        smp = self.reference.sample(torch.tensor([self.config.start_s], dtype=torch.float64))
        return (float(smp.x[0]), float(smp.y[0]), 0.0, float(smp.heading[0]))

    # ------------------------------------------------------------------ gym API
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Start an episode: teleport to the start, zero the controls, re-apply the surfaces.

        ``options``: ``{"surface": name}`` changes the base surface for this and later episodes.
        """
        super().reset(seed=seed)
        if seed is not None:
            self._generator.manual_seed(seed)
        if options and "surface" in options:
            surf = get_surface(options["surface"])
            self.layout = replace(self.layout, base=surf.name, base_mu=surf.mu)
            self._pool = ScenarioPool.build([self.reference], [[self.layout]], self.config.pool,
                                            starts=[[self.config.start_s]])  # fmt: skip
            self.task = TrackingTask(self._pool, 1, self.config.task)
        if self._bng is None:
            self._connect()
        start = self.task.reset(torch.ones(1, dtype=torch.bool), self._generator)
        yaw = float(start.yaw[0])
        with self._sim_errors("resetting"):
            self._vehicle.teleport((float(start.x[0]), float(start.y[0]), 0.0),
                                   rot_quat=yaw_to_quat(yaw), reset=True)  # fmt: skip
            self._bng.control.queue_lua_command(self.friction_lua())
            # BeamNGpy issue #202: steering survives a reset, so always send neutral controls.
            self._vehicle.control(steering=0.0, throttle=0.0, brake=0.0, parkingbrake=0.0)
            if float(start.speed[0]) > 0:
                self._vehicle.set_velocity(float(start.speed[0]), dt=CONTROL_DT_S)
            self._bng.control.step(self.config.sim.frames_per_step)
            self._vehicle.sensors.poll()
        self._last_yaw = None
        ego = self._read_ego()
        self._trail = [(float(ego.x[0]), float(ego.y[0]))]
        obs = self.task.observe(ego)
        return obs[0].numpy().copy(), {"standin": bool(self.config.sim.standin)}

    def step(self, action: Any):
        """Apply ``[steer, accel]`` for one 50 ms step and observe."""
        act = self._validate(action)
        steer, accel = float(act[0, 0]), float(act[0, 1])
        with self._sim_errors("stepping"):
            self._vehicle.control(steering=steer, throttle=max(accel, 0.0), brake=max(-accel, 0.0))
            self._bng.control.step(self.config.sim.frames_per_step)
            self._vehicle.sensors.poll()
        ego = self._read_ego()
        self._trail.append((float(ego.x[0]), float(ego.y[0])))
        out = self.task.step(ego, act)
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

    def _read_ego(self) -> EgoState:
        """Standardised state from the State and Electrics sensors."""
        state = self._vehicle.state
        elec = self._vehicle.sensors["electrics"]
        x, y = float(state["pos"][0]), float(state["pos"][1])
        yaw = dir_to_yaw(state["dir"])
        vel = state["vel"]
        c, s = math.cos(yaw), math.sin(yaw)
        v_long = vel[0] * c + vel[1] * s
        v_lat = -vel[0] * s + vel[1] * c
        if "s3_yaw_rate" in elec:
            yaw_rate = float(elec["s3_yaw_rate"])
        elif self._last_yaw is None:
            yaw_rate = 0.0
        else:
            yaw_rate = float(wrap_angle(torch.tensor(yaw - self._last_yaw))) / CONTROL_DT_S
        self._last_yaw = yaw
        t = torch.tensor
        self._ego = EgoState(t([x]), t([y]), t([yaw]), t([v_long]), t([v_lat]), t([yaw_rate]))
        return self._ego

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
            title=f"S3BeamNG-v0 ({'open stand-in' if self.config.sim.standin else 'BeamNG.tech'})",
        )

    def _stop_server(self) -> None:
        if self._server is not None:
            self._server.stop()
            self._server = None

    def close(self) -> None:
        """Disconnect; quit the simulator only if this env launched it; stop an own stand-in."""
        bng, self._bng, self._vehicle = self._bng, None, None
        if bng is not None:
            try:
                if self.config.sim.launch:
                    bng.close()
                else:
                    bng.disconnect()
            except Exception:  # noqa: BLE001 - closing a dead connection must not raise
                pass
        self._stop_server()
        super().close()
