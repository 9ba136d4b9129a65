"""The orientation convention agrees with beamngpy's own quaternion and matrix helpers."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gym_s3.beamng.frames import (
    body_to_world,
    dir_to_yaw,
    matrix_to_yaw,
    quat_to_matrix,
    quat_to_yaw,
    world_to_body,
    wrap_angle,
    yaw_to_dir,
    yaw_to_matrix,
    yaw_to_quat,
)

angles = st.floats(-math.pi, math.pi - 1e-9)


def test_identity_quaternion_faces_minus_y() -> None:
    """BeamNG vehicles face local -Y: the identity rotation heads -y, i.e. yaw = -pi/2."""
    assert quat_to_yaw((0.0, 0.0, 0.0, 1.0)) == pytest.approx(-math.pi / 2)
    assert yaw_to_dir(quat_to_yaw((0.0, 0.0, 0.0, 1.0))) == pytest.approx((0.0, -1.0, 0.0))


@given(angles)
def test_yaw_round_trips(yaw: float) -> None:
    """Heading -> quaternion, matrix or dir -> heading is the identity."""
    assert wrap_angle(quat_to_yaw(yaw_to_quat(yaw)) - yaw) == pytest.approx(0.0, abs=1e-9)
    assert wrap_angle(matrix_to_yaw(yaw_to_matrix(yaw)) - yaw) == pytest.approx(0.0, abs=1e-9)
    assert wrap_angle(dir_to_yaw(yaw_to_dir(yaw)) - yaw) == pytest.approx(0.0, abs=1e-9)


@given(angles)
def test_quaternion_rotates_local_forward_to_dir(yaw: float) -> None:
    """R(q) @ (0, -1, 0) is the forward direction, R(q) @ (1, 0, 0) points left."""
    m = np.asarray(quat_to_matrix(yaw_to_quat(yaw)))
    assert m @ [0.0, -1.0, 0.0] == pytest.approx(yaw_to_dir(yaw), abs=1e-12)
    left = (math.cos(yaw + math.pi / 2), math.sin(yaw + math.pi / 2), 0.0)
    assert m @ [1.0, 0.0, 0.0] == pytest.approx(left, abs=1e-12)


@given(angles)
def test_prefab_matrix_from_beamngpy_gives_the_same_yaw(bngpy: Any, yaw: float) -> None:
    """The prefab rotationMatrix beamngpy makes of our quaternion decodes to the same heading."""
    from beamngpy.misc.quat import compute_rotation_matrix

    flat = compute_rotation_matrix(yaw_to_quat(yaw)).reshape(9).tolist()
    assert wrap_angle(matrix_to_yaw(flat) - yaw) == pytest.approx(0.0, abs=1e-9)


def test_angle_to_quat_convention(bngpy: Any) -> None:
    """The angle_to_quat((0, 0, a)) of beamngpy turns the -y-facing car to heading a - 90 deg."""
    for deg in (0.0, 30.0, 90.0, -135.0):
        q = bngpy.angle_to_quat((0.0, 0.0, deg))
        assert wrap_angle(quat_to_yaw(q) - math.radians(deg - 90.0)) == pytest.approx(0.0, abs=1e-9)


def test_pitch_is_dropped_and_vertical_rejected() -> None:
    """A pitched car keeps its heading; a car pointing straight up has none."""
    half = math.radians(20.0) / 2  # pitch about the local x axis
    assert quat_to_yaw((math.sin(half), 0.0, 0.0, math.cos(half))) == pytest.approx(-math.pi / 2)
    up = (math.sin(math.pi / 4), 0.0, 0.0, math.cos(math.pi / 4))
    with pytest.raises(ValueError, match="no heading"):
        quat_to_yaw(up)
    with pytest.raises(ValueError, match="4 components"):
        quat_to_yaw((0.0, 0.0, 1.0))


@given(angles, st.floats(-50, 50), st.floats(-50, 50))
def test_body_world_rotation_inverse(yaw: float, fwd: float, left: float) -> None:
    """body_to_world and world_to_body undo each other."""
    x, y = body_to_world(yaw, fwd, left)
    assert world_to_body(yaw, x, y) == pytest.approx((fwd, left), abs=1e-9)
