"""The longitudinal accelerations the car can actually reach, per surface (a measured table).

``accelerations.json`` (next to this module) holds, for every named surface, the best mean
acceleration from a set of start speeds and the best mean braking deceleration, measured in the
high-fidelity vehicle model by ``tools/measure_accelerations.py`` (rerun it when the vehicle
changes). The friction ellipse alone promises ``longitudinal_fraction * mu * g`` (0.59 m/s^2 on
ice); the front-driven car spins its wheels and manages about 0.2 m/s^2. The speed profile caps
its accelerations with :meth:`ReachableAccelerations.limits`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from gym_s3.errors import DataFormatError

TABLE_PATH = Path(__file__).with_name("accelerations.json")


@dataclass(frozen=True, eq=False)
class ReachableAccelerations:
    """Measured acceleration and braking limits as functions of friction and speed.

    Attributes:
        mu: ``(S,)`` ascending peak friction of the measured surfaces [-].
        accel_speeds: ``(G,)`` start speeds of the acceleration measurements [m/s].
        accel: ``(S, G)`` reachable acceleration [m/s^2].
        brake_speeds: ``(H,)`` start speeds of the braking measurements [m/s].
        brake: ``(S, H)`` reachable braking deceleration (positive) [m/s^2].
    """

    mu: np.ndarray
    accel_speeds: np.ndarray
    accel: np.ndarray
    brake_speeds: np.ndarray
    brake: np.ndarray

    @staticmethod
    @cache
    def load(path: Path = TABLE_PATH) -> ReachableAccelerations:
        """Read the table (cached); the values never fall with friction (noise is smoothed away)."""
        try:
            raw = json.loads(Path(path).read_text())
            names = sorted(raw["mu"], key=lambda s: raw["mu"][s])
            mu = np.array([raw["mu"][s] for s in names], dtype=np.float64)
            accel = np.array([raw["accel"][s] for s in names], dtype=np.float64)
            brake = np.array([raw["brake"][s] for s in names], dtype=np.float64)
            speeds = np.array(raw["speeds"], dtype=np.float64)
            brake_speeds = np.array(raw["brake_speeds"], dtype=np.float64)
        except (OSError, KeyError, TypeError, ValueError) as exc:
            raise DataFormatError(
                f"acceleration table {path} is missing or malformed ({exc}); regenerate it with "
                "`python tools/measure_accelerations.py`"
            ) from exc
        if accel.shape != (len(mu), len(speeds)) or brake.shape != (len(mu), len(brake_speeds)):
            raise DataFormatError(f"acceleration table {path} has rows of the wrong length")
        return ReachableAccelerations(
            mu=mu,
            accel_speeds=speeds,
            accel=np.maximum.accumulate(accel, axis=0),
            brake_speeds=brake_speeds,
            brake=np.maximum.accumulate(brake, axis=0),
        )

    def limits(self, kind: str, mu: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(speeds (G,), values (G, *mu.shape))`` of the limit at friction ``mu``.

        Linear in friction between the measured surfaces, proportional to it below the lowest
        and constant above the highest. ``kind`` is ``"accel"`` or ``"brake"``.
        """
        table, speeds = (self.accel, self.accel_speeds) if kind == "accel" else (
            self.brake, self.brake_speeds)  # fmt: skip
        mu = np.asarray(mu, dtype=np.float64)
        flat = mu.reshape(-1)
        values = np.stack([np.interp(flat, self.mu, col) for col in table.T])  # (G, K)
        below = flat < self.mu[0]
        values[:, below] = table[0][:, None] * (flat[below] / self.mu[0])[None, :]
        return speeds, values.reshape((len(speeds), *mu.shape))

    def at(self, kind: str, mu: np.ndarray, speed: np.ndarray) -> np.ndarray:
        """The limit [m/s^2] at friction ``mu`` and speed ``speed`` (same shapes)."""
        speeds, values = self.limits(kind, mu)
        return piecewise_linear(speeds, values, np.asarray(speed, dtype=np.float64))


def piecewise_linear(xp: np.ndarray, fp: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``np.interp`` with its own ``fp`` per element: ``fp`` is ``(G, *x.shape)``; x is clamped."""
    out = fp[0].copy()
    for k in range(len(xp) - 1):
        w = np.clip((x - xp[k]) / (xp[k + 1] - xp[k]), 0.0, 1.0)
        out += (fp[k + 1] - fp[k]) * w
    return out
