"""Result tables written to a file or pipe come out whole (``gym_s3.progress.result_console``)."""

from __future__ import annotations

import io
import sys

import pytest
from rich.table import Table

from gym_s3.progress import LOG_WIDTH, result_console

LONG_NAME = "S3Distilled-v0/ddm (runs/r21/pedal_bounded_rollouts/ddm.json)"


def _print_wide_table(monkeypatch: pytest.MonkeyPatch) -> str:
    """A four-column table with a long first cell, printed through a redirected stdout."""
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    table = Table()
    for name in ("simulator", "speed at start [m/s]", "speed at end [m/s]", "time to rest [s]"):
        table.add_column(name)
    table.add_row(LONG_NAME, "3.57", "0.162", "-")
    result_console().print(table)
    return out.getvalue()


def test_a_redirected_table_keeps_its_names_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a terminal or ``COLUMNS`` the table is laid out at LOG_WIDTH, not rich's 80."""
    monkeypatch.delenv("COLUMNS", raising=False)
    text = _print_wide_table(monkeypatch)
    assert LONG_NAME in text
    assert "…" not in text
    assert max(len(line) for line in text.splitlines()) <= LOG_WIDTH


def test_columns_set_by_the_user_is_honoured(monkeypatch: pytest.MonkeyPatch) -> None:
    """``COLUMNS`` still decides the width (here narrow enough to wrap the long name)."""
    monkeypatch.setenv("COLUMNS", "60")
    text = _print_wide_table(monkeypatch)
    assert max(len(line) for line in text.splitlines()) <= 60
