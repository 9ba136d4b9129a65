"""``s3 data generate|summary|validate|recover`` through the real argument parser."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pytest
from data_helpers import meta_for, straight_columns

from gym_s3.data import cli
from gym_s3.data.files import read_episode
from gym_s3.data.recorder import EpisodeRecorder
from gym_s3.errors import ConfigError

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


def _generated(out: Path, *options: str) -> list[tuple[dict[str, np.ndarray], dict]]:
    """``s3 data generate --out OUT OPTIONS``; its episodes as (columns, metadata extra)."""
    assert run(["generate", "--out", str(out), *options]) == 0
    return [(cols, meta.extra) for cols, meta in map(read_episode, sorted(out.glob("*.parquet")))]


def test_generate_with_lock_crawl(tmp_path: Path) -> None:
    """--lock-crawl-rate puts walking pace at full lock into the data; off, nothing records it.

    Four 3 s episodes at 600 events/min: the event is on most of the time, so rows below 4 m/s
    with |steer| >= 0.6 appear (the expert itself keeps its wheels near the path's angle) and
    every episode's metadata counts it; without the option the metadata does not name it.
    """
    common = ["--preset", "tiny", "--cars", "4", "--towns", "0", "--procedural", "1",
              "--no-progress"]  # fmt: skip

    def episodes(name: str, *extra: str) -> list[tuple[dict[str, np.ndarray], dict]]:
        return _generated(tmp_path / name, *common, *extra)

    def at_lock(data: list[tuple[dict[str, np.ndarray], dict]]) -> int:
        return sum(
            int(((abs(c["steer"]) >= 0.6) & (abs(c["v_long"]) < 4.0)).sum()) for c, _ in data
        )

    locked, plain = episodes("lock", "--lock-crawl-rate", "600"), episodes("plain")
    assert locked and plain
    assert all(extra["events"]["lock_crawl"] > 0 for _, extra in locked)
    assert all("lock_crawl" not in extra["events"] for _, extra in plain)
    assert all("lock_crawl" not in extra["expert"]["perturbations"] for _, extra in plain)
    assert at_lock(locked) > 20 and at_lock(plain) == 0, (at_lock(locked), at_lock(plain))
    with pytest.raises(ConfigError, match="--lock-crawl-rate"):
        run(["generate", "--out", str(tmp_path / "bad"), *common, "--lock-crawl-rate", "-1"])


def test_generate_with_launch(tmp_path: Path) -> None:
    """--launch-rate holds a throttle at walking pace; every other row is the plain data's.

    Sixteen 3 s episodes (start speeds drawn from rest to the target), at 600 events/min and
    without: the two datasets of one seed differ only in rows at or below 4 m/s, where the
    launched ones hold a throttle of at least 0.1; off, the metadata does not name the event.
    """
    common = ["--preset", "tiny", "--cars", "16", "--towns", "0", "--procedural", "1",
              "--no-progress"]  # fmt: skip

    def episodes(name: str, *extra: str) -> list[tuple[dict[str, np.ndarray], dict]]:
        return _generated(tmp_path / name, *common, *extra)

    launched, plain = episodes("launch", "--launch-rate", "600"), episodes("plain")
    assert len(launched) == len(plain) == 16
    assert all(extra["events"]["launch"] > 0 for _, extra in launched)
    assert all("launch" not in extra["events"] for _, extra in plain)
    differing = 0
    for (a, _), (b, _) in zip(launched, plain, strict=True):
        n = min(len(a["accel"]), len(b["accel"]))
        first = int(np.argmax(np.abs(a["accel"][:n] - b["accel"][:n]) > 1e-6))
        moved = np.abs(a["accel"][:n] - b["accel"][:n]) > 1e-6
        if not moved.any():
            continue
        # the first action that differs is a launch: at walking pace, a held throttle
        assert a["v_long"][first] <= 4.0 + 1e-3 and a["accel"][first] >= 0.1 - 1e-6
        differing += int(moved.sum())
    assert differing > 20, differing
    with pytest.raises(ConfigError, match="--launch-rate"):
        run(["generate", "--out", str(tmp_path / "bad"), *common, "--launch-rate", "inf"])


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
