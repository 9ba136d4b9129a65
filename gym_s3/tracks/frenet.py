"""What path queries return: the path at arc lengths and points projected onto it.

:class:`PathSample` is the path at arc lengths; :class:`Frenet` is points projected onto it.
Both are batched results of :class:`~gym_s3.tracks.bank.PathBank` (and of
:class:`~gym_s3.tracks.path.ReferencePath`, which delegates to a one-path bank). They live apart
from both so that neither module imports the other to build them.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor

__all__ = ["Frenet", "PathSample"]


@dataclass(frozen=True)
class Frenet:
    """Batched projection of N points onto a path.

    Attributes:
        s: ``(N,)`` arc length of the projection [m] (in ``[0, length)`` on closed paths; may fall
            outside ``[0, length]`` before the start or past the end of an open path).
        d: ``(N,)`` signed lateral offset, positive left [m].
        heading: ``(N,)`` path heading at the projection [rad].
        curvature: ``(N,)`` path curvature at the projection [1/m].
        index: ``(N,)`` int64 index of the sample nearest to the point (the hint for the next
            call).
        width_left: ``(N,)`` road width left of the centreline at ``s`` [m].
        width_right: ``(N,)`` road width right of the centreline at ``s`` [m].
    """

    s: Tensor
    d: Tensor
    heading: Tensor
    curvature: Tensor
    index: Tensor
    width_left: Tensor
    width_right: Tensor


@dataclass(frozen=True)
class PathSample:
    """Path attributes interpolated at arbitrary arc lengths; every field has the shape of ``s``.

    Attributes:
        x: world x [m].
        y: world y [m].
        z: elevation [m].
        heading: tangent heading [rad].
        curvature: curvature [1/m].
        width_left: width left of the centreline [m].
        width_right: width right of the centreline [m].
    """

    x: Tensor
    y: Tensor
    z: Tensor
    heading: Tensor
    curvature: Tensor
    width_left: Tensor
    width_right: Tensor
