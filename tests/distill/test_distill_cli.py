"""``s3 distill``: train and evaluate end to end on the tiny generated dataset."""

from __future__ import annotations

import argparse
import json

import pytest

from gym_s3.distill import cli
from gym_s3.dynamics import load


def _run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="s3")
    cli.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)


def test_train_then_evaluate(tiny_dir, tmp_path, capsys) -> None:
    """Train bicycle and dytr (which brings ddm) briefly, then evaluate them: files and JSON."""
    out = tmp_path / "ckpt"
    code = _run(["distill", "train", "--backend", "bicycle", "--backend", "dytr",
                 "--dataset", str(tiny_dir), "--out", str(out), "--epochs", "1",
                 "--batches-per-epoch", "2", "--batch-size", "32", "--no-progress"])  # fmt: skip
    assert code == 0
    for name in ("bicycle", "ddm", "dytr"):
        model = load(out / name)
        assert model.name == name
        assert model.checkpoint_meta["training"]["command"].startswith("s3 distill train")
        assert (out / f"{name}.train.csv").is_file()
    assert not (out / "trans.json").exists()
    ev = tmp_path / "ev"
    code = _run(["distill", "evaluate", "--checkpoint", str(out / "bicycle"), str(out / "dytr"),
                 "--dataset", str(tiny_dir), "--out", str(ev), "--horizons", "1", "5",
                 "--stride", "20", "--no-plots"])  # fmt: skip
    assert code == 0
    report = json.loads((ev / "evaluation.json").read_text())
    assert set(report["results"]) == {"bicycle", "dytr"}
    assert report["meta"]["dataset_hash"]
    assert "position error" in capsys.readouterr().out


def test_bounds_and_argument_errors(capsys) -> None:
    """``bounds`` prints the guard table; train needs --backend or --all."""
    assert _run(["distill", "bounds"]) == 0
    assert "| k_f |" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        _run(["distill", "train", "--dataset", "x", "--out", "y"])


def test_train_on_several_dataset_folders_uses_all_their_episodes(tiny_dir, tmp_path) -> None:
    """``--dataset A B`` trains on the union of both folders (expert data + policy rollouts).

    The episodes are split over two folders; the checkpoint records the hash of the union, which
    differs from the hash of either folder alone, and the command lists both folders.
    """
    import shutil

    from gym_s3.data.dataset import DrivingDataset

    files = sorted(tiny_dir.rglob("*.parquet"))
    halves = [tmp_path / "a", tmp_path / "b"]
    for k, folder in enumerate(halves):
        folder.mkdir()
        for f in files[k::2]:
            shutil.copy(f, folder / f.name)
    out = tmp_path / "ckpt"
    code = _run(["distill", "train", "--backend", "bicycle", "--dataset", *map(str, halves),
                 "--out", str(out), "--epochs", "1", "--batches-per-epoch", "2",
                 "--batch-size", "32", "--no-progress"])  # fmt: skip
    assert code == 0
    meta = load(out / "bicycle").checkpoint_meta
    union = DrivingDataset.load_folders(halves).content_hash
    assert meta["dataset_hash"] == union
    assert union not in {DrivingDataset.load_folders([h]).content_hash for h in halves}
    assert f"--dataset {halves[0]} {halves[1]}" in meta["training"]["command"]
    parts = meta["training"]["data_sources"]
    assert [p["folder"] for p in parts] == [str(h) for h in halves]
    assert [p["content_hash"] for p in parts] == [
        DrivingDataset.load_folders([h]).content_hash for h in halves
    ]
    ev = tmp_path / "ev"
    code = _run(["distill", "evaluate", "--checkpoint", str(out / "bicycle"), "--dataset",
                 *map(str, halves), "--out", str(ev), "--horizons", "1", "--stride", "20",
                 "--no-plots"])  # fmt: skip
    assert code == 0
    report = json.loads((ev / "evaluation.json").read_text())
    assert report["meta"]["dataset_hash"] == union
    assert report["meta"]["dataset"] == [str(h) for h in halves]


def test_the_same_folder_twice_is_refused(tiny_dir) -> None:
    """``--dataset A A`` would count every episode twice: refused, naming the folders."""
    from gym_s3.data.dataset import DrivingDataset
    from gym_s3.errors import ConfigError

    with pytest.raises(ConfigError, match="share episode files"):
        DrivingDataset.load_folders([tiny_dir, tiny_dir])


def test_mirror_reaches_the_trainer_and_the_record(tiny_dir, tmp_path) -> None:
    """``--mirror`` trains with mirror images: the record says so, the statistics are symmetric.

    Without it the fingerprint is the one written before the option existed.
    """
    from gym_s3.dynamics.base import HISTORY_FEATURES

    def train(out, *extra):
        code = _run(["distill", "train", "--backend", "trans", "--dataset", str(tiny_dir),
                     "--out", str(out), "--epochs", "1", "--batches-per-epoch", "2",
                     "--batch-size", "32", "--no-progress", *extra])  # fmt: skip
        assert code == 0
        return load(out / "trans").checkpoint_meta

    mirrored, plain = train(tmp_path / "m", "--mirror"), train(tmp_path / "p")
    assert mirrored["training"]["config"]["mirror"] is True
    assert mirrored["training"]["fingerprint"]["train"]["mirror"] is True
    assert "--mirror" in mirrored["training"]["command"]
    assert "mirror" not in plain["training"]["fingerprint"]["train"]
    assert "--mirror" not in plain["training"]["command"]
    for meta, symmetric in ((mirrored, True), (plain, False)):
        mean = dict(zip(HISTORY_FEATURES, meta["normalization"]["history_mean"], strict=True))
        odd = [abs(mean[k]) for k in ("v_lat", "yaw_rate", "steer")]
        sides = [abs(mean["mu_fl"] - mean["mu_fr"]), abs(mean["mu_rl"] - mean["mu_rr"])]
        assert (max(odd + sides) < 1e-7) == symmetric, (odd, sides)
