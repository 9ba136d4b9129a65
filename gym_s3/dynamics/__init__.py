"""Distillable dynamics backends, their registry and checkpoints.

``make(name, **kwargs)`` builds an untrained backend; ``load(name_or_path)`` loads a trained one
(a registered name loads the default checkpoint shipped in ``gym_s3/assets/dynamics/``, anything
else is a checkpoint path); ``save(backend, path, ...)`` writes a checkpoint.

Backends: ``bicycle`` (kinematic, fitted), ``ddm`` (Deep Dynamics Model), ``trans`` (sliding-window
transformer) and ``dytr`` (DDM + transformer residual).
"""

from __future__ import annotations

from gym_s3.dynamics.base import (
    HISTORY_FEATURES,
    BackendState,
    DynamicsBackend,
    integrate_pose,
)
from gym_s3.dynamics.io import default_checkpoint, load, save, source
from gym_s3.dynamics.priming import state_from_window
from gym_s3.dynamics.registry import backend_names, make, register_backend

__all__ = [
    "HISTORY_FEATURES",
    "BackendState",
    "DynamicsBackend",
    "backend_names",
    "default_checkpoint",
    "integrate_pose",
    "load",
    "make",
    "register_backend",
    "save",
    "source",
    "state_from_window",
]
