"""gym_s3: the Sim2Sim2Sim Gymnasium plugin.

Importing this package registers two environment ids and nothing heavier (torch, beamngpy and
pygame are imported lazily by the environments themselves):

* ``S3Distilled-v0``: thousands of cars stepped as torch tensors by a distilled dynamics backend
  (``bicycle``, ``ddm``, ``trans``, ``dytr``). ``gym.make(..., num_envs=N)`` returns a batched env,
  ``gym.make_vec(..., num_envs=N)`` a :class:`gymnasium.vector.VectorEnv`.
* ``S3BeamNG-v0``: one car in BeamNG.tech through the real ``beamngpy`` client, or in the open
  stand-in simulator that speaks BeamNG's protocol (``standin=True``).

Both share the observation and action spec of :mod:`gym_s3.spec`.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from gym_s3._registration import register_envs

try:
    __version__ = version("sim2sim2sim")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0.0.0+unknown"

register_envs()

__all__ = ["__version__", "register_envs"]
