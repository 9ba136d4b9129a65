"""``s3 data generate|summary|validate|recover`` through the real argument parser."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from data_helpers import meta_for, straight_columns

from gym_s3.data import cli
from gym_s3.data.recorder import EpisodeRecorder

pytestmark = pytest.mark.timeout(240)


def run(argv: list[str]) -> int:
    """Parse ``s3 data ...`` arguments with the command's own ``register`` and run them."""
    parser = argparse.ArgumentParser(prog="s3")
    cli.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["data", *argv])
    return args.func(args)


def test_help_lists_subcommands_and_units(capsys: pytest.CaptureFixture[str]) -> None:
    """`s3 data --help` names the subcommands; `generate --help` gives units."""
    with pytest.raises(SystemExit):
        run(["--help"])
    out = capsys.readouterr().out
    for word in ("generate", "summary", "validate", "recover"):
        assert word in out
    with pytest.raises(SystemExit):
        run(["generate", "--help"])
    out = capsys.readouterr().out
    assert "[s]" in out and "[count]" in out and "--seed" in out


def test_generate_summary_validate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Generate a small dataset, summarise it with plots, validate it, then detect corruption."""
    out = tmp_path / "ds"
    argv = ["generate", "--out", str(out), "--preset", "tiny", "--cars", "4", "--towns", "0",
            "--episode-seconds", "0.5", "--procedural", "1", "--no-progress"]  # fmt: skip
    assert run(argv) == 0
    assert "4 episodes" in capsys.readouterr().out
    plots = tmp_path / "plots"
    assert run(["summary", str(out), "--plots", str(plots)]) == 0
    text = capsys.readouterr().out
    assert "per surface" in text and "scenario labels" in text and "hours" in text
    assert {p.name for p in plots.glob("*.png")} >= {"gg_diagram.png", "labels.png"}
    assert run(["validate", str(out)]) == 0
    victim = sorted(out.glob("*.parquet"))[0]
    victim.write_bytes(victim.read_bytes()[:100])
    assert run(["validate", str(out)]) == 2
    assert victim.name in capsys.readouterr().err


def test_recover_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A journal left behind becomes an episode file; the command reports it."""
    rec = EpisodeRecorder(tmp_path, meta_for("crash", "e0"), flush_rows=5)
    cols = straight_columns(12)
    for i in range(12):
        rec.append({k: v[i] for k, v in cols.items()})
    rec._file.close()  # killed
    assert run(["recover", str(tmp_path)]) == 0
    assert "recovered" in capsys.readouterr().out
    assert (tmp_path / "crash__e0.parquet").exists()
    assert run(["recover", str(tmp_path)]) == 0
    assert "no journals" in capsys.readouterr().out
