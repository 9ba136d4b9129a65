"""Fixtures for the stand-in tests: an in-process server on port 0 and real beamngpy clients.

Every test talks to the server through the unmodified ``beamngpy`` client over 127.0.0.1; see
``standin_support.py`` for the fast world settings.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from standin_support import FAST_WORLD, SOCKET_TIMEOUT_S

from gym_s3.beamng.standin.server import StandInServer


@pytest.fixture(scope="session")
def bngpy() -> Any:
    """The ``beamngpy`` module, imported once per session (the import takes about 3 s)."""
    module = pytest.importorskip("beamngpy")
    logging.getLogger("beamngpy").setLevel(logging.WARNING)
    return module


@pytest.fixture
def server() -> Iterator[StandInServer]:
    """A strict stand-in on a free loopback port; unknown requests fail the test at teardown."""
    srv = StandInServer(strict=True, world_config=FAST_WORLD)
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()
    srv.check()


@pytest.fixture
def connect(bngpy: Any) -> Iterator[Callable[[StandInServer], Any]]:
    """Factory of opened ``BeamNGpy`` clients (``open(launch=False)``), disconnected at teardown."""
    clients: list[Any] = []

    def make(srv: StandInServer) -> Any:
        bng = bngpy.BeamNGpy(
            "127.0.0.1", srv.port, quit_on_close=False, socket_timeout=SOCKET_TIMEOUT_S
        )
        bng.open(launch=False)
        clients.append(bng)
        return bng

    yield make
    for bng in clients:
        try:
            bng.disconnect()
        except Exception:  # noqa: BLE001 - a test may have killed the server already
            pass
