"""One convention for vehicle orientation on the BeamNG side: yaw, quaternion, matrix, direction.

BeamNG's world is right-handed and z-up, in metres. A vehicle's *local* frame has its forward axis
along **-Y**, +X to its left and +Z up (BeamNG docs, GForces sensor: "+X left, +Y backward, +Z
up"). Quaternions are ``(x, y, z, w)`` with ``w`` the real part, as in beamngpy, and rotate local
vectors into the world (``world = R(q) @ local``); beamngpy's ``compute_rotation_matrix`` gives the
row-major matrix of the same rotation, which is what a scenario prefab carries as
``rotationMatrix``.

The project's own convention is a *yaw* angle ``psi`` [rad], counter-clockwise from world +x to
the vehicle's forward direction (``dir = (cos psi, sin psi, 0)``). Because forward is local -Y, a
vehicle with yaw ``psi`` is rotated by ``psi + pi/2`` about z, and the identity quaternion
``(0, 0, 0, 1)`` faces world -y (``psi = -pi/2``).

Only yaw is kept: pitch and roll of a quaternion are dropped by projecting the forward direction
onto the ground plane. Both the stand-in server and the BeamNG env use these functions, so the
spawn, teleport, prefab and ``State`` paths all agree. (Unverified against a running BeamNG
0.39; see the reference notes §4.)

Functions take and return plain floats and tuples: they convert single messages, not batches.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

#: local forward axis of a BeamNG vehicle
LOCAL_FORWARD = (0.0, -1.0, 0.0)
#: local left axis of a BeamNG vehicle
LOCAL_LEFT = (1.0, 0.0, 0.0)

Quat = tuple[float, float, float, float]
Vec3 = tuple[float, float, float]
Matrix3 = tuple[Vec3, Vec3, Vec3]


def wrap_angle(angle: float) -> float:
    """Wrap an angle [rad] into ``[-pi, pi)``."""
    return (angle + math.pi) % (2.0 * math.pi) - math.pi


def yaw_to_quat(yaw: float) -> Quat:
    """Quaternion ``(x, y, z, w)`` of a vehicle whose forward axis has heading ``yaw`` [rad]."""
    half = 0.5 * (yaw + 0.5 * math.pi)
    return (0.0, 0.0, math.sin(half), math.cos(half))


def normalize_quat(quat: Sequence[float]) -> Quat:
    """Return ``quat`` scaled to unit length.

    Raises:
        ValueError: ``quat`` does not have four finite components or has (near) zero length.
    """
    if len(quat) != 4:
        raise ValueError(f"a quaternion has 4 components (x, y, z, w), got {len(quat)}")
    x, y, z, w = (float(c) for c in quat)
    norm = math.sqrt(x * x + y * y + z * z + w * w)
    if not math.isfinite(norm) or norm < 1e-9:
        raise ValueError(f"quaternion {tuple(quat)} has no usable length (norm {norm})")
    return (x / norm, y / norm, z / norm, w / norm)


def quat_to_matrix(quat: Sequence[float]) -> Matrix3:
    """Rotation matrix (rows) of a quaternion ``(x, y, z, w)``; normalises it first."""
    x, y, z, w = normalize_quat(quat)
    return (
        (1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)),
        (2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)),
        (2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)),
    )


def matrix_to_yaw(matrix: Sequence[Sequence[float]] | Sequence[float]) -> float:
    """Heading [rad] of the vehicle forward axis under a rotation matrix.

    Args:
        matrix: 3x3 rows, or the 9 row-major floats of a prefab ``rotationMatrix``.

    Raises:
        ValueError: the matrix has the wrong size or maps forward (near) vertically.
    """
    flat = [float(v) for row in matrix for v in row] if _is_nested(matrix) else list(matrix)
    if len(flat) != 9:
        raise ValueError(f"a rotation matrix has 9 entries, got {len(flat)}")
    # forward = M @ (0, -1, 0) = -(second column)
    fx, fy = -flat[1], -flat[4]
    if math.hypot(fx, fy) < 1e-6:
        raise ValueError("rotation points the vehicle straight up or down; it has no heading")
    return math.atan2(fy, fx)


def quat_to_yaw(quat: Sequence[float]) -> float:
    """Heading [rad] of the vehicle forward axis of a quaternion ``(x, y, z, w)``."""
    return matrix_to_yaw(quat_to_matrix(quat))


def yaw_to_matrix(yaw: float) -> Matrix3:
    """Rotation matrix (rows) of a vehicle with heading ``yaw`` [rad]."""
    return quat_to_matrix(yaw_to_quat(yaw))


def yaw_to_dir(yaw: float) -> Vec3:
    """Unit forward direction in the world of a vehicle with heading ``yaw`` [rad]."""
    return (math.cos(yaw), math.sin(yaw), 0.0)


def dir_to_yaw(direction: Sequence[float]) -> float:
    """Heading [rad] of a world direction vector (its z component is ignored).

    Raises:
        ValueError: the direction has no horizontal part.
    """
    dx, dy = float(direction[0]), float(direction[1])
    if math.hypot(dx, dy) < 1e-9:
        raise ValueError(f"direction {tuple(direction)} has no horizontal component")
    return math.atan2(dy, dx)


def body_to_world(yaw: float, forward: float, left: float) -> tuple[float, float]:
    """Rotate a body-frame planar vector (forward, left) into world (x, y)."""
    c, s = math.cos(yaw), math.sin(yaw)
    return (c * forward - s * left, s * forward + c * left)


def world_to_body(yaw: float, x: float, y: float) -> tuple[float, float]:
    """Rotate a world planar vector (x, y) into the body frame (forward, left)."""
    c, s = math.cos(yaw), math.sin(yaw)
    return (c * x + s * y, -s * x + c * y)


def _is_nested(matrix: Sequence[Sequence[float]] | Sequence[float]) -> bool:
    return len(matrix) > 0 and isinstance(matrix[0], Sequence)
