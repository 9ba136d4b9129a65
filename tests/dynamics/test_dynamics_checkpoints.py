"""Generic checkpoint files (gym_s3.checkpoints): round trip and every refusal path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from gym_s3 import checkpoints
from gym_s3.errors import CheckpointError
from gym_s3.spec import SPEC_VERSION


@pytest.fixture
def saved(tmp_path: Path) -> Path:
    """A small checkpoint on disk (stem)."""
    stem = tmp_path / "model"
    tensors = {"w": torch.arange(6.0).reshape(2, 3), "b": torch.tensor([1, 2], dtype=torch.int64)}
    checkpoints.save(stem, tensors, {"note": "hello", "values": [1.5, 2]}, kind="test")
    return stem


def test_round_trip(saved: Path) -> None:
    """Tensors, metadata, kind and spec version survive save/load, from any of the three paths."""
    for path in (saved, saved.with_suffix(".json"), Path(f"{saved}.safetensors")):
        ck = checkpoints.load(path, kind="test")
        assert torch.equal(ck.tensors["w"], torch.arange(6.0).reshape(2, 3))
        assert ck.tensors["b"].dtype == torch.int64
        assert ck.meta == {"note": "hello", "values": [1.5, 2]}
        assert ck.sidecar["spec_version"] == SPEC_VERSION
        assert ck.sidecar["tensors"]["w"] == {"dtype": "float32", "shape": [2, 3]}


def test_damaged_weights_are_refused(saved: Path) -> None:
    """One flipped byte in the weights: refused, naming the file and the hash."""
    weights = Path(f"{saved}.safetensors")
    data = bytearray(weights.read_bytes())
    data[-3] ^= 0xFF
    weights.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match=r"model\.safetensors.*SHA-256"):
        checkpoints.load(saved)


def test_truncated_weights_are_refused(saved: Path) -> None:
    """A truncated weights file is refused."""
    weights = Path(f"{saved}.safetensors")
    weights.write_bytes(weights.read_bytes()[:20])
    with pytest.raises(CheckpointError, match="damaged, truncated"):
        checkpoints.load(saved)


def test_pickles_are_refused(tmp_path: Path) -> None:
    """A torch.save archive is refused (never unpickled), with the fix in the message."""
    stem = tmp_path / "legacy"
    torch.save({"w": torch.zeros(2)}, f"{stem}.safetensors")
    with pytest.raises(CheckpointError, match="pickle.*gym_s3.checkpoints.save"):
        checkpoints.load(stem)


def test_foreign_json_is_refused(tmp_path: Path) -> None:
    """A JSON file of another tool is refused as not a sim2sim2sim sidecar."""
    (tmp_path / "other.json").write_text(json.dumps({"model": "x"}))
    with pytest.raises(CheckpointError, match="not a sim2sim2sim checkpoint sidecar"):
        checkpoints.load(tmp_path / "other")


def test_garbled_sidecar_is_refused(saved: Path) -> None:
    """A sidecar that is not JSON, or lacks a field, is refused as damaged."""
    sidecar = saved.with_suffix(".json")
    good = sidecar.read_text()
    sidecar.write_text(good[: len(good) // 2])
    with pytest.raises(CheckpointError, match="not valid JSON"):
        checkpoints.load(saved)
    data = json.loads(good)
    del data["weights"]
    sidecar.write_text(json.dumps(data))
    with pytest.raises(CheckpointError, match="field 'weights'"):
        checkpoints.load(saved)


def test_other_spec_version_is_refused(saved: Path) -> None:
    """A checkpoint made for another spec version is refused naming both versions."""
    sidecar = saved.with_suffix(".json")
    data = json.loads(sidecar.read_text())
    data["spec_version"] = SPEC_VERSION + 1
    sidecar.write_text(json.dumps(data))
    with pytest.raises(CheckpointError, match=f"spec version {SPEC_VERSION + 1}"):
        checkpoints.load(saved)


def test_wrong_kind_and_missing_files(saved: Path, tmp_path: Path) -> None:
    """Another kind is refused; a missing sidecar or weights file is named."""
    with pytest.raises(CheckpointError, match="'test' checkpoint.*'policy'"):
        checkpoints.load(saved, kind="policy")
    with pytest.raises(CheckpointError, match="no checkpoint sidecar"):
        checkpoints.load(tmp_path / "absent")
    Path(f"{saved}.safetensors").unlink()
    with pytest.raises(CheckpointError, match="weights .* are missing"):
        checkpoints.load(saved)


def test_non_json_metadata_is_refused_at_save(tmp_path: Path) -> None:
    """NaN or objects in the metadata are refused when saving, not discovered at load time."""
    with pytest.raises(CheckpointError, match="not JSON-serialisable"):
        checkpoints.save(tmp_path / "x", {"w": torch.zeros(1)}, {"loss": float("nan")}, kind="t")


def test_check_tensors_is_strict() -> None:
    """Missing, unexpected and reshaped tensors are all listed."""
    model = {"a": torch.zeros(2), "b": torch.zeros(3)}
    with pytest.raises(CheckpointError) as err:
        checkpoints.check_tensors({"a": torch.zeros(4), "c": torch.zeros(1)}, model, "ckpt")
    text = str(err.value)
    assert "missing tensors ['b']" in text and "unexpected tensors ['c']" in text
    assert "a: checkpoint (4,) vs model (2,)" in text
    checkpoints.check_tensors(dict(model), model, "ckpt")  # equal sets pass


def test_the_same_tensors_give_the_same_weights_file(tmp_path: Path) -> None:
    """Saving equal tensors twenty times writes byte-identical weights (one SHA-256).

    Ensembles record their members' weight hashes and tell duplicate members apart by them.
    Fails when the file's header order varies from one save to the next (a second metadata
    entry in the safetensors map did: two different files in twenty saves).
    """
    tensors = {"w": torch.arange(6.0).reshape(2, 3), "b": torch.tensor([1, 2])}
    digests = set()
    for k in range(20):
        checkpoints.save(tmp_path / f"m{k}", tensors, {"note": "same"}, kind="test")
        digests.add(checkpoints.read_sidecar(tmp_path / f"m{k}")["weights"]["sha256"])
    assert len(digests) == 1


def test_a_header_length_that_looks_like_a_pickle_marker_still_loads(tmp_path: Path) -> None:
    """A weights file whose u64 header length starts 0x80 0x04 (1152 bytes) is safetensors.

    The tensor name is lengthened until the header is exactly that long. Fails when the pickle
    check does not first recognise a safetensors header (the file is then refused as a pickle).
    """
    from safetensors.torch import save as st_save

    for length in range(1, 2000):
        tensors = {"w" * length: torch.ones(2)}
        if st_save(tensors, metadata={"format": checkpoints.FORMAT})[:2] == b"\x80\x04":
            break
    else:
        pytest.fail("no name length gives a 1152-byte header")
    checkpoints.save(tmp_path / "m", tensors, {}, kind="test")
    assert Path(f"{tmp_path / 'm'}.safetensors").read_bytes()[:2] == b"\x80\x04"
    assert torch.equal(checkpoints.load(tmp_path / "m", kind="test").tensors["w" * length],
                       torch.ones(2))  # fmt: skip
