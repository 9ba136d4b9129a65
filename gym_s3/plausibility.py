"""Physical ranges of numbers that enter from files and configs, and the one check of them.

Checkpoint sidecars, policy sidecars, driving logs and configs carry numbers that the code
trusts: a time step, a mass, a friction coefficient, a standard deviation it divides by. A
finite but absurd value (``dt = 1.0``, ``mass = 1``, ``mu = -5``) or a NaN silently breaks the
physics, so every such number is checked against a range here, and the error names the field,
the value, the range with its unit, where the value came from and what to do.

Example::

    check_bounds(config, DYNAMICS_CONFIG_BOUNDS, where="dynamics checkpoint x.json",
                 fix="re-train or re-save it", error=CheckpointError)
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from gym_s3.errors import ConfigError


@dataclass(frozen=True)
class Bounds:
    """An inclusive physical range.

    Attributes:
        lo: smallest plausible value.
        hi: largest plausible value.
        unit: unit for messages ("s", "kg", "-").
        integer: the value must be a whole number.
    """

    lo: float
    hi: float
    unit: str = "-"
    integer: bool = False

    def problem(self, value: Any) -> str | None:
        """Why ``value`` is out of range (``None`` when it is plausible)."""
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return f"is {type(value).__name__}, expected a number"
        if self.integer and not float(value).is_integer():
            return "is not a whole number"
        if not math.isfinite(value) or not self.lo <= value <= self.hi:
            return f"is outside its physical range [{self.lo:g}, {self.hi:g}] {self.unit}"
        return None


def check_value(
    field: str,
    value: Any,
    bounds: Bounds,
    *,
    where: str,
    fix: str,
    error: type[Exception] = ConfigError,
) -> None:
    """Raise ``error`` naming ``where``, ``field``, ``value`` and the range if implausible."""
    problem = bounds.problem(value)
    if problem is not None:
        raise error(f"{where}: {field} = {value!r} {problem}; {fix}")


def check_bounds(
    values: Mapping[str, Any],
    bounds: Mapping[str, Bounds],
    *,
    where: str,
    fix: str,
    error: type[Exception] = ConfigError,
    prefix: str = "",
) -> None:
    """Check every entry of ``values`` that has bounds; nested mappings are checked recursively.

    Args:
        values: e.g. a backend config from a sidecar.
        bounds: ranges by field name (fields without bounds are not checked here).
        where: the source, for the message (a file, a config class).
        fix: what to do, for the message.
        error: the exception class raised.
        prefix: dotted path of ``values`` inside the source (for nested configs).
    """
    for name, value in values.items():
        field = f"{prefix}{name}"
        if isinstance(value, Mapping):
            check_bounds(value, bounds, where=where, fix=fix, error=error, prefix=f"{field}.")
        elif name in bounds:
            check_value(field, value, bounds[name], where=where, fix=fix, error=error)


#: Ranges of the constructor configs of the dynamics backends (every backend's fields).
DYNAMICS_CONFIG_BOUNDS: dict[str, Bounds] = {
    "dt": Bounds(0.005, 0.2, "s"),
    "mass": Bounds(100.0, 50000.0, "kg"),
    "yaw_inertia": Bounds(10.0, 200000.0, "kg m^2"),
    "l_f": Bounds(0.3, 5.0, "m"),
    "l_r": Bounds(0.3, 5.0, "m"),
    "wheelbase": Bounds(0.5, 8.0, "m"),
    "substeps": Bounds(2, 64, "-", integer=True),
    "history": Bounds(1, 200, "rows", integer=True),
    "window": Bounds(1, 200, "rows", integer=True),
    "hidden": Bounds(1, 4096, "units", integer=True),
    "layers": Bounds(1, 16, "-", integer=True),
    "d_model": Bounds(1, 2048, "units", integer=True),
    "heads": Bounds(1, 64, "-", integer=True),
    "ff_mult": Bounds(1, 16, "-", integer=True),
    "slip_speed_floor": Bounds(0.05, 30.0, "m/s"),
    "max_accel": Bounds(0.5, 200.0, "m/s^2"),
    "max_yaw_accel": Bounds(0.5, 500.0, "rad/s^2"),
    "residual_bound": Bounds(0.0, 100.0, "-"),
    "accel_gain": Bounds(0.0, 100.0, "m/s^2"),
    "brake_gain": Bounds(0.0, 100.0, "m/s^2"),
    "drag": Bounds(0.0, 0.1, "1/m"),
    "grip": Bounds(0.01, 5.0, "-"),
    "power_per_mass": Bounds(1.0, 2000.0, "W/kg"),
    "rolling": Bounds(0.0, 2.0, "m/s^2"),
    "steer_gain": Bounds(0.01, 2.0, "rad"),
    "steer_tau": Bounds(0.0, 5.0, "s"),
}

#: Ranges of policy sidecar fields.
POLICY_BOUNDS: dict[str, Bounds] = {
    "obs_size": Bounds(1, 10000, "features", integer=True),
    "hidden": Bounds(1, 4096, "units", integer=True),
    "members": Bounds(2, 64, "actors", integer=True),
}

#: Largest standard deviation of a normalisation statistic (anything above is not a feature of a
#: car) and the smallest (dividing by less amplifies noise beyond any use).
STD_BOUNDS = Bounds(1e-6, 1e6, "feature units")
#: Range of a normalisation mean.
MEAN_BOUNDS = Bounds(-1e6, 1e6, "feature units")

#: Ranges of driving-log columns (generous: a crash or a spin stays inside; garbage does not).
LOG_COLUMN_BOUNDS: dict[str, Bounds] = {
    "t": Bounds(0.0, 1e7, "s"),
    "x": Bounds(-1e6, 1e6, "m"),
    "y": Bounds(-1e6, 1e6, "m"),
    "z": Bounds(-1e4, 1e4, "m"),
    "yaw": Bounds(-1e5, 1e5, "rad"),
    "v_long": Bounds(-100.0, 150.0, "m/s"),
    "v_lat": Bounds(-100.0, 100.0, "m/s"),
    "yaw_rate": Bounds(-50.0, 50.0, "rad/s"),
    "ax": Bounds(-1000.0, 1000.0, "m/s^2"),
    "ay": Bounds(-1000.0, 1000.0, "m/s^2"),
    **{f"omega_{w}": Bounds(-1e4, 1e4, "rad/s") for w in ("fl", "fr", "rl", "rr")},
    "steer": Bounds(-1.001, 1.001, "-"),
    "accel": Bounds(-1.001, 1.001, "-"),
    "steer_cmd_raw": Bounds(-1.001, 1.001, "-"),
    "throttle_cmd": Bounds(-0.001, 1.001, "-"),
    "brake_cmd": Bounds(-0.001, 1.001, "-"),
    "steer_applied": Bounds(-1.6, 1.6, "rad"),
    "throttle_applied": Bounds(-0.001, 1.001, "-"),
    "brake_applied": Bounds(-0.001, 1.001, "-"),
    **{f"mu_{w}": Bounds(0.0, 3.0, "-") for w in ("fl", "fr", "rl", "rr")},
    "s": Bounds(-1e6, 1e6, "m"),
    "d": Bounds(-1e4, 1e4, "m"),
    "target_speed": Bounds(0.0, 150.0, "m/s"),
}
#: Range of the time between two rows of a log [s] (a pause longer than this ends an episode).
LOG_STEP_BOUNDS = Bounds(0.0, 10.0, "s")

#: Range of episode seeds: torch generators take 64-bit signed seeds, gymnasium non-negative ones.
SEED_BOUNDS = Bounds(0, 2**63 - 1, "-", integer=True)


def check_seed(seed: Any) -> int:
    """``seed`` as an int if it is a whole number in :data:`SEED_BOUNDS`.

    Raises:
        ConfigError: naming the seed, the range and what to pass instead.
    """
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise ConfigError(f"seed must be an integer, got {seed!r}; pass e.g. seed=0")
    if not 0 <= int(seed) <= SEED_BOUNDS.hi:
        raise ConfigError(
            f"seed {seed} is outside [0, 2**63 - 1] (torch generators take 63-bit seeds); pass a "
            "smaller seed, e.g. seed % 2**63"
        )
    return int(seed)
