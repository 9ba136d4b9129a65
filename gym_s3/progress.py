"""The project's progress bar (rich): one look for data generation, distillation and PPO."""

from __future__ import annotations

from typing import Any


def progress_bar(*, enabled: bool = True, console: Any = None, transient: bool = False) -> Any:
    """A ``rich.progress.Progress``: description, bar, done/total, elapsed and remaining time.

    Use it as a context manager (or ``start()``/``stop()``) and ``add_task(description,
    total=...)``; with ``enabled=False`` every call is a no-op (quiet runs, non-main ranks).

    Args:
        enabled: show the bar.
        console: a ``rich.console.Console`` to draw on (default: stdout).
        transient: remove the bar when it stops (for a bar per item followed by a summary line).
    """
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        disable=not enabled,
        transient=transient,
    )
