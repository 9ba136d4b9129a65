"""Checkpoints: tensors in safetensors plus a JSON sidecar, never pickle.

A checkpoint ``<stem>`` is two files written side by side:

* ``<stem>.safetensors``: the tensors (weights). Loading it executes nothing.
* ``<stem>.json``: the sidecar: format marker and version, ``kind`` (``"dynamics"``,
  ``"policy"``, ...), the observation/action ``spec_version``, the package version, the creation
  time, the SHA-256 and size of the weights file, the name/dtype/shape of every tensor and a free
  ``meta`` dict (backend, config, normalisation statistics, dataset hash, ...).

:func:`load` refuses, with a :class:`~gym_s3.errors.CheckpointError` naming the file and the fix,
a missing or malformed sidecar, a pickle or ``torch.save`` archive, a foreign JSON file, a
checkpoint of another kind or spec version, a weights file whose hash does not match (damaged or
swapped) and tensors that differ from the listing. :func:`check_tensors` compares loaded tensors
with the ones a model expects (strict names and shapes).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import torch
from torch import Tensor

from gym_s3.errors import CheckpointError
from gym_s3.safe_io import MAX_TEXT_BYTES, MAX_WEIGHTS_BYTES, parse_json, read_bounded
from gym_s3.spec import SPEC_VERSION, check_spec_version

ModuleT = TypeVar("ModuleT", bound=torch.nn.Module)

#: Marker of a sim2sim2sim checkpoint sidecar.
FORMAT = "sim2sim2sim-checkpoint"
#: Version of the sidecar layout written by :func:`save`.
FORMAT_VERSION = 1
WEIGHTS_SUFFIX = ".safetensors"
SIDECAR_SUFFIX = ".json"
_REQUIRED_KEYS: dict[str, type | tuple[type, ...]] = {
    "format": str,
    "format_version": int,
    "kind": str,
    "spec_version": int,
    "package_version": str,
    "created": str,
    "weights": dict,
    "tensors": dict,
    "meta": dict,
}
_PICKLE_MAGIC = (b"\x80\x02", b"\x80\x03", b"\x80\x04", b"\x80\x05")
_ZIP_MAGIC = b"PK\x03\x04"


@dataclass(frozen=True)
class Checkpoint:
    """A loaded checkpoint.

    Attributes:
        tensors: name -> tensor (on the device asked for).
        meta: the free metadata dict stored by :func:`save`.
        kind: what the checkpoint holds (``"dynamics"``, ``"policy"``, ...).
        sidecar: the whole parsed JSON sidecar.
        path: the sidecar path.
    """

    tensors: dict[str, Tensor]
    meta: dict[str, Any]
    kind: str
    sidecar: dict[str, Any]
    path: Path


def checkpoint_paths(path: str | os.PathLike[str]) -> tuple[Path, Path]:
    """The ``(weights, sidecar)`` paths of a checkpoint given its stem or either file."""
    p = Path(path)
    if p.suffix in (WEIGHTS_SUFFIX, SIDECAR_SUFFIX):
        p = p.with_suffix("")
    return p.with_name(p.name + WEIGHTS_SUFFIX), p.with_name(p.name + SIDECAR_SUFFIX)


def checkpoint_identity(path: str | os.PathLike[str]) -> str | None:
    """SHA-256 (hex) of a checkpoint's sidecar and weights files, ``None`` without a sidecar.

    Changes whenever either file changes (the weights alone swapped included): a cache key
    built from it (the pipeline's stages) never reuses results of a checkpoint replaced at the
    same path. Nothing is parsed; a damaged or mismatched pair is reported when it is loaded.
    """
    weights_path, sidecar_path = checkpoint_paths(path)
    if not sidecar_path.is_file():
        return None
    digest = hashlib.sha256()
    for part, limit in ((sidecar_path, MAX_TEXT_BYTES), (weights_path, MAX_WEIGHTS_BYTES)):
        if part.is_file():
            digest.update(read_bounded(part, limit=limit, what="checkpoint file",
                                       error=CheckpointError))  # fmt: skip
        digest.update(b"\0")
    return digest.hexdigest()


def _package_version() -> str:
    from gym_s3 import __version__

    return __version__


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def save(
    path: str | os.PathLike[str],
    tensors: Mapping[str, Tensor],
    meta: Mapping[str, Any],
    *,
    kind: str,
) -> Path:
    """Write ``<stem>.safetensors`` and ``<stem>.json`` (both in full first, then renamed).

    Args:
        path: checkpoint stem (a ``.safetensors``/``.json`` suffix is ignored).
        tensors: name -> tensor; copied to CPU and made contiguous.
        meta: JSON-serialisable metadata (finite numbers only).
        kind: what the checkpoint holds, e.g. ``"dynamics"`` or ``"policy"``.

    Returns:
        The sidecar path.

    Raises:
        CheckpointError: non-tensor values, metadata that JSON cannot represent, or files that
            cannot be written (an existing checkpoint at ``path`` is then left unchanged).
    """
    weights_path, sidecar_path = checkpoint_paths(path)
    from safetensors.torch import save as st_save

    bad = [k for k, v in tensors.items() if not isinstance(v, Tensor)]
    if bad:
        raise CheckpointError(f"checkpoint values must be torch tensors; not tensors: {bad}")
    cpu = {k: v.detach().to("cpu").contiguous() for k, v in tensors.items()}
    try:
        meta_json = json.loads(json.dumps(dict(meta), allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise CheckpointError(
            f"checkpoint metadata for {sidecar_path} is not JSON-serialisable ({exc}); "
            "pass plain dicts/lists of str, int, finite float and bool"
        ) from exc
    # one metadata entry: safetensors writes its metadata map in hash order, so two entries
    # give the same tensors different bytes (and SHA-256) from one save to the next
    data = st_save(cpu, metadata={"format": FORMAT})
    sidecar = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "kind": kind,
        "spec_version": SPEC_VERSION,
        "package_version": _package_version(),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "weights": {"file": weights_path.name, "sha256": _sha256(data), "bytes": len(data)},
        "tensors": {
            k: {"dtype": str(v.dtype).removeprefix("torch."), "shape": list(v.shape)}
            for k, v in cpu.items()
        },
        "meta": meta_json,
    }
    files = ((weights_path, data), (sidecar_path, (json.dumps(sidecar, indent=2) + "\n").encode()))
    _replace_together(files, sidecar_path)
    return sidecar_path


def _replace_together(files: tuple[tuple[Path, bytes], ...], what: Path) -> None:
    """Write every file in full (temporary files, fsync) before any of them replaces its target.

    A failed write (full disk, no permission, a file-size limit) therefore leaves an existing
    checkpoint at the same path untouched; only a crash between the final renames (microseconds)
    can pair new weights with the old sidecar, which :func:`load` then refuses by its SHA-256.

    Raises:
        CheckpointError: a file could not be written (the temporary files are removed).
    """
    temps: list[Path] = []
    try:
        what.parent.mkdir(parents=True, exist_ok=True)
        for path, data in files:
            tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
            temps.append(tmp)
            with open(tmp, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
    except OSError as exc:
        for tmp in temps:
            tmp.unlink(missing_ok=True)
        raise CheckpointError(
            f"could not write checkpoint {what} ({exc}); a checkpoint already there is unchanged. "
            "Choose a writable folder with free space."
        ) from exc
    for tmp, (path, _) in zip(temps, files, strict=True):
        os.replace(tmp, path)


def _is_safetensors_head(head: bytes) -> bool:
    """Whether a file starting ``head`` is laid out as safetensors.

    That is a little-endian u64 header length (below 4 GiB), then the JSON header's ``{``. The
    length is not checked against the file's size, so a truncated file is reported by its
    SHA-256, not as a pickle.
    """
    return len(head) >= 9 and head[8:9] == b"{" and int.from_bytes(head[:8], "little") < 2**32


def _refuse_pickle(path: Path, head: bytes) -> None:
    """Refuse a pickle or zip archive by its first bytes (at least 9 of them).

    A safetensors header of 640, 896, 1152 or 1408 bytes (plus any multiple of 64 KiB) begins
    like a pickle's protocol marker (0x80 0x02-0x05), so a file whose ninth byte opens the JSON
    header is read as safetensors (a pickle crafted to look like one then fails the SHA-256 or
    safetensors checks instead: nothing is ever unpickled).
    """
    if _is_safetensors_head(head):
        return
    if head.startswith(_PICKLE_MAGIC) or head.startswith(_ZIP_MAGIC):
        raise CheckpointError(
            f"{path} is a pickle or torch.save archive; sim2sim2sim never loads pickles (loading "
            "them can execute arbitrary code). Re-export the weights with "
            "gym_s3.checkpoints.save (safetensors + JSON sidecar)."
        )


def source(path: str | os.PathLike[str]) -> dict[str, Any]:
    """What names a checkpoint in a record: its sidecar's file name and its weights' SHA-256.

    No folder is kept (it would name someone's disk); the hash names the weights even after the
    file is replaced or renamed.

    Raises:
        CheckpointError: see :func:`read_sidecar`.
    """
    sidecar = read_sidecar(path)
    return {"file": checkpoint_paths(path)[1].name, "sha256": sidecar["weights"]["sha256"]}


def read_sidecar(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Parse and validate the JSON sidecar of a checkpoint (no tensors are read).

    Raises:
        CheckpointError: missing, unreadable, foreign or malformed sidecar, or another spec version.
    """
    weights_path, sidecar_path = checkpoint_paths(path)
    if not sidecar_path.is_file():
        if weights_path.is_file():
            with weights_path.open("rb") as fh:
                _refuse_pickle(weights_path, fh.read(9))
        raise CheckpointError(
            f"no checkpoint sidecar {sidecar_path}; a sim2sim2sim checkpoint is a pair "
            f"'<stem>.safetensors' + '<stem>.json' written by gym_s3.checkpoints.save. Pass the "
            "path of one of them (or their common stem)."
        )
    raw = read_bounded(sidecar_path, limit=MAX_TEXT_BYTES, what="checkpoint sidecar",
                       error=CheckpointError)  # fmt: skip
    _refuse_pickle(sidecar_path, raw[:9])
    sidecar = parse_json(
        raw, path=sidecar_path, error=CheckpointError,
        fix="the file is damaged. Restore it from the original or re-save the checkpoint.",
    )  # fmt: skip
    if not isinstance(sidecar, dict) or sidecar.get("format") != FORMAT:
        raise CheckpointError(
            f'{sidecar_path} is not a sim2sim2sim checkpoint sidecar (no "format": '
            f'"{FORMAT}"); it may belong to another tool. Pass a checkpoint written by '
            "gym_s3.checkpoints.save."
        )
    for key, typ in _REQUIRED_KEYS.items():
        if not isinstance(sidecar.get(key), typ) or isinstance(sidecar.get(key), bool):
            raise CheckpointError(
                f"checkpoint sidecar {sidecar_path} is malformed: field '{key}' is missing or not "
                f"a {getattr(typ, '__name__', typ)}; the file is damaged or was edited by hand. "
                "Re-save the checkpoint."
            )
    if sidecar["format_version"] > FORMAT_VERSION:
        raise CheckpointError(
            f"{sidecar_path} uses checkpoint format version {sidecar['format_version']}, newer "
            f"than this installation reads ({FORMAT_VERSION}); upgrade sim2sim2sim."
        )
    check_spec_version(sidecar["spec_version"], f"checkpoint {sidecar_path}")
    return sidecar


def load(
    path: str | os.PathLike[str], *, kind: str | None = None, device: torch.device | str = "cpu"
) -> Checkpoint:
    """Read and verify a checkpoint written by :func:`save`.

    Args:
        path: checkpoint stem or the path of either of its two files.
        kind: if given, refuse a checkpoint of another kind.
        device: device the tensors are moved to.

    Raises:
        CheckpointError: see the module docstring; the message names the file and the fix.
    """
    weights_path, sidecar_path = checkpoint_paths(path)
    sidecar = read_sidecar(path)
    if kind is not None and sidecar["kind"] != kind:
        raise CheckpointError(
            f"{sidecar_path} holds a '{sidecar['kind']}' checkpoint, but a '{kind}' checkpoint "
            "was expected; pass the right file."
        )
    if not weights_path.is_file():
        raise CheckpointError(
            f"checkpoint weights {weights_path} are missing (the sidecar {sidecar_path} exists); "
            "copy both files together."
        )
    data = read_bounded(weights_path, limit=MAX_WEIGHTS_BYTES, what="checkpoint weight file",
                        error=CheckpointError)  # fmt: skip
    _refuse_pickle(weights_path, data[:9])
    expected = sidecar["weights"].get("sha256")
    if _sha256(data) != expected:
        raise CheckpointError(
            f"checkpoint weights {weights_path} do not match the SHA-256 in {sidecar_path} "
            f"(size {len(data)} B, expected {sidecar['weights'].get('bytes')} B): the file is "
            "damaged, truncated or belongs to another checkpoint. Restore both files from the "
            "original."
        )
    from safetensors.torch import load as st_load

    try:
        tensors = st_load(data)
    except Exception as exc:  # safetensors raises its own error types
        raise CheckpointError(
            f"{weights_path} is not a valid safetensors file ({exc}); restore both files from the "
            "original, or re-save the checkpoint with gym_s3.checkpoints.save"
        ) from exc
    listing = {
        k: {"dtype": str(v.dtype).removeprefix("torch."), "shape": list(v.shape)}
        for k, v in tensors.items()
    }
    if listing != sidecar["tensors"]:
        raise CheckpointError(
            f"tensors in {weights_path} differ from the listing in {sidecar_path}; re-save the "
            "checkpoint."
        )
    for name, tensor in tensors.items():
        if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
            bad = int((~torch.isfinite(tensor)).sum())
            raise CheckpointError(
                f"tensor '{name}' in {weights_path} holds {bad} NaN or infinite values; a "
                "network with them outputs NaN. Use an earlier checkpoint of that training, or "
                "re-train (lower the learning rate if training diverged)."
            )
    return Checkpoint(
        tensors={k: v.to(device) for k, v in tensors.items()},
        meta=sidecar["meta"],
        kind=sidecar["kind"],
        sidecar=sidecar,
        path=sidecar_path,
    )


def build_checked(
    factory: Callable[[], ModuleT], tensors: Mapping[str, Tensor], what: str
) -> ModuleT:
    """Build a model with ``factory`` and load ``tensors``, checking their shapes first.

    The model is built once on PyTorch's ``meta`` device (shapes only, nothing allocated) and
    compared with :func:`check_tensors`, so a sidecar asking for a network far larger than its
    weights is refused at once instead of allocating gigabytes; then it is built for real.

    Raises:
        CheckpointError: the tensors do not fit the model ``factory`` builds.
    """
    with torch.device("meta"):
        skeleton = factory()
    check_tensors(tensors, skeleton.state_dict(), what)
    model = factory()
    model.load_state_dict(tensors)
    return model


def check_tensors(found: Mapping[str, Tensor], expected: Mapping[str, Tensor], what: str) -> None:
    """Strictly compare checkpoint tensors with the ones a model expects.

    Args:
        found: tensors read from the checkpoint.
        expected: the model's tensors (e.g. its ``state_dict()``).
        what: description for the message (e.g. the checkpoint path and backend).

    Raises:
        CheckpointError: listing missing and unexpected names and shape mismatches.
    """
    missing = sorted(set(expected) - set(found))
    unexpected = sorted(set(found) - set(expected))
    shapes = sorted(
        f"{k}: checkpoint {tuple(found[k].shape)} vs model {tuple(expected[k].shape)}"
        for k in set(found) & set(expected)
        if found[k].shape != expected[k].shape
    )
    if missing or unexpected or shapes:
        parts = []
        if missing:
            parts.append(f"missing tensors {missing}")
        if unexpected:
            parts.append(f"unexpected tensors {unexpected}")
        if shapes:
            parts.append(f"shape mismatches {shapes}")
        raise CheckpointError(
            f"{what} does not fit the model: {'; '.join(parts)}. The checkpoint was made with a "
            "different model configuration or version; re-train it or pass the matching config."
        )


__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "Checkpoint",
    "check_tensors",
    "checkpoint_identity",
    "checkpoint_paths",
    "load",
    "read_sidecar",
    "save",
]
