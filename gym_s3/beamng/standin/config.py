"""Settings of the stand-in world (physics rate, frame rate, vehicle, sensor conventions)."""

from __future__ import annotations

from dataclasses import dataclass

from gym_s3.errors import ConfigError
from gym_s3.vehicle import SEDAN, VehicleParams


@dataclass(frozen=True)
class WorldConfig:
    """Physics and sensor settings of the stand-in world.

    Attributes:
        steps_per_second: frames per simulated second until ``FPSLimit`` changes it [1/s].
        physics_rate_hz: target physics rate; a frame is ``round(rate / sps)`` physics steps [Hz].
        vehicle_params: parameters of every vehicle (jBeam model names are recorded, not used).
        abs_enabled: simulate anti-lock brakes.
        steering_ratio: steering-wheel angle / road-wheel angle for the ``steering`` electric [-].
        smoothing_rate: rate of the filter behind the smoothed ``GForces`` values [1/s].
        idle_rpm: the ``rpm`` electric at standstill [1/min].
        drive_ratio: driven-wheel speed to ``rpm`` ratio of the stand-in's single-speed drive [-]
            (the vehicle has no gearbox; ``rpm`` is informative only).
        dtype: ``"float64"`` (default, bitwise-repeatable reference) or ``"float32"``.
        device: torch device of the physics.
        torch_threads: intra-op threads of each server thread (a handful of cars gains nothing
            from more; under torch's OpenMP backend the setting is per thread, so it does not
            touch the rest of the process; 0 leaves torch's setting alone).
        compile: run the vehicle physics through ``torch.compile`` (about 10x faster for one car
            after a one-off compile of up to a minute, cached on disk by inductor for later runs).
        max_step_seconds: most simulated time one ``Step`` request may advance [s]; a larger
            ``count / steps_per_second`` is refused with ``bngValueError`` instead of holding the
            world for hours. The default, 600 s, is 36,000 frames at 60 steps per second (about
            8 minutes of CPU time at the default 1 kHz physics on one core for one car).
    """

    steps_per_second: int = 60
    physics_rate_hz: float = 1000.0
    vehicle_params: VehicleParams = SEDAN
    abs_enabled: bool = True
    steering_ratio: float = 15.0
    smoothing_rate: float = 7.0
    idle_rpm: float = 800.0
    drive_ratio: float = 3.5
    dtype: str = "float64"
    device: str = "cpu"
    torch_threads: int = 1
    compile: bool = False
    max_step_seconds: float = 600.0

    def __post_init__(self) -> None:
        """Validate every field."""
        if not (isinstance(self.steps_per_second, int) and 1 <= self.steps_per_second <= 2000):
            raise ConfigError(
                f"steps_per_second must be an int in [1, 2000], got {self.steps_per_second!r}"
            )
        for name in ("physics_rate_hz", "steering_ratio", "smoothing_rate", "drive_ratio"):
            if not getattr(self, name) > 0:
                raise ConfigError(f"WorldConfig.{name} must be > 0, got {getattr(self, name)!r}")
        if not (isinstance(self.torch_threads, int) and self.torch_threads >= 0):
            raise ConfigError(
                f"WorldConfig.torch_threads must be an int >= 0, got {self.torch_threads!r}"
            )
        if not (
            isinstance(self.max_step_seconds, (int, float))
            and 0 < self.max_step_seconds < float("inf")
        ):
            raise ConfigError(
                "WorldConfig.max_step_seconds must be a finite number of seconds > 0, got "
                f"{self.max_step_seconds!r}"
            )
        if self.idle_rpm < 0:
            raise ConfigError(f"WorldConfig.idle_rpm must be >= 0, got {self.idle_rpm!r}")
        if self.dtype not in ("float32", "float64"):
            raise ConfigError(
                f"WorldConfig.dtype must be 'float32' or 'float64', got {self.dtype!r}"
            )


def standin_world(fast: bool) -> WorldConfig:
    """The world of an in-process stand-in: ``fast`` is float32 physics through ``torch.compile``.

    ``fast=False`` is the float64 eager reference physics (bitwise repeatable). ``s3 evaluate``,
    ``S3BeamNG-v0(standin_fast=True)`` and the batched lap runner
    (:mod:`policies.evaluate_model`) all take their physics settings from here.
    """
    return WorldConfig(dtype="float32", compile=True) if fast else WorldConfig()
