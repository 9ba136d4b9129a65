"""Dataset folders written in one go: claiming the folder, and the manifest that closes it.

``s3 data generate`` and ``s3 rollouts`` write a new folder of episode files and finish it with
``manifest.json``: every file with its content digest (:func:`~gym_s3.data.dataset.episode_digest`)
and the dataset's content hash, which :meth:`~gym_s3.data.dataset.DrivingDataset.load` checks.
While the folder is written, a marker file (:data:`~gym_s3.data.dataset.INCOMPLETE_NAME`) makes
it a partial dataset that does not load; the manifest write removes it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gym_s3.data.dataset import (
    INCOMPLETE_NAME,
    MANIFEST_FORMAT,
    MANIFEST_NAME,
    content_hash,
    episode_digest,
)
from gym_s3.data.files import read_episode
from gym_s3.data.schema import SCHEMA_VERSION
from gym_s3.errors import ConfigError
from gym_s3.safe_io import write_text_atomic
from gym_s3.spec import CONTROL_DT_S

__all__ = ["claim_folder", "cpu_signature", "file_entry", "release_folder", "write_manifest"]


def cpu_signature() -> str:
    """``"<vendor>/<capability>/torch-<version>"``, e.g. ``"AuthenticAMD/AVX512/torch-2.13.0"``.

    The float results of simulated driving, hence a dataset's content hash, depend on the CPU and
    on torch: on the SIMD kernels torch picks (``torch.backends.cpu.get_cpu_capability()``), on
    the code paths of the math libraries, which differ between vendors, and on torch's own
    kernels. The vendor is read from ``/proc/cpuinfo`` (``"unknown"`` where there is none). Two
    machines with one signature are expected, not proven, to give the same floats.
    """
    import torch

    vendor = "unknown"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("vendor_id"):
                    vendor = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{vendor}/{torch.backends.cpu.get_cpu_capability()}/torch-{torch.__version__}"


def claim_folder(out: str | Path, writer: str) -> Path:
    """Create ``out`` (new or empty), check it is writable and mark it incomplete.

    Args:
        out: the dataset folder.
        writer: the command writing it, named in the marker (e.g. ``"s3 data generate"``).

    Returns:
        ``out`` as a path.

    Raises:
        ConfigError: ``out`` holds files already or cannot be written (names the fix).
    """
    out = Path(out)
    if out.is_dir() and any(out.iterdir()):
        raise ConfigError(f"{out} is not empty; choose a new folder for the dataset")
    probe = out / f".write-probe-{os.getpid()}"
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise ConfigError(
            f"cannot write the dataset to {out} ({exc}); choose a writable output folder (--out)"
        ) from exc
    (out / INCOMPLETE_NAME).write_text(
        f"{writer} is writing this dataset; if it stays, it was interrupted\n"
    )
    return out


def release_folder(out: str | Path) -> None:
    """Undo :func:`claim_folder` when nothing was written: the marker goes, an empty ``out`` too."""
    out = Path(out)
    (out / INCOMPLETE_NAME).unlink(missing_ok=True)
    if out.is_dir() and not any(out.iterdir()):
        out.rmdir()


def file_entry(path: str | Path) -> dict[str, Any]:
    """The manifest entry of a finished episode file, read back (and validated) from disk."""
    path = Path(path)
    columns, meta = read_episode(path)
    return {"path": path.name, "digest": episode_digest(columns, meta), "rows": meta.num_rows,
            "session_id": meta.session_id, "track": meta.track,
            "surface": meta.base_surface}  # fmt: skip


def write_manifest(
    out: str | Path, entries: Sequence[dict[str, Any]], **fields: Any
) -> dict[str, Any]:
    """Write ``out/manifest.json`` for ``entries`` and remove the incomplete marker.

    Args:
        out: the dataset folder (claimed with :func:`claim_folder`).
        entries: one per episode file: ``path`` (name in ``out``), ``digest``, ``rows`` and
            what else describes it (``session_id``, ``track``, ``surface``).
        **fields: further manifest fields (``seed``, ``preset``, ``config``, ``generation_s``,
            ``driver``, ``simulator``, ...); ``cpu`` defaults to :func:`cpu_signature`, since
            the floats of simulated episodes depend on it.

    Returns:
        The manifest.
    """
    out = Path(out)
    rows = sum(int(e["rows"]) for e in entries)
    manifest = {
        "format": MANIFEST_FORMAT,
        "schema_version": SCHEMA_VERSION,
        "content_hash": content_hash((e["path"], e["digest"]) for e in entries),
        "samples": rows,
        "hours": rows * CONTROL_DT_S / 3600.0,
        "cpu": cpu_signature(),
        **fields,
        "files": list(entries),
    }
    write_text_atomic(out / MANIFEST_NAME, json.dumps(manifest, indent=1, sort_keys=True))
    (out / INCOMPLETE_NAME).unlink(missing_ok=True)
    return manifest
