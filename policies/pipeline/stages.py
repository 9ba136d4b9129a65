"""Resumable pipeline stages keyed by the content hash of their inputs.

A stage writes into its own folder and, only when it succeeds, a ``stage.json`` marker holding
the hash of its inputs (settings plus the hashes of the stages it reads from) and a small JSON
result. Running the pipeline again skips every stage whose marker matches; a stage that was
interrupted has no marker, so its folder is cleared and it runs again. Changing a setting changes
the hash of that stage and of every stage downstream of it.
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
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    log(f"[{name}] running (inputs {key})")
    began = time.perf_counter()
    result = fn(folder)
    wall = time.perf_counter() - began
    tmp = folder / f".{MARKER}.tmp"
    tmp.write_text(json.dumps({"key": key, "inputs": inputs, "result": result, "wall_s": wall},
                              indent=2, default=str) + "\n")  # fmt: skip
    tmp.replace(marker)
    log(f"[{name}] done in {wall:.0f} s")
    return StageOutcome(name, folder, key, result, False, wall)
