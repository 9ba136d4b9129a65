"""A driving-data collection session: input device -> simulator at 20 Hz -> crash-safe logs.

The session is the episode loop of every source of cars with one car: the tracking task
(:class:`~gym_s3.task.TrackingTask`, N = 1) + the simulator link
(:class:`~gym_s3.sources.SimLinkCars`, BeamNG.tech or the stand-in) + the input device as driver
+ the crash-safe recorder. Every control step: the input source is polled (the scripted expert
first sees the measured state), the command is sent, the simulator is stepped in deterministic
mode and polled, and, while the device is live, one row is recorded (the state measured at
``t_k`` with the action applied from ``t_k`` to ``t_{k+1}``, :mod:`gym_s3.data.schema`). Frenet
coordinates, target speed and the friction and surface under each wheel come from the task
(:meth:`~gym_s3.task.TrackingTask.measure`), the same way for every source.

Episodes end where the task ends them (:data:`~gym_s3.task.END_REASONS`, with
:meth:`SessionConfig.task`'s margins): a fault, leaving the road, a spin-out or the end of a route
put the car back to the start, standing; the time limit ends the file and a new episode starts
where the car is (the drive goes on).

Hot-plug: when the wheel is unplugged the very next step sends :data:`SAFE_COMMAND` (no
throttle, half brake), the running episode is finished (nothing recorded is lost) and recording
pauses; when it is plugged back in, a new episode of the same session starts. The ``pause``
button does the same on purpose, ``reset`` puts the car back to the start, ``quit`` ends.
"""

from __future__ import annotations

import logging
import math
import secrets
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import torch

from gym_s3.beamng.client.link import BeamNGConfig, Measurement, SimLink
from gym_s3.data.link_rows import link_row, unwrap_yaw
from gym_s3.data.recorder import EpisodeRecorder
from gym_s3.data.schema import EpisodeMeta, layout_to_dict
from gym_s3.errors import ConfigError
from gym_s3.rows import ResetRows
from gym_s3.scenarios.pool import PoolConfig, ScenarioPool
from gym_s3.sources import SimLinkCars
from gym_s3.spec import CONTROL_DT_S
from gym_s3.task import END_REASONS, TaskConfig, TaskStep, TrackingTask, TrackSample
from gym_s3.tracks.layouts import LayoutConfig, PatchConfig, sample_layout
from gym_s3.tracks.path import ReferencePath
from gym_s3.tracks.registry import get_track
from gym_s3.tracks.surfaces import SURFACE_NAMES, SurfaceLayout, get_surface
from gym_s3.vehicle.params import SEDAN
from wheel_collector.commands import SAFE_COMMAND, DriverCommand, InputReading, InputSource
from wheel_collector.expert import StateObserver

__all__ = ["CollectionSession", "SessionConfig", "SessionStats", "make_layout"]

LOGGER = logging.getLogger(__name__)


@dataclass(frozen=True)
class SessionConfig:
    """What a collection session drives and records.

    Attributes:
        out_dir: folder of the episode files.
        track: track name (``putnam``, ``procedural:<seed>``, ``town:<seed>``, ...).
        surface: base surface.
        ice_patches: number of ice patches along the track.
        layout_seed: seed of the patch placement.
        start_s: start position along the track [m].
        duration_s: simulated time of the whole session [s] (``0``: until ``quit``).
        episode_s: longest episode (the task's time limit); a new file and episode start after
            it where the car is [s].
        off_track_m: beyond this distance past a road edge the episode ends and the car is put
            back (the task's ``off_track_margin_m``) [m].
        realtime: pace the loop at 20 Hz wall time (human drivers); else as fast as possible.
        session_id: id of the session (default: time stamp, device, random suffix).
        sim: how to reach the simulator.
        flush_rows: recorder flush interval [rows].
        flush_s: recorder flush interval [s].
    """

    out_dir: str = "data/sessions"
    track: str = "putnam"
    surface: str = "asphalt"
    ice_patches: int = 0
    layout_seed: int = 0
    start_s: float = 0.0
    duration_s: float = 300.0
    episode_s: float = 120.0
    off_track_m: float = 10.0
    realtime: bool = False
    session_id: str | None = None
    sim: BeamNGConfig = field(default_factory=lambda: BeamNGConfig(standin=True))
    flush_rows: int = 20
    flush_s: float = 1.0

    def __post_init__(self) -> None:
        get_surface(self.surface)
        if self.ice_patches < 0:
            raise ConfigError(f"ice_patches must be >= 0, got {self.ice_patches}")
        PatchConfig(count=(self.ice_patches, self.ice_patches))  # bounded: fails before connecting
        if not (self.duration_s >= 0 and self.episode_s > 0 and self.off_track_m > 0):
            raise ConfigError(
                "need duration_s >= 0 [s], episode_s > 0 [s] and off_track_m > 0 [m], got "
                f"duration_s {self.duration_s}, episode_s {self.episode_s}, off_track_m "
                f"{self.off_track_m}"
            )

    def task(self) -> TaskConfig:
        """The episode rules of the session: the env's rules with the session's margins.

        Episodes start standing on the reference line at ``start_s``; they end off the road by
        more than ``off_track_m``, at a spin-out, a fault, the end of a route, or after
        ``episode_s`` (truncation).
        """
        return TaskConfig(max_episode_steps=max(1, round(self.episode_s / CONTROL_DT_S)),
                          off_track_margin_m=self.off_track_m, start_lateral_m=0.0,
                          start_heading_rad=0.0, start_speed_fraction=(0.0, 0.0))  # fmt: skip


def make_layout(path: ReferencePath, surface: str, ice_patches: int, seed: int) -> SurfaceLayout:
    """The session's surface layout: ``surface`` everywhere plus ``ice_patches`` ice patches."""
    patches = PatchConfig(count=(ice_patches, ice_patches))
    cfg = LayoutConfig(base=(get_surface(surface).name,), patches=patches)
    return sample_layout(path, cfg, np.random.default_rng(seed))


@dataclass
class SessionStats:
    """Counters of a session.

    Attributes:
        steps: control steps simulated.
        recorded: rows recorded.
        safe_steps: steps during which the safe command was sent (device missing or paused).
        dropouts: device removals seen.
        resets: times the car was put back to the start.
        episodes: finished episode files.
    """

    steps: int = 0
    recorded: int = 0
    safe_steps: int = 0
    dropouts: int = 0
    resets: int = 0
    episodes: list[Path] = field(default_factory=list)


class CollectionSession:
    """Drive one car with an input source and record the episodes.

    Args:
        config: what to drive and where to write.
        source: the input device (wheel, keyboard, scripted expert).
        device: device label for the logs (``"wheel:<name>"``, ``"keyboard"``,
            ``"scripted-expert"``); by default derived from the source.
        hud: optional :class:`~wheel_collector.hud.Hud` updated every step.
        seed: seed recorded in the logs (scripted sources).
        pool_config: speed-profile settings of the reference.
    """

    def __init__(
        self,
        config: SessionConfig,
        source: InputSource,
        *,
        device: str | None = None,
        hud: Any = None,
        seed: int | None = None,
        pool_config: PoolConfig | None = None,
    ) -> None:
        self.config = config
        self.source = source
        self.hud = hud
        self.seed = seed
        self.path = get_track(config.track)
        self.layout = make_layout(self.path, config.surface, config.ice_patches, config.layout_seed)
        pool = ScenarioPool.build([self.path], [[self.layout]], pool_config or PoolConfig(),
                                  starts=[[config.start_s]])  # fmt: skip
        self.task = TrackingTask(pool, 1, config.task())
        self._generator = torch.Generator().manual_seed(0)  # the start has no noise to draw
        self._device = device
        stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
        tag = _device_label(source, "").split(":")[0]
        self.session_id = config.session_id or f"{stamp}-{tag}-{secrets.token_hex(2)}"
        start = self.path.sample(torch.tensor([config.start_s], dtype=torch.float64))
        pose = (float(start.x[0]), float(start.y[0]), float(start.heading[0]))
        self.link = SimLink(config.sim, self.layout, pose)
        self.cars = SimLinkCars(self.link)
        self.stats = SessionStats()
        self.out_dir = Path(config.out_dir)
        self._recorder: EpisodeRecorder | None = None
        self._episode = 0
        self._episode_start = 0
        self._yaw = 0.0
        self._user_paused = False
        self._quit = False
        self._m: Measurement | None = None
        self._sample: TrackSample | None = None
        self.last_command: DriverCommand = SAFE_COMMAND
        self._device_name = ""

    @property
    def device(self) -> str:
        """Device label written to the logs."""
        return self._device or _device_label(self.source, self._device_name)

    # ------------------------------------------------------------------ lifecycle
    def open(self) -> None:
        """Connect to the simulator (the car waits at the start) and begin the first episode."""
        m = self.link.open()
        self.task.reset(torch.ones(1, dtype=torch.bool), self._generator)
        self._observe(m, reset=True)

    def close(self) -> None:
        """Finish the running episode, close the source and disconnect."""
        self._finish("session_end")
        try:
            self.source.close()
        finally:
            self.link.close()

    def __enter__(self) -> CollectionSession:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def recording(self) -> bool:
        """True while an episode is being recorded."""
        return self._recorder is not None

    @property
    def measurement(self) -> Measurement | None:
        """The latest measurement."""
        return self._m

    def run(self, max_steps: int | None = None) -> SessionStats:
        """Step until ``duration_s`` of simulated time, ``max_steps``, or ``quit``."""
        limit = math.inf if self.config.duration_s == 0 else self.config.duration_s / CONTROL_DT_S
        if max_steps is not None:
            limit = min(limit, max_steps)
        next_tick = time.perf_counter()
        while not self._quit and self.stats.steps < limit:
            self.step()
            if self.config.realtime:  # a late step drops the debt: never a burst of fast steps
                next_tick = max(next_tick + CONTROL_DT_S, time.perf_counter())
                time.sleep(max(0.0, next_tick - time.perf_counter()))
        return self.stats

    # ------------------------------------------------------------------ one step
    def step(self) -> InputReading:
        """One control step: poll, send, step the simulator, record; returns the reading."""
        if self._m is None or self._sample is None:
            raise ConfigError("the session is not open; call open() first")
        if isinstance(self.source, StateObserver):
            self.source.observe(self._m.ego(), self._sample, self.task)
        reading = self.source.poll()
        self._device_name = reading.device_name or self._device_name
        self._handle_actions(reading)
        if reading.dropouts:
            self.stats.dropouts += reading.dropouts
            self._finish("device_removed")  # the rows before the gap are saved as they are
        live = reading.live and not self._user_paused and not self._quit
        command = reading.command if live else SAFE_COMMAND
        action = torch.as_tensor(command.to_action(), dtype=torch.float32).reshape(1, 2)
        if live:
            self._record(float(action[0, 0]), float(action[0, 1]))
        else:
            self.stats.safe_steps += 1
            self._finish("device_missing" if not reading.live else "paused")
        moved = self.cars.advance(action, self.task.surfaces, self._sample.mu)
        out = self.task.step(moved.ego, action, fault=moved.fault)
        assert self.cars.measurement is not None
        self._observe(self.cars.measurement)
        self.stats.steps += 1
        self.last_command = command
        self._end_episode(out)
        self._draw_hud(reading, command)
        return reading

    def _handle_actions(self, reading: InputReading) -> None:
        """Apply the button actions of a reading (quit, pause, reset)."""
        for action in reading.actions:
            if action == "quit":
                self._quit = True
            elif action == "pause":
                self._user_paused = not self._user_paused
            elif action == "reset":
                self.reset_car()

    def reset_car(self, reason: str = "reset") -> None:
        """Finish the episode (``end_reason=reason``); put the car back at the start, standing."""
        self._finish(reason)
        self.stats.resets += 1
        every = ResetRows(torch.ones(1, dtype=torch.bool))
        start = self.task.begin(every, self._generator)
        self.cars.place(every, start, self.task.wheel_friction(start.ego()))
        assert self.cars.measurement is not None
        self._observe(self.cars.measurement, reset=True)
        if isinstance(self.source, StateObserver):
            self.source.reset()

    def _observe(self, m: Measurement, *, reset: bool = False) -> None:
        """Take a new measurement: unwrap the yaw and measure the road under the car."""
        if reset:
            self._yaw = m.yaw
        else:
            prev = self._m.yaw if self._m is not None else m.yaw
            self._yaw = unwrap_yaw(self._yaw, prev, m.yaw)
        self._m = m
        self._sample = self.task.measure(m.ego())

    def _end_episode(self, out: TaskStep) -> None:
        """Act on the task's verdict about the step that just ended.

        A terminated episode puts the car back to the start; at the time limit the file ends and
        the next episode starts where the car is.
        """
        code = int(out.end_reasons()[0])
        if code == 0:
            return
        reason = END_REASONS[code - 1]
        if bool(out.truncated[0]):
            self._finish(reason)
            every = ResetRows(torch.ones(1, dtype=torch.bool))
            self.task.begin_at(every, self.task.variant, self.task.s)
        else:
            self.reset_car(reason)

    # ------------------------------------------------------------------ recording
    def _record(self, steer: float, accel: float) -> None:
        """Append the row of the current measurement and the command being applied."""
        if self._recorder is None:
            self._recorder = EpisodeRecorder(self.out_dir, self._meta(),
                                             flush_rows=self.config.flush_rows,
                                             flush_s=self.config.flush_s)  # fmt: skip
            self._episode_start = self.stats.steps
        m, smp = self._m, self._sample
        assert m is not None and smp is not None
        t = (self.stats.steps - self._episode_start) * CONTROL_DT_S
        row = link_row(m, smp, t=t, yaw=self._yaw, steer=steer, accel=accel)
        self._recorder.append(row)
        self.stats.recorded += 1

    def _meta(self) -> EpisodeMeta:
        """Metadata of the next episode (its id is taken)."""
        meta = EpisodeMeta(
            session_id=self.session_id,
            episode_id=f"e{self._episode:03d}",
            source=self.link.source,
            device=self.device,
            track=self.path.name,
            layout=layout_to_dict(self.layout),
            track_labels=self.path.labels,
            seed=self.seed,
            vehicle=SEDAN.to_dict() if self.config.sim.standin else {},
            extra={"level": self.config.sim.level, "vehicle_model": self.config.sim.vehicle_model},
        )
        self._episode += 1
        return meta

    def _finish(self, reason: str) -> None:
        """Finish the running episode (if any) with ``reason``."""
        recorder, self._recorder = self._recorder, None
        if recorder is not None:
            path = recorder.finish(end_reason=reason)
            if path is not None:
                self.stats.episodes.append(path)
                LOGGER.info("episode %s saved (%d rows, %s)", path.name, recorder.rows, reason)

    def _draw_hud(self, reading: InputReading, command: DriverCommand) -> None:
        """Update the HUD (if any); a closed HUD window quits the session."""
        if self.hud is None or self._m is None or self._sample is None:
            return
        from wheel_collector.hud import HudState

        mu = float(self._sample.mu[0].mean())
        surface = SURFACE_NAMES[int(self._sample.surface[0].mode().values)]
        message = "paused (P to resume)" if self._user_paused else ""
        state = HudState(speed_mps=self._m.v_long, command=command, surface=surface, mu=mu,
                         recording=self.recording, status=reading.status,
                         device=reading.device_name or self.device, message=message)  # fmt: skip
        self.hud.draw(state)
        if self.hud.handle_events():
            self._quit = True


def _device_label(source: InputSource, device_name: str) -> str:
    """Log label of an input device (``device_name`` as its last reading reported it)."""
    name = type(source).__name__
    if name == "ExpertInput":
        return "scripted-expert"
    if name == "KeyboardInput":
        return "keyboard"
    return f"wheel:{device_name or getattr(source, 'device_name', '') or 'unknown'}"
