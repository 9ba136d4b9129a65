"""Bounded reads of user-supplied files: regular files only, size caps, JSON depth.

A path given by a user may name a device (``/dev/zero`` never ends), a FIFO (blocks forever),
a huge file, or JSON nested deeper than the parser's recursion limit. :func:`read_bounded` and
:func:`parse_json` refuse those with the caller's error class, naming the path and the fix.

Caps (bytes): :data:`MAX_TEXT_BYTES` for track CSVs and JSON sidecars/manifests,
:data:`MAX_WEIGHTS_BYTES` for safetensors weights.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

#: Largest track CSV, checkpoint sidecar or manifest read [bytes] (64 MiB).
MAX_TEXT_BYTES = 64 * 2**20
#: Largest checkpoint weight file read [bytes] (4 GiB).
MAX_WEIGHTS_BYTES = 4 * 2**30


def read_bounded(
    path: str | os.PathLike[str],
    *,
    limit: int,
    what: str,
    error: type[Exception],
) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes.

    Args:
        path: the file.
        limit: largest accepted size [bytes].
        what: what the file should be, for messages ("track CSV").
        error: exception class raised (the caller's domain error).

    Raises:
        error: the path is missing, not a regular file (device, FIFO, folder), or too large.
    """
    path = Path(path)
    try:
        info = path.stat()
    except OSError as exc:
        raise error(
            f"{path}: cannot read the file ({exc.strerror or exc}); check the path"
        ) from exc
    if not stat.S_ISREG(info.st_mode):
        raise error(
            f"{path} is not a regular file (a device, pipe or folder); give the path of a {what}"
        )
    if info.st_size > limit:
        raise error(
            f"{path} is {info.st_size} bytes, more than the {limit} bytes a {what} may have; "
            f"give the path of a real {what}"
        )
    with open(path, "rb") as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:  # grew while we read it
        raise error(f"{path} is larger than the {limit} bytes a {what} may have")
    return data


def parse_json(raw: bytes | str, *, path: str | os.PathLike[str], error: type[Exception],
               fix: str) -> Any:  # fmt: skip
    """Parse JSON, refusing invalid text and nesting deeper than the parser can follow.

    Raises:
        error: naming ``path``, the problem and ``fix``.
    """
    try:
        return json.loads(raw)
    except RecursionError:
        raise error(f"{path}: JSON nested too deeply to be a real file; {fix}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise error(f"{path} is not valid JSON ({exc}); {fix}") from exc


def write_text_atomic(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` to ``path`` atomically (temporary file, fsync, rename); returns the path.

    Raises:
        StorageError: the file cannot be written (disk full, no permission); names the path.
    """
    from gym_s3.errors import StorageError

    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise StorageError(
            f"cannot write {path} ({exc.strerror or exc}); free space on that disk or choose a "
            "writable folder"
        ) from exc
    return path
