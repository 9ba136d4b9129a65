"""Fixtures for the track tests: Putnam Park and a CSV writer."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from gym_s3.tracks.path import ReferencePath
from gym_s3.tracks.putnam import putnam_park


@pytest.fixture
def putnam() -> ReferencePath:
    """The Putnam Park approximation at 1 m spacing."""
    return putnam_park(1.0)


@pytest.fixture
def write_csv(tmp_path: Path) -> Callable[[str, Sequence[str]], Path]:
    """Write lines to ``tmp_path / name`` and return the path."""

    def write(name: str, lines: Sequence[str]) -> Path:
        """Write the file and return its path."""
        path = tmp_path / name
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return path

    return write
