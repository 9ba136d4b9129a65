"""BeamNG side of the project: the open stand-in server and what the BeamNG env shares with it.

* :class:`~gym_s3.beamng.standin.server.StandInServer`: a loopback server speaking BeamNG's
  protocol so the
  unmodified ``beamngpy`` client drives the project's own vehicle simulator (``s3 standin``).
* :mod:`gym_s3.beamng.lua`: the friction Lua template (rendered by the env, recognised by the
  stand-in); :mod:`gym_s3.beamng.materials`: patch material names; :mod:`gym_s3.beamng.frames`:
  the orientation convention.

Importing this package is cheap; the server (and torch) load on first use of ``StandInServer``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["StandInServer", "WorldConfig"]


def __getattr__(name: str) -> Any:
    """Import the server lazily (it pulls in torch and the vehicle simulator)."""
    if name == "StandInServer":
        from gym_s3.beamng.standin.server import StandInServer

        return StandInServer
    if name == "WorldConfig":
        from gym_s3.beamng.standin.config import WorldConfig

        return WorldConfig
    raise AttributeError(f"module 'gym_s3.beamng' has no attribute {name!r}")
