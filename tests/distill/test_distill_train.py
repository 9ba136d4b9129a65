"""The training loop: learning, determinism, early stopping, freezing, logs, validation."""

from __future__ import annotations

import csv

import pytest
import torch
from distill_helpers import model_log, stats_of

from gym_s3.distill.loss import rollout_loss
from gym_s3.distill.train import TrainConfig, evaluate_loss, train
from gym_s3.distill.windows import DatasetWindows, TensorWindows
from gym_s3.dynamics import make
from gym_s3.errors import ConfigError


@pytest.fixture(scope="module")
def splits(tiny):
    """One-step training/validation windows of the tiny dataset and its train-split stats."""
    return (
        TensorWindows(tiny.split("train").windows(10, 3)),
        TensorWindows(tiny.split("val").windows(10, 3)),
        tiny.normalization(),
    )


def _cfg(**kw) -> TrainConfig:
    base = {"epochs": 3, "batch_size": 64, "batches_per_epoch": 8, "progress": False, "lr": 3e-3}
    return TrainConfig(**{**base, **kw})


@pytest.mark.parametrize("name", ["ddm", "trans"])
def test_a_tiny_run_reduces_validation_loss(name: str, splits) -> None:
    """A few dozen Adam steps lower the held-out validation loss of an untrained model."""
    tr, va, stats = splits
    torch.manual_seed(0)
    result = train(make(name), tr, va, stats, _cfg(batches_per_epoch=15, lr=5e-3))
    first = result.epochs[0]["val_loss"]
    assert result.best_val_loss < 0.8 * first


def test_bicycle_fit_recovers_the_generating_parameters() -> None:
    """Fitting the bicycle to logs of a bicycle with other parameters recovers their yaw gain.

    The log comes from a bicycle with a 3.4 m wheelbase and a 0.3 rad steering gain (yaw rate per
    unit steer ~ gain / wheelbase = 0.088 1/m, against 0.161 of the default); the fit starts at the
    defaults, must cut the held-out loss by 5x and land within 10 % of the true ratio.
    """
    truth = make("bicycle", wheelbase=3.4, steer_gain=0.3, accel_gain=4.0, brake_gain=8.0)
    tr = model_log(truth, n=32, steps=60, history=10, horizon=1, seed=1)
    va = model_log(truth, n=16, steps=60, history=10, horizon=1, seed=2)
    model = make("bicycle")
    res = train(model, TensorWindows(tr), TensorWindows(va), stats_of(tr),
                _cfg(epochs=8, batches_per_epoch=20, lr=3e-2))  # fmt: skip
    assert res.best_val_loss < 0.2 * res.epochs[0]["val_loss"]
    with torch.no_grad():
        p = model.params()
        ratio = float(p["steer_gain"] / p["wheelbase"])
    assert ratio == pytest.approx(0.3 / 3.4, rel=0.1)


def test_seeded_runs_are_identical(splits) -> None:
    """Same seed, same data: bit-identical weights and logs (CPU float32)."""
    tr, va, stats = splits
    models = []
    for _ in range(2):
        torch.manual_seed(5)
        model = make("trans")
        res = train(model, tr, va, stats, _cfg(epochs=1, seed=7))
        models.append((model.state_dict(), res.epochs[-1]["val_loss"]))
    (a, la), (b, lb) = models
    assert la == lb and all(torch.equal(a[k], b[k]) for k in a)


def test_best_weights_are_restored_and_csv_written(splits, tmp_path) -> None:
    """After training, the model's validation loss equals the best logged one; CSV has all rows."""
    tr, va, stats = splits
    model = make("ddm")
    log = tmp_path / "log.csv"
    res = train(model, tr, va, stats, _cfg(epochs=3, lr=3e-2), log_csv=log)
    idx = torch.arange(len(va))
    again = evaluate_loss(model, va, idx, 1, stats.delta_std)
    assert again == pytest.approx(res.best_val_loss, rel=1e-5)
    rows = list(csv.DictReader(log.open()))
    assert [int(r["epoch"]) for r in rows] == list(range(len(res.epochs)))


def test_early_stopping_stops(splits) -> None:
    """With a learning rate that cannot improve anything, training stops after ``patience``."""
    tr, va, stats = splits
    res = train(make("ddm"), tr, va, stats, _cfg(epochs=10, lr=1e-12, patience=2))
    assert res.stopped_early and len(res.epochs) == 1 + 2 and res.best_epoch == 0


def test_frozen_prefix_is_not_trained(splits) -> None:
    """``freeze=("base.",)`` keeps the dytr's DDM exactly as it was; the residual learns."""
    tr, va, stats = splits
    torch.manual_seed(1)
    model = make("dytr")
    base_before = {k: v.clone() for k, v in model.base.state_dict().items()}
    res_before = {k: v.clone() for k, v in model.residual.state_dict().items()}
    train(model, tr, va, stats, _cfg(epochs=1, freeze=("base.",)))
    assert all(torch.equal(v, model.base.state_dict()[k]) for k, v in base_before.items())
    assert any(not torch.equal(v, model.residual.state_dict()[k]) for k, v in res_before.items())


def test_multi_step_loss_and_one_step_equivalence(splits) -> None:
    """K = 1 rollout loss is the MSE of normalised dv; K = 3 runs and is larger for a bad model."""
    tr, _, stats = splits
    batch = tr.batch(torch.arange(64))
    model = make("ddm")
    model.set_norm_stats(stats)
    with torch.no_grad():
        one = rollout_loss(model, batch, 1, stats.delta_std)
        vel, _ = model.predict(batch["history"], {})
        dv_err = (vel - batch["target_vel"][:, 0]) / stats.delta_std
        assert float(one) == pytest.approx(float(dv_err.square().mean()), rel=1e-5)
        assert float(rollout_loss(model, batch, 3, stats.delta_std)) > float(one)


def test_dataset_windows_match_tensor_windows(tiny) -> None:
    """Lazily gathered windows equal the materialised ones (same anchors, same tensors)."""
    val = tiny.split("val")
    lazy = DatasetWindows(val, 10, 2)
    eager = TensorWindows(val.windows(10, 2))
    idx = torch.tensor([0, 3, len(eager) - 1])
    a, b = lazy.batch(idx), eager.batch(idx)
    assert len(lazy) == len(eager)
    assert all(torch.equal(a[k], b[k]) for k in ("history", "target_vel", "pose"))


def test_bad_configs_are_refused(splits) -> None:
    """Invalid hyper-parameters and too-short windows raise ConfigError naming the field."""
    with pytest.raises(ConfigError, match="epochs"):
        TrainConfig(epochs=0)
    with pytest.raises(ConfigError, match="lr"):
        TrainConfig(lr=-1.0)
    tr, va, stats = splits
    with pytest.raises(ConfigError, match="horizon >= 5"):
        train(make("ddm"), tr, va, stats, _cfg(horizon=5))
    with pytest.raises(ConfigError, match="no trainable parameters"):
        train(make("ddm"), tr, va, stats, _cfg(freeze=("",)))
