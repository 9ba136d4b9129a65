"""The simulated world behind the stand-in: scenarios, vehicles, surfaces and simulated time.

Time advances only on :meth:`World.step` (BeamNG's ``Step``), never with the wall clock, so a
sequence of requests always produces the same numbers. ``Step{count}`` advances
``count / steps_per_second`` seconds; ``steps_per_second`` is set by ``FPSLimit`` (default 60, the
value BeamNG's deterministic-mode examples use). ``Resume`` is acknowledged but does not start a
clock: the stand-in is always "deterministic", ``Step`` is the only way time passes.

BeamNG behaviours reproduced on purpose: controls stay latched until changed; after
``RestartScenario`` a vehicle keeps its steering input (BeamNGpy issue #202) while throttle and
brakes are released; ground models are reset to their defaults on load and restart (the env must
re-apply its friction template); unknown Lua is acknowledged without effect.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from gym_s3.beamng.lua import parse_ground_model_lua
from gym_s3.beamng.protocol import RequestError, RequestValueError
from gym_s3.beamng.standin.config import WorldConfig
from gym_s3.beamng.standin.fleet import (
    BRAKE,
    CLUTCH,
    CONTROL_COLUMNS,
    PARKINGBRAKE,
    THROTTLE,
    Fleet,
    Pose,
)
from gym_s3.beamng.standin.ground import Cube, GroundModel, default_ground_models, surface_layout
from gym_s3.beamng.standin.prefab import Prefab
from gym_s3.beamng.standin.records import ScenarioRecord, VehicleEntry
from gym_s3.beamng.standin.terrain import HeightFn, height_fn_for_level
from gym_s3.tracks.friction import FrictionField, UniformFriction
from gym_s3.tracks.surfaces import SURFACE_NAMES, SURFACES, SurfaceBatch

LOGGER = logging.getLogger(__name__)
_GROUND_MODEL_OF_SURFACE = {s.name: s.ground_model for s in SURFACES.values()}
#: torch's OpenMP backend keeps ``set_num_threads`` per thread; other backends make it global
_THREAD_LOCAL_TORCH_THREADS = "parallel backend: OpenMP" in torch.__config__.parallel_info()
#: most vehicles the world holds at once (prefab and spawned); more are refused with bngError
MAX_VEHICLES = 256
#: most procedural objects (cubes and other meshes) at once; more are refused with bngError
MAX_OBJECTS = 4096
#: most scenarios kept from ``CreateScenario``; beyond it the oldest one not loaded is forgotten
MAX_SCENARIOS = 256


class World:
    """Everything the stand-in simulates; not thread-safe (the server serialises access).

    Args:
        config: physics and sensor settings.
    """

    def __init__(self, config: WorldConfig) -> None:
        self.config = config
        self.dtype = getattr(torch, config.dtype)
        self.fleet = Fleet.from_config(config)
        #: called with a vehicle id whenever a vehicle leaves the world (server closes sockets)
        self.on_vehicle_removed: Callable[[str], None] = lambda vid: None
        self.scenarios: dict[str, ScenarioRecord] = {}
        self.scenario: ScenarioRecord | None = None
        self.scenario_state = "menu"  # "menu" | "pre-running" | "running"
        self.paused = False
        self.deterministic = False
        self.speed_factor: int | None = None
        self.steps_per_second = config.steps_per_second
        self.sim_time = 0.0  # vehicle simulation time, never reset [s]
        self.scenario_time = 0.0  # Timer sensor: time since StartScenario [s]
        self.ground_models: dict[str, GroundModel] = default_ground_models()
        self.cubes: dict[str, Cube] = {}
        self.objects: dict[str, str] = {}  # other procedural objects: name -> class
        self.entries: list[VehicleEntry] = []
        self._object_ids = itertools.count(1000)
        self._height_fn: HeightFn | None = None
        self._friction: SurfaceBatch | None = None
        self._uniform: UniformFriction | None = None
        self._snapshot: dict[str, Any] | None = None

    def configure_thread(self) -> None:
        """Apply :attr:`WorldConfig.torch_threads` to the calling thread (if it stays local)."""
        if self.config.torch_threads and _THREAD_LOCAL_TORCH_THREADS:
            torch.set_num_threads(self.config.torch_threads)

    # ------------------------------------------------------------------------------ lookups
    def row(self, vid: str) -> int:
        """Fleet row of vehicle ``vid``.

        Raises:
            RequestError: no such vehicle.
        """
        for i, entry in enumerate(self.entries):
            if entry.vid == vid:
                return i
        known = ", ".join(e.vid for e in self.entries) or "none"
        raise RequestError(f"vehicle {vid!r} does not exist in the stand-in (vehicles: {known})")

    def entry(self, vid: str) -> VehicleEntry:
        """Bookkeeping of vehicle ``vid`` (raises :class:`RequestError` if unknown)."""
        return self.entries[self.row(vid)]

    def has_vehicle(self, vid: str) -> bool:
        """Whether vehicle ``vid`` exists."""
        return any(e.vid == vid for e in self.entries)

    def require_scenario(self) -> ScenarioRecord:
        """The loaded scenario (raises :class:`RequestError` in the menu)."""
        if self.scenario is None:
            raise RequestError("no scenario is loaded in the stand-in; load one first")
        return self.scenario

    def friction(self) -> SurfaceBatch:
        """The friction field of the current ground models and patches (cached)."""
        if self._friction is None:
            layout = surface_layout(self.ground_models, list(self.cubes.values()))
            self._friction = layout.batch(self.fleet.device, self.dtype)
            self._uniform = UniformFriction(layout.base_mu) if not layout.patches else None
        return self._friction

    def physics_friction(self) -> FrictionField:
        """The field the physics reads (a cheaper uniform field while there are no patches).

        Both give the same values; the uniform one skips the patch lookup.
        """
        field = self.friction()
        return field if self._uniform is None else self._uniform

    def height_at(self, x: float, y: float) -> float:
        """Ground height at a world point [m] (0 on flat levels)."""
        if self._height_fn is None:
            return 0.0
        points = torch.tensor([[[x, y]]], device=self.fleet.device, dtype=self.dtype)
        return float(self._height_fn(points)[0, 0])

    def _changed(self, *, surfaces: bool = False) -> None:
        self._snapshot = None
        if surfaces:
            self._friction = None

    # ---------------------------------------------------------------------------- scenarios
    def create_scenario(self, level: str, name: str, prefab: Prefab, info: dict[str, Any]) -> str:
        """Register a scenario; returns its path (re-creating a name replaces it).

        At most :data:`MAX_SCENARIOS` are kept (the oldest one not loaded is forgotten), so a
        client making scenarios with ever new names cannot grow the server's memory.

        Raises:
            RequestError: the prefab has more than :data:`MAX_VEHICLES` vehicles.
        """
        if len(prefab.vehicles) > MAX_VEHICLES:
            raise RequestError(
                f"the scenario has {len(prefab.vehicles)} vehicles; the stand-in simulates at "
                f"most {MAX_VEHICLES} at once"
            )
        path = f"/levels/{level}/scenarios/{name}/{name}.json"
        if path not in self.scenarios and len(self.scenarios) >= MAX_SCENARIOS:
            oldest = next(
                p for p in self.scenarios if self.scenario is None or p != self.scenario.path
            )
            del self.scenarios[oldest]
        self.scenarios[path] = ScenarioRecord(path, level, name, prefab, dict(info))
        return path

    def load_scenario(self, path: str, owner: int | None) -> None:
        """Load a scenario: fresh vehicles from its prefab, default ground models, no objects."""
        record = self.scenarios.get(path)
        if record is None:
            raise RequestError(
                f"scenario {path!r} is unknown to the stand-in; make it with scenario.make(bng) "
                "on this server first"
            )
        self._remove_all()
        self.scenario = record
        self.scenario_state = "pre-running"
        self.scenario_time = 0.0
        self._height_fn = height_fn_for_level(record.level)
        self.ground_models = default_ground_models()
        self.cubes.clear()
        self.objects.clear()
        self._changed(surfaces=True)
        for vehicle in record.prefab.vehicles:
            pose = Pose(vehicle.position[0], vehicle.position[1], vehicle.yaw)
            self._add(vehicle.name, vehicle.model, pose, owner, False, vehicle.options)

    def start_scenario(self) -> None:
        """Start the loaded scenario (``Timer`` restarts at 0)."""
        self.require_scenario()
        self.scenario_state = "running"
        self.scenario_time = 0.0
        self.paused = False

    def restart_scenario(self, owner: int | None) -> None:
        """Restore the prefab: drop transient vehicles, respawn missing ones, reset poses."""
        record = self.require_scenario()
        for entry in [e for e in self.entries if e.transient]:
            self.despawn(entry.vid)
        for vehicle in record.prefab.vehicles:
            if not self.has_vehicle(vehicle.name):
                pose = Pose(vehicle.position[0], vehicle.position[1], vehicle.yaw)
                self._add(vehicle.name, vehicle.model, pose, owner, False, vehicle.options)
        if self.entries:
            rows = list(range(len(self.entries)))
            poses = [e.spawn for e in self.entries]
            self.fleet.place(rows, poses, [self.height_at(p.x, p.y) for p in poses], reset=True)
            # issue #202: the steering input survives a restart; pedals are released
            self.fleet.controls[:, [THROTTLE, BRAKE, PARKINGBRAKE, CLUTCH]] = 0.0
        self.ground_models = default_ground_models()
        self.scenario_state = "running"
        self.scenario_time = 0.0
        self._changed(surfaces=True)

    def stop_scenario(self) -> None:
        """Unload the scenario and return to the menu."""
        self.require_scenario()
        self._remove_all()
        self.scenario = None
        self.scenario_state = "menu"
        self.cubes.clear()
        self.objects.clear()
        self._changed(surfaces=True)

    # ----------------------------------------------------------------------------- vehicles
    def spawn(
        self, vid: str, model: str, pose: Pose, owner: int | None, options: dict[str, Any]
    ) -> bool:
        """Spawn a transient vehicle; ``False`` if the id is taken.

        Raises:
            RequestError: no scenario is loaded, or :data:`MAX_VEHICLES` vehicles exist already.
        """
        self.require_scenario()
        if self.has_vehicle(vid):
            return False
        if len(self.entries) >= MAX_VEHICLES:
            raise RequestError(f"the stand-in simulates at most {MAX_VEHICLES} vehicles at once")
        self._add(vid, model, pose, owner, True, options)
        return True

    def _add(
        self, vid: str, model: str, pose: Pose, owner: int | None, transient: bool,
        options: dict[str, Any],
    ) -> None:  # fmt: skip
        entry = VehicleEntry(vid, model, next(self._object_ids), owner, transient, pose, options)
        self.fleet.add(pose, self.height_at(pose.x, pose.y))
        self.entries.append(entry)
        self._changed()

    def despawn(self, vid: str) -> None:
        """Remove a vehicle (raises :class:`RequestError` if unknown)."""
        row = self.row(vid)
        self.fleet.remove(row)
        del self.entries[row]
        self._changed()
        self.on_vehicle_removed(vid)

    def _remove_all(self) -> None:
        vids = [e.vid for e in self.entries]
        self.entries.clear()
        self.fleet.clear()
        self._changed()
        for vid in vids:
            self.on_vehicle_removed(vid)

    def release_orphans(
        self, is_connected: Callable[[int], bool], vehicle_sockets: Callable[[str], int]
    ) -> list[str]:
        """Despawn vehicles whose creating client is gone and that have no open socket."""
        orphans = [
            e.vid
            for e in self.entries
            if e.owner is not None and not is_connected(e.owner) and vehicle_sockets(e.vid) == 0
        ]
        for vid in orphans:
            self.despawn(vid)
        return orphans

    def teleport(
        self, vid: str, pos: tuple[float, float, float], yaw: float | None, reset: bool
    ) -> None:
        """Move a vehicle (keeps its heading when ``yaw`` is ``None``)."""
        row = self.row(vid)
        current = self.fleet.poses()[row]
        pose = Pose(pos[0], pos[1], current.yaw if yaw is None else yaw)
        self.fleet.place([row], [pose], [self.height_at(pos[0], pos[1])], reset=reset)
        self._changed()

    def set_controls(self, vid: str, values: dict[str, float], gear: int | None) -> None:
        """Latch new inputs of a vehicle (only the given ones change)."""
        row = self.row(vid)
        for name, value in values.items():
            self.fleet.controls[row, CONTROL_COLUMNS.index(name)] = value
        if gear is not None:
            self.entries[row].gear = gear
            self.fleet.drive_enabled[row] = 1.0 if gear >= 1 else 0.0
            if gear < 0:
                LOGGER.warning("stand-in: reverse gear is not simulated; vehicle %s idles", vid)
        self._changed()

    def recover(self, vid: str) -> None:
        """Put a vehicle at rest where it stands (BeamNG also repairs it; nothing breaks here)."""
        row = self.row(vid)
        self.fleet.place(
            [row], [self.fleet.poses()[row]], [self.height_at(*self._xy(row))], reset=True
        )
        self._changed()

    def set_speed(self, vid: str, speed: float) -> None:
        """Set a vehicle's forward speed at once [m/s]."""
        self.fleet.set_forward_speed(self.row(vid), speed)
        self._changed()

    def _xy(self, row: int) -> tuple[float, float]:
        pose = self.fleet.poses()[row]
        return pose.x, pose.y

    # ------------------------------------------------------------------------------- time
    def step(self, frames: int) -> None:
        """Advance the world by ``frames`` frames of ``1 / steps_per_second`` seconds.

        Raises:
            RequestValueError: a negative count, or more than
                :attr:`WorldConfig.max_step_seconds` of simulated time in one request.
        """
        if frames < 0:
            raise RequestValueError(f"Step count must be >= 0, got {frames}")
        limit = self.config.max_step_seconds
        if frames > limit * self.steps_per_second:
            raise RequestValueError(
                f"Step count {frames} at {self.steps_per_second} steps per second is "
                f"{frames / self.steps_per_second:.6g} s of simulated time, more than the "
                f"stand-in's limit of {limit:g} s per Step request "
                "(WorldConfig.max_step_seconds); step in smaller pieces"
            )
        self.require_scenario()
        self.fleet.step(frames, self.steps_per_second, self.physics_friction(), self._height_fn)
        elapsed = frames / self.steps_per_second
        self.sim_time += elapsed
        self.scenario_time += elapsed
        self._changed()

    # ---------------------------------------------------------------------------- surfaces
    def run_lua(self, chunk: str) -> bool:
        """Apply a recognised ground-model chunk; ``False`` (and no change) for anything else."""
        updates = parse_ground_model_lua(chunk)
        if updates is None:
            return False
        for update in updates:
            self.ground_models[update.name] = GroundModel(update.static, update.sliding)
        self._changed(surfaces=True)
        return True

    def _check_room(self, name: str) -> None:
        """Raise :class:`RequestError` unless object ``name`` may be placed (scenario, count)."""
        self.require_scenario()
        if name not in self.cubes and name not in self.objects:
            if len(self.cubes) + len(self.objects) >= MAX_OBJECTS:
                raise RequestError(
                    f"the stand-in holds at most {MAX_OBJECTS} procedural objects at once; "
                    "remove some with RemoveObject first"
                )

    def add_cube(self, cube: Cube) -> None:
        """Place (or replace) a procedural cube (at most :data:`MAX_OBJECTS` objects)."""
        self._check_room(cube.name)
        self.cubes[cube.name] = cube
        self.objects.pop(cube.name, None)
        self._changed(surfaces=True)

    def add_object(self, name: str, cls: str) -> None:
        """Record a procedural object that has no effect on friction."""
        self._check_room(name)
        self.objects[name] = cls
        self.cubes.pop(name, None)
        self._changed(surfaces=True)

    def remove_object(self, name: str) -> bool:
        """Remove a procedural object; ``False`` if there is none of that name."""
        found = self.cubes.pop(name, None) is not None or self.objects.pop(name, None) is not None
        self._changed(surfaces=True)
        return found

    # ----------------------------------------------------------------------------- sensors
    def snapshot(self) -> dict[str, Any]:
        """Per-vehicle arrays for the sensors (cached until the world changes)."""
        if self._snapshot is None:
            if not self.entries:
                raise RequestError("there are no vehicles in the stand-in world")
            snap = self.fleet.snapshot()
            mu, ids = self.friction().lookup(self.fleet.contact_points())
            snap["wheel_mu"] = mu.cpu().numpy()
            names = np.array([_GROUND_MODEL_OF_SURFACE[n] for n in SURFACE_NAMES])
            snap["wheel_ground_model"] = names[ids.cpu().numpy()]
            self._snapshot = snap
        return self._snapshot
