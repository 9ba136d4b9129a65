"""Resumable pipeline stages keyed by the content hash of their inputs.

A stage writes into its own folder and, only when it succeeds, a ``stage.json`` marker holding
the hash of its inputs (settings plus the hashes of the stages it reads from) and a small JSON
result. Running the pipeline again skips every stage whose marker matches; a stage that was
interrupted has no marker, so it runs again: with the same inputs its finished sub-stages (folders
with their own marker, e.g. one policy of several) are reused and the rest of its folder is
cleared; with other inputs its folder is cleared. Changing a setting changes the hash of that
stage and of every stage downstream of it.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MARKER = "stage.json"
#: written when a stage starts: an interrupted stage rerun with the same inputs keeps the
#: finished sub-stages in its folder (one trained policy of several, say)
STARTED = ".started"


def _started_with(folder: Path) -> str | None:
    """The input hash an unfinished run of the stage in ``folder`` started with (or None)."""
    try:
        return (folder / STARTED).read_text().strip()
    except OSError:
        return None


def content_hash(value: Any) -> str:
    """SHA-256 of the canonical JSON of ``value`` (sorted keys), first 16 hex digits."""
    text = json.dumps(value, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class StageOutcome:
    """What a stage left behind.

    Attributes:
        name: stage name.
        folder: its output folder.
        key: hash of its inputs.
        result: the JSON result the stage returned.
        skipped: ``True`` when a matching earlier run was reused.
        wall_s: run time of the stage when it ran (0 when skipped) [s].
    """

    name: str
    folder: Path
    key: str
    result: dict[str, Any]
    skipped: bool
    wall_s: float


def run_stage(
    root: Path,
    name: str,
    inputs: dict[str, Any],
    fn: Callable[[Path], dict[str, Any]],
    *,
    log: Callable[[str], None] = print,
    force: bool = False,
) -> StageOutcome:
    """Run ``fn(folder)`` unless a finished run with the same inputs exists.

    Args:
        root: pipeline output folder.
        name: stage name (its folder is ``root/name``).
        inputs: JSON-serialisable settings and upstream hashes that determine the output.
        fn: the stage body; returns a JSON-serialisable result dict.
        log: progress messages.
        force: run even if a matching marker exists.
    """
    folder = root / name
    key = content_hash({"stage": name, **inputs})
    marker = folder / MARKER
    if not force and marker.is_file():
        try:
            done = json.loads(marker.read_text())
        except json.JSONDecodeError:
            done = {}
        if done.get("key") == key:
            log(f"[{name}] unchanged (inputs {key}), reusing {folder}")
            return StageOutcome(name, folder, key, done.get("result", {}), True, 0.0)
    resuming = _started_with(folder) == key
    if folder.exists() and not resuming:
        shutil.rmtree(folder)
    elif resuming:  # the same inputs were interrupted: keep finished sub-stages, clear the rest
        for entry in folder.iterdir():
            if entry.name == STARTED or (entry.is_dir() and (entry / MARKER).is_file()):
                continue
            shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
    folder.mkdir(parents=True, exist_ok=True)
    (folder / STARTED).write_text(key + "\n")
    log(f"[{name}] {'resuming' if resuming else 'running'} (inputs {key})")
    began = time.perf_counter()
    result = fn(folder)
    wall = time.perf_counter() - began
    tmp = folder / f".{MARKER}.tmp"
    tmp.write_text(json.dumps({"key": key, "inputs": inputs, "result": result, "wall_s": wall},
                              indent=2, default=str) + "\n")  # fmt: skip
    tmp.replace(marker)
    log(f"[{name}] done in {wall:.0f} s")
    return StageOutcome(name, folder, key, result, False, wall)
