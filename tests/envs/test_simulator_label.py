"""S3BeamNG-v0 names the simulator from what the server says in its greeting, not from a flag."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("beamngpy")

from gym_s3.beamng.protocol import PROTOCOL_VERSION  # noqa: E402
from gym_s3.beamng.standin import handlers  # noqa: E402
from gym_s3.envs.beamng import S3BeamNGEnv  # noqa: E402

pytestmark = pytest.mark.timeout(120)
REPO = Path(__file__).resolve().parents[2]


def test_external_standin_is_named_open_standin():
    """An `s3 standin` started separately, reached by host/port only, is labelled the stand-in."""
    path = str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")
    env_vars = dict(os.environ, PYTHONPATH=path)
    proc = subprocess.Popen(
        [sys.executable, "-m", "gym_s3.beamng.standin.cli", "--port", "0"]
        + ["--log-level", "WARNING"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env_vars,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        banner = proc.stdout.readline()
        port = int(banner.split(" on ")[1].split(" ")[0].rsplit(":", 1)[1])
        env = S3BeamNGEnv(host="127.0.0.1", port=port, standin=False, render_mode="rgb_array")
        try:
            assert env.label == "S3BeamNG-v0"  # nothing is claimed before connecting
            _, info = env.reset(seed=0)
            assert info["standin"] is True and info["simulator"] == "open stand-in"
            assert env.label == "S3BeamNG-v0 (open stand-in)"
            assert env.link is not None and env.link.source == "standin-server"
            assert env.render().ndim == 3
        finally:
            env.close()
    finally:
        proc.kill()
        proc.wait(10)
        if proc.stdout is not None:
            proc.stdout.close()


def test_a_server_greeting_like_beamng_is_named_beamng(monkeypatch):
    """A server greeting as BeamNG.tech does (version only) is labelled BeamNG.tech.

    The env started that server in-process with ``standin=True``: the flag does not decide.
    """

    def beamng_hello(ctx, msg):
        return {"type": "Hello", "protocolVersion": PROTOCOL_VERSION}

    monkeypatch.setitem(handlers.GE_HANDLERS, "Hello", beamng_hello)
    env = S3BeamNGEnv(standin=True)
    try:
        _, info = env.reset(seed=0)
        assert info["standin"] is False and info["simulator"] == "BeamNG.tech"
        assert env.label == "S3BeamNG-v0 (BeamNG.tech)"
        assert env.link is not None and env.link.source == "beamng"
    finally:
        env.close()
