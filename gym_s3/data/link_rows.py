"""Log rows of one car driven over the simulator link (BeamNG.tech or the open stand-in).

Every recorder of a live ``beamngpy`` drive (the collection session of ``s3 collect``, policy
rollouts of ``s3 rollouts --simulator standin|beamng``) builds its rows here, so the columns of
:mod:`gym_s3.data.schema` mean the same whoever drove: the measured state at ``t_k``
(:class:`~gym_s3.beamng.client.link.Measurement`), the action applied from ``t_k`` to
``t_{k+1}`` and the road under the car from the tracking task
(:meth:`~gym_s3.task.TrackingTask.measure`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from gym_s3.spec import WHEELS

if TYPE_CHECKING:  # pragma: no cover
    from gym_s3.beamng.client.link import Measurement
    from gym_s3.task_types import TrackSample

__all__ = ["link_row", "unwrap_yaw"]


def unwrap_yaw(unwrapped: float, previous: float, current: float) -> float:
    """The continuous heading after a step: ``unwrapped`` plus the wrapped change [rad].

    Args:
        unwrapped: the continuous heading before the step [rad].
        previous: the simulator's (wrapped) heading before the step [rad].
        current: its (wrapped) heading after the step [rad].
    """
    return unwrapped + (current - previous + math.pi) % (2 * math.pi) - math.pi


def link_row(
    m: Measurement,
    sample: TrackSample,
    *,
    t: float,
    yaw: float,
    steer: float,
    accel: float,
) -> dict[str, Any]:
    """One log row (every column of :data:`~gym_s3.data.schema.COLUMNS`) of a one-car drive.

    Args:
        m: the measurement at ``t``.
        sample: the road under the car at ``t`` (row 0 of a one-car ``TrackSample``).
        t: time since the start of the episode [s].
        yaw: the continuous heading (:func:`unwrap_yaw`) [rad].
        steer: the action's steering applied from ``t`` on, in ``[-1, 1]`` (+1 = right).
        accel: the action's pedal, ``> 0`` throttle, ``< 0`` brake, in ``[-1, 1]``.
    """
    row: dict[str, Any] = {
        "t": t, "x": m.x, "y": m.y, "z": m.z, "yaw": yaw, "v_long": m.v_long, "v_lat": m.v_lat,
        "yaw_rate": m.yaw_rate, "ax": m.ax, "ay": m.ay, "steer": steer, "accel": accel,
        "steer_cmd_raw": steer, "throttle_cmd": max(accel, 0.0), "brake_cmd": max(-accel, 0.0),
        "steer_applied": m.steer_applied, "throttle_applied": m.throttle_applied,
        "brake_applied": m.brake_applied, "s": float(sample.s[0]), "d": float(sample.d[0]),
        "target_speed": float(sample.target_speed[0]), "fault": m.fault,
    }  # fmt: skip
    for i, w in enumerate(WHEELS):
        row[f"omega_{w}"] = m.omega[i]
        row[f"mu_{w}"] = float(sample.mu[0, i])
        row[f"surface_{w}"] = int(sample.surface[0, i])
    return row
