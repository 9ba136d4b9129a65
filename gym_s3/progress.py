"""The project's terminal output (rich): one progress bar and one console for every command.

The progress bar looks the same for data generation, distillation and PPO. The console prints the
result tables: on a terminal at its width, and when the output goes to a file or a pipe (logs,
CI, ``> results.txt``) at :data:`LOG_WIDTH` columns, so that wide tables are written whole
rather than squeezed into rich's 80-column default with their names cut to ``…``.
"""

from __future__ import annotations

import os
from typing import Any

#: Width [columns] of tables written to a file or pipe when ``COLUMNS`` is not set.
LOG_WIDTH = 200


def result_console(*, stderr: bool = False, min_width: int = 0) -> Any:
    """A ``rich.console.Console`` on stdout (or stderr) for result tables.

    On a terminal or in Jupyter it takes rich's own width (the terminal's, or ``COLUMNS``); written
    to a file or pipe it is ``COLUMNS`` wide if set, else :data:`LOG_WIDTH`.

    Args:
        stderr: print to stderr instead of stdout.
        min_width: lay tables out at least this wide anywhere [columns] (very wide tables, such
            as the lap table, wrap less on a narrow terminal).
    """
    from rich.console import Console

    console = Console(stderr=stderr)
    if not console.is_terminal and not console.is_jupyter and not os.environ.get("COLUMNS"):
        console.width = LOG_WIDTH
    if console.width < min_width:
        console.width = min_width
    return console


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
