"""Catalogue cases of simulator connections: nothing listening, silence, death mid-episode.

``S3BeamNG-v0`` drives the real ``beamngpy`` client against loopback peers: a free port, a server
that accepts and never answers (:class:`~badinput_support.SilentServer`), the in-process stand-in
stopped mid-episode, and the stand-in behind a proxy that freezes mid-episode. beamngpy waits for
an answer twice (its read times out, it reconnects, and the second read times out), so a silent
peer must be reported within ``2 x socket_timeout`` plus :data:`MARGIN_S`.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from badinput_support import Case, FreezableProxy, SilentServer, free_port

from gym_s3.errors import ConfigError, SimulatorConnectionError, SimulatorTimeoutError

#: client socket timeout of these cases [s]
TIMEOUT_S = 1.0
#: time allowed beyond two socket timeouts (scenario teardown, thread hand-offs) [s]
MARGIN_S = 3.0
GO = np.array([0.0, 0.5], dtype=np.float32)


def _env(**kwargs: object):
    """``S3BeamNG-v0`` with a short socket timeout (beamngpy imported before any timing)."""
    import beamngpy  # noqa: F401  (a 2-3 s import that must not count against the timeout)

    from gym_s3.envs.beamng import S3BeamNGEnv

    return S3BeamNGEnv(socket_timeout=TIMEOUT_S, **kwargs)


def _within(limit_s: float, start: float) -> None:
    """Fail (whatever was raised) when more than ``limit_s`` passed since ``start``."""
    elapsed = time.monotonic() - start
    if elapsed > limit_s:
        raise AssertionError(f"took {elapsed:.1f} s to report the failure (limit {limit_s} s)")


def _reset_on_port(port: int) -> None:
    """Reset an env pointed at ``port``; the failure must come within beamngpy's retry bound."""
    env = _env(port=port)
    start = time.monotonic()
    try:
        env.reset(seed=0)
    finally:
        env.close()
        _within(2 * TIMEOUT_S + MARGIN_S, start)


def _nothing_listening(work: Path) -> None:
    """Reset with no simulator on the port."""
    _reset_on_port(free_port())


def _silent_server(work: Path) -> None:
    """Reset against a program that accepts the connection and never answers."""
    with SilentServer() as server:
        _reset_on_port(server.port)


def _killed_mid_episode(work: Path) -> None:
    """Stop the in-process stand-in after a few steps, then keep stepping."""
    env = _env(standin=True)
    try:
        env.reset(seed=0)
        for _ in range(3):
            env.step(GO)
        env.link.server.stop()
        start = time.monotonic()
        try:
            for _ in range(3):
                env.step(GO)
        finally:
            _within(2 * TIMEOUT_S + MARGIN_S, start)
    finally:
        env.close()


def _frozen_mid_episode(work: Path) -> None:
    """The simulator stops answering (connections stay open) after a few steps."""
    from gym_s3.beamng.standin.server import StandInServer

    with StandInServer() as server, FreezableProxy(server.port) as proxy:
        env = _env(port=proxy.port)
        try:
            env.reset(seed=0)
            for _ in range(3):
                env.step(GO)
            proxy.freeze()
            start = time.monotonic()
            try:
                env.step(GO)
            finally:
                _within(2 * TIMEOUT_S + MARGIN_S, start)
        finally:
            env.close()


def _config(**kwargs: object) -> None:
    """Build a :class:`~gym_s3.beamng.client.link.BeamNGConfig`."""
    from gym_s3.beamng.client.link import BeamNGConfig

    BeamNGConfig(**kwargs)


CASES: tuple[Case, ...] = (
    Case("sim-nothing-listening", _nothing_listening,
         SimulatorConnectionError, r"nothing answers at 127\.0\.0\.1:\d+",
         r"Start the open stand-in with `s3 standin --port \d+`"),
    Case("sim-silent-server", _silent_server,
         SimulatorTimeoutError, r"accepted the connection but did not answer .* within 1 s",
         r"check that it is BeamNG\.tech .* or the stand-in"),
    Case("sim-killed-mid-episode", _killed_mid_episode,
         SimulatorConnectionError,
         r"(lost the connection to .* while|failed while) (sending controls|stepping)",
         r"restart it and the session"),
    Case("sim-frozen-mid-episode", _frozen_mid_episode,
         SimulatorTimeoutError, r"did not answer (sending controls|stepping) within 1 s",
         r"check that it runs and is not stuck"),
    Case("sim-nan-timeout", lambda w: _config(socket_timeout=float("nan")),
         ConfigError, r"socket_timeout .*got nan", r"finite number of seconds > 0"),
    Case("sim-bad-frame-rate", lambda w: _config(steps_per_second=30),
         ConfigError, r"got 30", r"positive multiple of 20"),
)  # fmt: skip
