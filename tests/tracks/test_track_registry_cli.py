"""Track names (registry) and the ``s3 tracks`` command."""

from __future__ import annotations

import argparse
import re

import numpy as np
import pytest

from gym_s3.cli import build_parser, main
from gym_s3.errors import ConfigError
from gym_s3.tracks import get_track, list_tracks


def test_every_listed_form_builds(write_csv):
    """putnam, procedural:<seed>, town:<seed>, file:<csv> and boundaries:<l>,<r> all build.

    Fails if a registered form is not wired to its builder.
    """
    t = np.linspace(0, 2 * np.pi, 80, endpoint=False)
    csv = write_csv("oval.csv", [f"{200 * np.cos(a)},{100 * np.sin(a)},5,5" for a in t])
    left = write_csv("l.csv", [f"{195 * np.cos(a)},{95 * np.sin(a)}" for a in t])
    right = write_csv("r.csv", [f"{205 * np.cos(a)},{105 * np.sin(a)}" for a in t])
    names = {
        "putnam": "putnam",
        "procedural:4": "procedural:4",
        "town:2": "town:2",
        f"file:{csv}": "oval",
        f"boundaries:{left},{right}": "l",
    }
    for name, built in names.items():
        assert get_track(name).name == built
    assert get_track("putnam", ds=2.0).ds == pytest.approx(2.0, rel=1e-3)
    assert {k.pattern.split(":")[0] for k in list_tracks()} == {
        "putnam",
        "procedural",
        "town",
        "file",
        "boundaries",
    }


@pytest.mark.parametrize(
    "name", ["nowhere", "procedural:", "procedural:x", "putnam:3", "boundaries:a.csv"]
)
def test_bad_names_say_what_is_valid(name):
    """Unknown or malformed names raise ConfigError with the valid forms or an example.

    Fails if a typo silently falls back to some default track.
    """
    with pytest.raises(ConfigError, match="valid names|integer|two files"):
        get_track(name)


def test_unknown_keyword_is_a_config_error():
    """A keyword the builder does not take raises ConfigError naming the track."""
    with pytest.raises(ConfigError, match="track 'putnam'"):
        get_track("putnam", n_turns=3)


def test_show_putnam_with_ice_patches_and_plot(tmp_path, capsys):
    """The README command prints the summary, lap times, patch list and writes a PNG.

    Fails if any section is missing, the approximation label is dropped or the plot not saved.
    """
    png = tmp_path / "putnam.png"
    code = main(
        ["tracks", "show", "putnam", "--ice-patches", "4", "--seed", "0", "--plot", str(png)]
    )
    out = capsys.readouterr().out
    assert code == 0
    for text in ("approximation", "2850.0 m", "clockwise", "ice", "asphalt + 4 ice patches"):
        assert text in out
    assert len(re.findall(r"corner\s+\S\s+[LR]\s", out)) == 11  # rows of the corner table
    assert png.exists() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_list_and_errors(capsys):
    """``s3 tracks list`` prints the forms; a bad name exits with code 2 and a message.

    Fails if errors escape as tracebacks instead of a clear message.
    """
    assert main(["tracks", "list"]) == 0
    assert "procedural:<seed>" in capsys.readouterr().out
    assert main(["tracks", "show", "nowhere"]) == 2
    assert "unknown track 'nowhere'" in capsys.readouterr().err
    assert main(["tracks", "show", "town:1", "--ice-patches", "-1"]) == 2


def test_every_option_has_help_with_units():
    """Every option of ``s3 tracks show`` has help text stating a unit in brackets.

    Fails if an option is added without documenting its unit.
    """
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    tracks = sub.choices["tracks"]
    show = next(a for a in tracks._actions if isinstance(a, argparse._SubParsersAction)).choices[
        "show"
    ]
    options = [a for a in show._actions if a.option_strings and a.dest != "help"]
    assert len(options) >= 7
    for action in options:
        assert action.help and "[" in action.help, action.dest
