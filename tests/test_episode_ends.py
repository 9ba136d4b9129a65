"""One termination rule: the env, data generation and the collector end the same drives alike.

Five scripted drives on an open town route, each built to end one way: leaving the road,
spinning out, a simulator fault, reaching the end of the route, and the time limit. The same
car states are fed (through a replaying source of cars) into the three loops that drive cars:
``S3Distilled-v0``'s core, the episode loop of ``s3 data generate`` and the collection session
(through a replaying simulator link). Every loop must end every drive at the same control step
for the same reason. The recorders differ only in whether the final state is a row: data
generation logs it (rows = step + 1), the session resets before logging it (rows = step).
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from gym_s3.beamng.client.link import Measurement
from gym_s3.data.dataset import DrivingDataset
from gym_s3.data.generate_config import GenerateConfig
from gym_s3.envs.config import DistilledConfig, ScenarioConfig
from gym_s3.envs.core import DistilledCore
from gym_s3.loop import drive
from gym_s3.observations import EgoState
from gym_s3.rows import ResetRows
from gym_s3.scenarios.pool import PoolConfig, ScenarioPool
from gym_s3.sources import CarStep, SimLinkCars
from gym_s3.task import END_REASONS, TaskConfig, TrackingTask
from gym_s3.task_types import StartPose, end_reason_codes
from gym_s3.tracks import SurfaceLayout
from gym_s3.tracks.registry import cached_track
from wheel_collector.commands import DriverCommand, InputReading, InputStatus
from wheel_collector.session import CollectionSession, SessionConfig

pytestmark = pytest.mark.timeout(240)

TRACK = "town:0"
LIMIT = 20  # time limit [control steps]
MARGIN = 1.0  # off-track margin [m]
#: the reason each drive is built to end with
DESIGNED = ("off_track", "spin_out", "fault", "completed", "time_limit")
ASPHALT = SurfaceLayout.uniform("asphalt")


def drives() -> list[dict]:
    """The five drives in Frenet terms.

    Each gives its start ``s0`` [m], advance per step ``ds`` [m], lateral offset ``d * k`` [m],
    heading offset ``psi * k`` [rad] and the step from which the source flags a fault.
    """
    length = cached_track(TRACK).length
    calm = {"s0": 0.0, "ds": 0.5, "d": 0.0, "psi": 0.0, "fault": None}
    return [
        {**calm, "d": 0.8},  # drifts left off the road
        {**calm, "psi": 0.3},  # turns away from the path until it counts as a spin
        {**calm, "fault": 4},  # the simulator flags the car
        {**calm, "s0": length - 40.0, "ds": 4.0},  # reaches the end of the open route
        calm,  # drives until the time limit
    ]


def pose(drive_: dict, k: int) -> tuple[float, float, float, bool]:
    """World ``x, y, yaw`` and the fault flag of a drive after ``k`` steps."""
    path = cached_track(TRACK)
    smp = path.sample(torch.tensor([drive_["s0"] + drive_["ds"] * k], dtype=torch.float64))
    d, h = drive_["d"] * k, float(smp.heading[0]) + drive_["psi"] * k
    x = float(smp.x[0]) - d * math.sin(float(smp.heading[0]))
    y = float(smp.y[0]) + d * math.cos(float(smp.heading[0]))
    return x, y, h, drive_["fault"] is not None and k >= drive_["fault"]


class ReplayCars:
    """A source of cars that replays the scripted drives (ignores actions and friction)."""

    def __init__(self, plan: list[dict]) -> None:
        self.plan, self.num_cars, self.k = plan, len(plan), 0

    def _now(self) -> CarStep:
        rows = [pose(p, self.k) for p in self.plan]
        x, y, yaw = (torch.tensor([r[i] for r in rows]) for i in range(3))
        speed = torch.full_like(x, 10.0)
        zero = torch.zeros_like(x)
        return CarStep(EgoState(x, y, yaw, speed, zero, zero), torch.tensor([r[3] for r in rows]))

    def place(self, select: ResetRows, start: StartPose, wheel_mu: torch.Tensor) -> EgoState:
        """Restart every drive (the scripted starts are the task's start poses)."""
        self.k = 0
        return self._now().ego

    def advance(self, action, surfaces, wheel_mu) -> CarStep:
        """The next scripted state."""
        self.k += 1
        return self._now()


class ReplayLink:
    """A simulator link whose car follows one scripted drive (teleports restart it)."""

    source = "standin-server"

    def __init__(self, drive_: dict) -> None:
        self.drive, self.k = drive_, 0

    def _measure(self) -> Measurement:
        x, y, yaw, fault = pose(self.drive, self.k)
        return Measurement(x, y, 0.0, yaw, 10.0, 0.0, 0.0, 0.0, 0.0, (31.0,) * 4, 0.0, 0.0, 0.0,
                           0.0, 0.0, fault)  # fmt: skip

    def open(self) -> Measurement:
        """The car at the start of the drive."""
        self.k = 0
        return self._measure()

    def teleport(self, x: float, y: float, yaw: float, speed: float = 0.0) -> Measurement:
        """Back to the start of the drive."""
        return self.open()

    def control(self, steer: float, throttle: float, brake: float) -> None:
        """The replay ignores the controls."""

    def step(self) -> Measurement:
        """The next scripted state."""
        self.k += 1
        return self._measure()

    def close(self) -> None:
        """Nothing to release."""


class Coasting:
    """An always-connected input device sending no inputs."""

    device_name = "coasting"

    def poll(self) -> InputReading:
        """No steering, no pedals."""
        return InputReading(DriverCommand(source="wheel"), InputStatus.CONNECTED, self.device_name)

    def close(self) -> None:
        """Nothing to release."""


def task_rules(config: TaskConfig) -> tuple:
    """The settings that decide where episodes end."""
    return (config.off_track_margin_m, config.spin_heading_rad, config.complete_margin_m,
            config.complete_laps, config.max_episode_steps)  # fmt: skip


def starts() -> tuple[float, ...]:
    """The distinct start arc lengths of the drives (the env's scenario starts)."""
    return tuple(sorted({p["s0"] for p in drives()}))


ENV_TASK = TaskConfig(max_episode_steps=LIMIT, off_track_margin_m=MARGIN, start_lateral_m=0.0,
                      start_heading_rad=0.0, start_speed_fraction=(0.0, 0.0))  # fmt: skip
GENERATE = GenerateConfig(episode_s=(LIMIT + 1) * 0.05, off_track_margin_m=MARGIN)


def session_config(out: Path, drive_: dict) -> SessionConfig:
    """The collection session of one drive."""
    return SessionConfig(out_dir=str(out), track=TRACK, start_s=drive_["s0"], duration_s=0,
                         episode_s=LIMIT * 0.05, off_track_m=MARGIN)  # fmt: skip


def env_ends() -> list[tuple[str, int]]:
    """``(reason, step)`` of each drive's first episode in ``S3Distilled-v0``'s core."""
    scenario = ScenarioConfig(tracks=(TRACK,), layouts=(ASPHALT,), starts=starts())
    core = DistilledCore(5, DistilledConfig(task=ENV_TASK, scenario=scenario, seed=0))
    core.cars = ReplayCars(drives())
    ids = torch.tensor([starts().index(p["s0"]) for p in drives()])
    core.reset(scenario=ids)
    ends: dict[int, tuple[str, int]] = {}
    for k in range(1, LIMIT + 2):
        out = core.step(torch.zeros(5, 2))
        code = end_reason_codes(out.info, out.truncated)
        for car in range(5):
            if int(code[car]) and car not in ends:
                ends[car] = (END_REASONS[int(code[car]) - 1], k)
    return [ends.get(car, ("running", -1)) for car in range(5)]


def generate_ends() -> list[tuple[str, int]]:
    """``(reason, step)`` of each drive in the episode loop of ``s3 data generate``."""
    plan = drives()
    path = cached_track(TRACK)
    pool = ScenarioPool.build([path], [[ASPHALT]], PoolConfig(), starts=[[0.0]])
    task = TrackingTask(pool, 5, GENERATE.task())
    every = ResetRows(torch.ones(5, dtype=torch.bool))
    task.begin_at(every, torch.zeros(5, dtype=torch.int64), torch.tensor([p["s0"] for p in plan]))
    cars = ReplayCars(plan)
    ego = cars.place(every, None, None)  # type: ignore[arg-type]
    ends = drive(task, cars, lambda e, s, t: torch.zeros(5, 2), ego, GENERATE.steps + 5)
    return [(END_REASONS[int(r) - 1] if int(r) else "running", int(n) - 1)
            for r, n in zip(ends.reason, ends.rows, strict=True)]  # fmt: skip


def session_ends(tmp_path: Path) -> list[tuple[str, int]]:
    """``(reason, step)`` of each drive's first episode file in a collection session."""
    out = []
    for i, plan in enumerate(drives()):
        session = CollectionSession(session_config(tmp_path / str(i), plan), Coasting())
        session.link = ReplayLink(plan)  # type: ignore[assignment]
        session.cars = SimLinkCars(session.link)  # type: ignore[arg-type]
        with session:
            while not session.stats.episodes and session.stats.steps < LIMIT + 5:
                session.step()
        first = DrivingDataset.load(tmp_path / str(i)).episodes[0]
        out.append((first.meta.extra["end_reason"], first.num_rows))
    return out


def test_the_three_loops_share_the_rules() -> None:
    """The env, generation and session tasks have the same termination settings."""
    session = session_config(Path("."), drives()[0]).task()
    assert task_rules(ENV_TASK) == task_rules(GENERATE.task()) == task_rules(session)


def test_same_states_end_alike_in_env_generation_and_collector(tmp_path: Path) -> None:
    """Every loop ends every drive at the same step for the designed reason."""
    torch.set_num_threads(1)
    env, generated, collected = env_ends(), generate_ends(), session_ends(tmp_path)
    assert [reason for reason, _ in env] == list(DESIGNED), env
    steps = [step for _, step in env]
    assert steps[2] == 4 and steps[3] == 10 and steps[4] == LIMIT, env
    assert 0 < steps[0] < LIMIT and steps[1] == 6, env
    assert generated == env
    assert collected == env
