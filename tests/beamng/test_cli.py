"""``s3 standin`` options, and the loopback default of the server."""

from __future__ import annotations

import argparse
import logging
import socket

import pytest

from gym_s3.beamng.standin import cli
from gym_s3.beamng.standin.server import StandInServer
from gym_s3.errors import ConfigError


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="s3")
    cli.register(parser.add_subparsers(dest="command"))
    return parser


def test_defaults_are_loopback_and_beamng_port() -> None:
    """Without options the stand-in binds 127.0.0.1:25252 and is lenient."""
    args = _parser().parse_args(["standin"])
    assert (args.host, args.port, args.strict, args.exit_on_quit) == (
        "127.0.0.1",
        25252,
        False,
        False,
    )
    assert args.func is cli.run


def test_help_names_units_and_the_stand_in(capsys: pytest.CaptureFixture[str]) -> None:
    """The help says it is not BeamNG and gives the unit of every numeric option."""
    with pytest.raises(SystemExit):
        _parser().parse_args(["standin", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "not BeamNG" in text
    assert "[port number" in text and "[1/s]" in text and "[Hz]" in text


def test_busy_port_is_a_clear_error() -> None:
    """A port that is taken gives a ConfigError naming the port and what to do."""
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        args = _parser().parse_args(["standin", "--port", str(port), "--log-level", "ERROR"])
        with pytest.raises(ConfigError, match=f"127.0.0.1:{port}.*another --port"):
            cli.run(args)
        assert cli.main(["--port", str(port), "--log-level", "ERROR"]) == 2


def test_bad_physics_option_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    """An invalid steps-per-second is refused before anything is bound."""
    assert cli.main(["--port", "0", "--steps-per-second", "0"]) == 2
    assert "steps_per_second" in capsys.readouterr().err


def test_non_loopback_bind_warns(caplog: pytest.LogCaptureFixture) -> None:
    """Binding a non-loopback address is possible only when asked, and is warned about."""
    with caplog.at_level(logging.WARNING, logger="gym_s3.beamng.standin.server"):
        with StandInServer("0.0.0.0", 0):
            pass
    assert any("unauthenticated" in r.getMessage() for r in caplog.records)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="gym_s3.beamng.standin.server"):
        with StandInServer():
            pass
    assert not caplog.records
