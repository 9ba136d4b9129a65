"""What ``s3 train`` logs: per-iteration episode metrics and the ``--eval-every`` evaluation."""

from __future__ import annotations

import csv
import math

import pytest
import torch

pytest.importorskip("torchrl")

from tensordict import TensorDict  # noqa: E402
from torch_helpers import one_torch_thread  # noqa: E402

from gym_s3.adapters.torchrl import EPISODE_FIELDS  # noqa: E402
from gym_s3.cli import main  # noqa: E402
from policies.train_log import episode_row  # noqa: E402

pytestmark = pytest.mark.timeout(300)

#: A two-iteration run whose episodes end in every batch (8-step time limit).
QUICK = ["--preset", "tiny", "--no-progress", "--num-envs", "16", "--rollout-steps", "16",
         "--total-frames", "512", "--max-episode-steps", "8", "--eval-every", "1",
         "--eval-episodes", "8", "--checkpoint-every", "0"]  # fmt: skip


def test_episode_row_averages_only_the_episodes_that_ended():
    """Means over done frames only; end reasons as shares; time-outs from ``truncated``."""
    col = {name: i for i, name in enumerate(EPISODE_FIELDS)}
    stats = torch.zeros(2, 3, len(EPISODE_FIELDS))
    stats[:, :, col["cte_mean"]] = torch.tensor([[9.0, 1.0, 9.0], [3.0, 9.0, 9.0]])
    stats[0, 1, col["off_track"]] = 1.0  # car 0 left the road at step 1
    stats[:, :, col["steps"]] = torch.tensor([[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]])
    done = torch.tensor([[False, True, False], [True, False, False]])[..., None]
    truncated = torch.tensor([[False, False, False], [True, False, False]])[..., None]
    nxt = TensorDict({"done": done, "truncated": truncated, "episode_stats": stats}, [2, 3])
    row = episode_row(nxt)
    assert row["episodes"] == 2.0
    assert row["episode/cte_mean"] == pytest.approx(2.0)  # (1 + 3) / 2, never the 9s
    assert row["episode/steps"] == pytest.approx(1.5)
    assert row["episode/end_off_track"] == pytest.approx(0.5)
    assert row["episode/end_time_limit"] == pytest.approx(0.5)
    assert row["episode/end_spin_out"] == 0.0
    assert episode_row(nxt.set("done", torch.zeros_like(done))) == {}


def _scalars(folder) -> dict[str, list[float]]:
    """CSV scalars of a run: name (with ``/``) -> values in step order."""
    out = {}
    for path in folder.rglob("*.csv"):
        name = path.relative_to(folder).with_suffix("").as_posix()
        with path.open() as fh:
            out[name] = [float(r[1]) for r in csv.reader(fh)]
    return out


def test_csv_log_has_episode_metrics_and_quick_evaluations(tmp_path):
    """Each iteration logs episode metrics and end reasons; ``--eval-every 1`` logs ``eval/*``."""
    with one_torch_thread():
        assert main(["train", "--out", str(tmp_path), *QUICK]) == 0
    scalars = _scalars(tmp_path / "logs" / "ppo" / "scalars")
    for name in ("episode/cte_mean", "episode/progress", "episode/completion", "episode/steps",
                 "episode/end_off_track", "episode/end_time_limit", "eval/cte_mean",
                 "eval/completion", "eval/failure_rate"):  # fmt: skip
        assert len(scalars[name]) == 2, name  # one value per iteration
        assert all(math.isfinite(v) for v in scalars[name]), name
    assert all(1.0 <= v <= 8.0 for v in scalars["episode/steps"])
    ends = [scalars[f"episode/end_{r}"] for r in
            ("off_track", "spin_out", "non_finite", "completed", "time_limit")]  # fmt: skip
    for shares in zip(*ends, strict=True):  # every episode ended for exactly one reason
        assert sum(shares) == pytest.approx(1.0)
    assert all(v <= 8.0 for v in scalars["eval/steps"])  # the training task's time limit


def test_tensorboard_log_has_the_same_scalars(tmp_path):
    """``--logger tensorboard`` writes the episode and evaluation scalars as events."""
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    with one_torch_thread():
        assert main(["train", "--out", str(tmp_path), "--logger", "tensorboard", *QUICK]) == 0
    events = next((tmp_path / "logs").rglob("events.out.tfevents.*")).parent
    acc = EventAccumulator(str(events))
    acc.Reload()
    tags = set(acc.Tags()["scalars"])
    assert {"episode/cte_mean", "episode/end_time_limit", "eval/cte_mean", "reward_mean"} <= tags
    assert len(acc.Scalars("episode/cte_mean")) == 2


def test_eval_tracks_must_be_held_out():
    """A quick evaluation on a training track is refused with the overlap named."""
    from gym_s3.errors import ConfigError
    from policies.config import preset

    with pytest.raises(ConfigError, match=r"held out.*putnam"):
        preset("tiny", eval_tracks=("putnam",))
    assert preset("tiny", eval_tracks=("putnam",), eval_every=0).eval_every == 0


def test_train_cli_sets_the_network_widths_final_std_discount_and_tracks(tmp_path, capsys):
    """Network widths, exploration noise, discount and pool tracks of ``s3 train`` reach the run.

    ``--hidden 16 8 --final-std 0.1 --gamma 0.995 --gae-lambda 0.9 --tracks town:0``.
    The saved policy has those layers and that exploration noise, its sidecar records the
    discount, lambda and pool tracks it was trained with; ``--hidden 0``, ``--gamma 1.5`` and a
    pool track that is also the quick evaluation's held-out track are refused by name.
    """
    from policies.checkpoint import load_policy

    with one_torch_thread():
        options = ["--hidden", "16", "8", "--final-std", "0.1", "--gamma", "0.995",
                   "--gae-lambda", "0.9", "--tracks", "town:0"]  # fmt: skip
        assert main(["train", "--out", str(tmp_path), *QUICK, *options]) == 0
    policy = load_policy(tmp_path / "policy_final.json")
    assert policy.meta["hidden"] == [16, 8]
    assert (policy.meta["training"]["gamma"], policy.meta["training"]["gae_lambda"]) == (0.995, 0.9)
    assert policy.meta["training"]["tracks"] == ["town:0"]
    assert [tuple(w.shape) for w in policy.actor.body.parameters() if w.ndim == 2][:2] == [
        (16, 38),
        (8, 16),
    ]
    assert torch.allclose(policy.actor.log_std.exp(), torch.tensor([0.1, 0.1]), rtol=1e-4)
    with one_torch_thread():
        assert main(["train", "--out", str(tmp_path / "bad"), *QUICK, "--hidden", "0"]) == 2
    assert "hidden must list layer widths >= 1" in capsys.readouterr().err
    with one_torch_thread():
        assert main(["train", "--out", str(tmp_path / "bad2"), *QUICK, "--gamma", "1.5"]) == 2
    assert "gamma must be in (0, 1]" in capsys.readouterr().err
    with one_torch_thread():
        bad = ["--tracks", "putnam", "procedural:100"]  # procedural:100: the quick evaluation's
        assert main(["train", "--out", str(tmp_path / "bad3"), *QUICK, *bad]) == 2
    assert "held out" in capsys.readouterr().err
