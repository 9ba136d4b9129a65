"""The client side of one car in a simulator that speaks BeamNG's protocol (beamngpy).

Used by ``S3BeamNG-v0`` and by the data-collection session, so both drive BeamNG.tech and the
stand-in through exactly the same calls. :class:`SimLink` opens BeamNG.tech or the open stand-in
(started in-process with ``standin=True``), builds the scenario of a surface layout (base surface
through the ground-model Lua template of :mod:`gym_s3.beamng.lua`, ice patches as
``ProceduralCube`` objects with the patch materials of :mod:`gym_s3.beamng.materials`), switches
to deterministic stepping and then, per 20 Hz control step, sends the controls, steps and polls.
The calls are the same for both simulators (``beamngpy-protocol.md`` §11.5); only optional
stand-in sensor extras (``s3_*`` electrics: wheel spin, actuator states, yaw rate, body
accelerations) are used when present. Without them the yaw rate and the body accelerations are
backward differences over the last step and the wheel spin and road-wheel angle are NaN.
"""

from __future__ import annotations

import logging
import math
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch

from gym_s3._optional import require
from gym_s3.beamng.frames import dir_to_yaw, wrap_angle, yaw_to_quat
from gym_s3.beamng.lua import GroundModelUpdate, render_ground_models_lua
from gym_s3.beamng.materials import LEVEL_GROUND_MODEL, patch_material
from gym_s3.beamng.protocol import (
    BEAMNG_LABEL,
    HELLO_SERVER_KEY,
    PROTOCOL_VERSION,
    STANDIN_LABEL,
)
from gym_s3.beamng.standin.coverage import coverage_warnings
from gym_s3.errors import (
    ConfigError,
    SimulatorConnectionError,
    SimulatorTimeoutError,
    StandInWarning,
)
from gym_s3.observations import EgoState
from gym_s3.spec import CONTROL_DT_S, WHEELS
from gym_s3.tracks.surfaces import SURFACES, SurfaceLayout, get_surface

__all__ = [
    "BeamNGConfig",
    "Measurement",
    "SimLink",
    "SimulatorIdentity",
    "ground_model_updates",
    "identify_simulator",
]

#: Sliding friction as a share of the peak (static) value written into ground models.
SLIDING_SHARE = 0.85
#: Thickness of the patch slabs [m].
PATCH_THICKNESS_M = 0.02
_NAN = float("nan")
LOGGER = logging.getLogger(__name__)


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
        standin_fast: run the in-process stand-in's physics in float32 through
            ``torch.compile`` (about 10x faster for one car after a one-off compile of up to a
            minute; the default float64 eager physics is the bitwise reference).
    """

    host: str = "127.0.0.1"
    port: int = 25252
    standin: bool = False
    home: str | None = None
    launch: bool = False
    level: str = "smallgrid"
    vehicle_model: str = "etk800"
    socket_timeout: float = 10.0
    steps_per_second: int = 20
    standin_fast: bool = False

    def __post_init__(self) -> None:
        if self.steps_per_second % 20 or self.steps_per_second <= 0:
            raise ConfigError(
                f"steps_per_second must be a positive multiple of 20 (one env step is 50 ms), "
                f"got {self.steps_per_second}"
            )
        if not 0 < self.socket_timeout < math.inf:
            raise ConfigError(
                f"socket_timeout must be a finite number of seconds > 0, got {self.socket_timeout}"
            )
        if not 0 < self.port < 65536:
            raise ConfigError(f"port must be in 1..65535, got {self.port}")

    @property
    def frames_per_step(self) -> int:
        """Physics frames per 50 ms env step."""
        return self.steps_per_second // 20


def ground_model_updates(layout: SurfaceLayout) -> list[GroundModelUpdate]:
    """Ground-model frictions of a layout.

    The level ground (ASPHALT) gets the base surface's friction, every patch surface its own.
    """
    updates = [
        GroundModelUpdate(LEVEL_GROUND_MODEL, layout.base_mu, SLIDING_SHARE * layout.base_mu)
    ]
    for name in sorted({p.surface for p in layout.patches}):
        surf = SURFACES[get_surface(name).name]
        if surf.ground_model != LEVEL_GROUND_MODEL:
            updates.append(GroundModelUpdate(surf.ground_model, surf.mu, SLIDING_SHARE * surf.mu))
    return updates


@dataclass(frozen=True)
class Measurement:
    """What one poll tells about the car (floats; NaN where the simulator does not report).

    Attributes:
        x: world x [m].
        y: world y [m].
        z: height [m].
        yaw: heading, CCW from +x, wrapped [rad].
        v_long: body longitudinal velocity [m/s].
        v_lat: body lateral velocity, + left [m/s].
        yaw_rate: yaw rate, + CCW [rad/s].
        ax: body longitudinal acceleration [m/s^2].
        ay: body lateral acceleration [m/s^2].
        omega: wheel spin FL, FR, RL, RR [rad/s].
        steer_applied: road-wheel angle, + left [rad].
        throttle_applied: throttle actuator [1].
        brake_applied: brake actuator [1].
        throttle_input: throttle input the simulator has latched [1].
        brake_input: brake input the simulator has latched [1].
        fault: the simulator flagged the car, or the state is not finite.
    """

    x: float
    y: float
    z: float
    yaw: float
    v_long: float
    v_lat: float
    yaw_rate: float
    ax: float
    ay: float
    omega: tuple[float, float, float, float]
    steer_applied: float
    throttle_applied: float
    brake_applied: float
    throttle_input: float
    brake_input: float
    fault: bool

    def ego(self) -> EgoState:
        """The one-car :class:`EgoState` ``(1,)`` float64."""

        def t(v: float) -> torch.Tensor:
            """A ``(1,)`` float64 tensor."""
            return torch.tensor([v], dtype=torch.float64)

        return EgoState(t(self.x), t(self.y), t(self.yaw), t(self.v_long), t(self.v_lat),
                        t(self.yaw_rate))  # fmt: skip


@dataclass(frozen=True)
class SimulatorIdentity:
    """What a simulator said about itself in its ``Hello`` reply.

    Attributes:
        label: ``"open stand-in"``, ``"BeamNG.tech"`` or the name another server gives itself.
        standin: whether the server is the open stand-in.
        levels: levels the stand-in models (``None``: not announced, e.g. BeamNG.tech).
        vehicle_models: vehicle models the stand-in models (``None``: not announced).
    """

    label: str
    standin: bool
    levels: tuple[str, ...] | None = None
    vehicle_models: tuple[str, ...] | None = None

    def coverage_warnings(self, level: str, model: str) -> list[str]:
        """Messages for the level and vehicle model the stand-in does not model (else ``[]``)."""
        if not self.standin:
            return []
        return coverage_warnings(level, [model], levels=self.levels,
                                 vehicle_models=self.vehicle_models)  # fmt: skip


def identify_simulator(bng: Any) -> SimulatorIdentity:
    """What the simulator behind an open beamngpy connection says it is, from its ``Hello``.

    beamngpy checks only the protocol version of the greeting and drops the reply, so the
    greeting is sent once more on the game-engine socket and the reply is read here. The
    stand-in answers ``"standin": true`` with its name, levels and vehicle models; BeamNG.tech
    answers only ``protocolVersion``.
    """
    reply = bng.connection.send({"type": "Hello", "protocolVersion": PROTOCOL_VERSION}).recv(
        "Hello"
    )

    def names(key: str) -> tuple[str, ...] | None:
        value = reply.get(key)
        return tuple(str(v) for v in value) if isinstance(value, list) else None

    if reply.get("standin") is True:
        return SimulatorIdentity(STANDIN_LABEL, True, names("levels"), names("vehicle_models"))
    # another server that names itself shows what it says; otherwise it is BeamNG.tech
    return SimulatorIdentity(str(reply.get(HELLO_SERVER_KEY, BEAMNG_LABEL)), False)


class SimLink:
    """One car in BeamNG.tech or the open stand-in, stepped at 20 Hz in deterministic mode.

    Args:
        sim: how to reach the simulator (``standin=True`` starts the stand-in in-process).
        layout: the surface layout to build.
        start: start pose ``(x, y, yaw)`` [m, m, rad].
        scenario_name: name of the scenario created in the simulator.
        purpose: what the link is for (named in the error when beamngpy is missing).
    """

    def __init__(
        self,
        sim: BeamNGConfig,
        layout: SurfaceLayout,
        start: tuple[float, float, float],
        *,
        scenario_name: str = "s3_collect",
        purpose: str = "collecting driving data over BeamNG's protocol",
    ) -> None:
        self.sim = sim
        self.scenario_name = scenario_name
        self.purpose = purpose
        self.layout = layout
        self.start = start
        self.server: Any = None
        self.bng: Any = None
        self.vehicle: Any = None
        self._prev: Measurement | None = None
        self._launched = False  # whether beamngpy started the simulator process for this link
        #: what the connected simulator says it is (:func:`identify_simulator`); set by open()
        self.identity: SimulatorIdentity | None = None

    @property
    def simulator(self) -> str | None:
        """Label of the connected simulator (``None`` before :meth:`open`)."""
        return self.identity.label if self.identity is not None else None

    @property
    def is_standin(self) -> bool:
        """Whether the connected simulator identified itself as the stand-in.

        Before :meth:`open` this is the configured ``standin`` flag (a guess); afterwards it is
        what the server said in its greeting, so an external ``s3 standin`` counts as well.
        """
        if self.identity is None:
            return bool(self.sim.standin)
        return self.identity.standin

    @property
    def source(self) -> str:
        """Log source name: ``"standin-server"`` or ``"beamng"`` (from :attr:`is_standin`)."""
        return "standin-server" if self.is_standin else "beamng"

    @property
    def port(self) -> int:
        """GE port in use."""
        return self.server.port if self.server is not None else self.sim.port

    # ------------------------------------------------------------------ lifecycle
    def open(self) -> Measurement:
        """Connect, build and load the scenario, apply the surfaces; returns the first poll."""
        bngpy = require("beamngpy", purpose=self.purpose)
        host = self.sim.host
        if self.sim.standin:
            from gym_s3.beamng.standin.config import standin_world
            from gym_s3.beamng.standin.server import StandInServer

            world = standin_world(self.sim.standin_fast)
            self.server = StandInServer(host="127.0.0.1", port=0, world_config=world)
            self.server.start()
            host = "127.0.0.1"
        bng = bngpy.BeamNGpy(host, self.port, home=self.sim.home, quit_on_close=self.sim.launch,
                             socket_timeout=self.sim.socket_timeout)  # fmt: skip
        try:
            bng.open(launch=self.sim.launch and not self.sim.standin)
        except Exception as exc:
            self._stop_server()
            if isinstance(exc, TimeoutError):  # something accepted the connection, then nothing
                raise SimulatorTimeoutError(
                    f"the program at {host}:{self.port} accepted the connection but did not answer "
                    f"the protocol greeting within {self.sim.socket_timeout:g} s; check that it is "
                    "BeamNG.tech (started with -tcom) or the stand-in (`s3 standin`), not another "
                    "program on that port, and that it is not stuck in a dialog (or raise "
                    "socket_timeout if it is still starting)"
                ) from exc
            raise SimulatorConnectionError(
                f"nothing answers at {host}:{self.port} ({exc}). Start the open stand-in with "
                f"`s3 standin --port {self.port}` (or pass standin=True / --standin), or point "
                f"host/port at a running BeamNG.tech started with -tcom (or launch=True, home=...)."
            ) from exc
        # ``open(launch=True)`` first connects to a simulator that is already running; only a
        # process beamngpy started itself may be quit on close.
        self._launched = getattr(bng, "process", None) is not None
        bng.quit_on_close = self._launched
        self.bng = bng
        with self.errors("asking the simulator what it is"):
            self.identity = identify_simulator(bng)
        for message in self.identity.coverage_warnings(self.sim.level, self.sim.vehicle_model):
            LOGGER.warning("%s", message)
            warnings.warn(message, StandInWarning, stacklevel=3)
        with self.errors("setting up the scenario"):
            self._build(bngpy)
            return self.teleport(*self.start)

    def _build(self, bngpy: Any) -> None:
        """Create, load and start the scenario; deterministic stepping, paused."""
        scenario = bngpy.Scenario(self.sim.level, self.scenario_name, description="sim2sim2sim")
        vehicle = bngpy.Vehicle("ego", model=self.sim.vehicle_model)
        vehicle.sensors.attach("electrics", bngpy.sensors.Electrics())
        x, y, yaw = self.start
        scenario.add_vehicle(vehicle, pos=(x, y, 0.0), rot_quat=yaw_to_quat(yaw))
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
        scenario.make(self.bng)
        self.bng.settings.set_deterministic(self.sim.steps_per_second)
        self.bng.scenario.load(scenario)
        self.bng.scenario.start()
        self.bng.control.pause()
        vehicle.connection.skt.timeout = self.sim.socket_timeout
        vehicle.connection.skt.skt.settimeout(self.sim.socket_timeout)
        self.vehicle = vehicle

    def close(self) -> None:
        """Disconnect (quit BeamNG only if this link launched it) and stop an own stand-in."""
        bng, self.bng, self.vehicle = self.bng, None, None
        if bng is not None:
            try:
                bng.close() if self._launched else bng.disconnect()
            except Exception:  # noqa: BLE001 - closing a dead connection must not raise
                pass
        self._stop_server()

    def _stop_server(self) -> None:
        """Stop the in-process stand-in, if this link started one."""
        if self.server is not None:
            self.server.stop()
            self.server = None

    @contextmanager
    def errors(self, what: str) -> Iterator[None]:
        """Translate client errors into errors that say what happened and what to do."""
        where = f"{self.sim.host}:{self.port}"
        try:
            yield
        except TimeoutError as exc:
            raise SimulatorTimeoutError(
                f"the simulator at {where} did not answer {what} within "
                f"{self.sim.socket_timeout:g} s; check that it runs and is not stuck in a dialog"
            ) from exc
        except (ConnectionError, OSError) as exc:
            raise SimulatorConnectionError(
                f"lost the connection to the simulator at {where} while {what} ({exc}); "
                "restart it and the session (recorded episodes are kept)"
            ) from exc
        except Exception as exc:  # beamngpy's BNGError / BNGDisconnectedError
            if type(exc).__module__.startswith("beamngpy"):
                raise SimulatorConnectionError(
                    f"the simulator at {where} failed while {what}: {exc}; restart it and the "
                    "session (recorded episodes are kept)"
                ) from exc
            raise

    # ------------------------------------------------------------------ control loop
    def teleport(self, x: float, y: float, yaw: float, speed: float = 0.0) -> Measurement:
        """Put the car at a pose, re-apply the surfaces, send neutral controls, step once, poll."""
        with self.errors("resetting the car"):
            self.vehicle.teleport((x, y, 0.0), rot_quat=yaw_to_quat(yaw), reset=True)
            self.bng.control.queue_lua_command(
                render_ground_models_lua(ground_model_updates(self.layout))
            )
            # BeamNGpy issue #202: steering survives a reset, so always send neutral controls
            self.vehicle.control(steering=0.0, throttle=0.0, brake=0.0, parkingbrake=0.0)
            if speed > 0:
                self.vehicle.set_velocity(speed, dt=CONTROL_DT_S)
            self._prev = None
            return self.step()

    def control(self, steer: float, throttle: float, brake: float) -> None:
        """Latch the controls (steer +1 = right, pedals [0, 1])."""
        with self.errors("sending controls"):
            self.vehicle.control(steering=steer, throttle=throttle, brake=brake)

    def step(self) -> Measurement:
        """Advance one control period (deterministic frames) and poll the sensors."""
        with self.errors("stepping"):
            self.bng.control.step(self.sim.frames_per_step)
            self.vehicle.sensors.poll()
        return self._measure()

    def _measure(self) -> Measurement:
        """Turn the polled ``State`` and ``Electrics`` into a :class:`Measurement`."""
        state = self.vehicle.state
        elec = self.vehicle.sensors["electrics"]
        x, y, z = (float(v) for v in state["pos"][:3])
        yaw = dir_to_yaw(state["dir"])
        c, s = math.cos(yaw), math.sin(yaw)
        vel = state["vel"]
        v_long, v_lat = vel[0] * c + vel[1] * s, -vel[0] * s + vel[1] * c
        prev, dt = self._prev, CONTROL_DT_S
        if "s3_yaw_rate" in elec:
            yaw_rate = float(elec["s3_yaw_rate"])
        else:
            yaw_rate = 0.0 if prev is None else wrap_angle(yaw - prev.yaw) / dt
        if "s3_ax" in elec:
            ax, ay = float(elec["s3_ax"]), float(elec["s3_ay"])
        elif prev is None:
            ax = ay = 0.0
        else:  # body-frame acceleration from the change of body velocities
            ax = (v_long - prev.v_long) / dt - v_lat * yaw_rate
            ay = (v_lat - prev.v_lat) / dt + v_long * yaw_rate
        omega = elec.get("s3_wheel_omega")
        values = (x, y, z, yaw, v_long, v_lat, yaw_rate, ax, ay)
        m = Measurement(
            *values,
            omega=tuple(float(w) for w in omega) if omega else (_NAN,) * len(WHEELS),
            steer_applied=float(elec.get("s3_steer_angle", _NAN)),
            throttle_applied=float(elec.get("throttle", _NAN)),
            brake_applied=float(elec.get("brake", _NAN)),
            throttle_input=float(elec.get("throttle_input", _NAN)),
            brake_input=float(elec.get("brake_input", _NAN)),
            fault=bool(elec.get("s3_fault", False)) or not all(map(math.isfinite, values)),
        )
        self._prev = m
        return m
