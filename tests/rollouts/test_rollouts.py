"""Policy rollouts (``s3 rollouts``): the logs, the driver tag and the exploration noise."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from gym_s3.data.dataset import DrivingDataset
from gym_s3.data.generate import build_pool, build_tracks, preset, run_wave
from gym_s3.sources import VehicleModelCars
from policies.rollouts import drive_policy, policy_wave_driver, resolve_policy

SMALL = dict(tracks=("putnam",), surfaces=("asphalt", "ice"), layouts_per_surface=1, cars=4,
             episode_s=1.5)  # fmt: skip


def _wave(sigma: float, noise_seed: int):
    """One small wave of the shipped ddm policy with noise ``sigma``."""
    config = preset("tiny", **SMALL)
    paths, groups = build_tracks(config, 0)
    pool = build_pool(paths, config, 0)
    name, policy = resolve_policy("ddm")
    driver = policy_wave_driver(name, policy, sigma, [noise_seed])
    return run_wave(pool, groups, config, 0, 0, None, driver)


def test_rollout_logs_rows_tag_and_schema(tmp_path):
    """The logs load as a dataset, every episode tagged with the policy driver."""
    manifest = drive_policy("ddm", tmp_path / "r", sigma=0.2, noise_seeds=(3, 4), seed=1,
                            preset="tiny", **SMALL)  # fmt: skip
    data = DrivingDataset.load(tmp_path / "r")  # validates the schema and the manifest
    assert manifest["driver"] == "policy:ddm"
    assert len(data.episodes) == 8  # 4 cars x 2 noise seeds
    assert data.num_samples == manifest["samples"] == sum(e.num_rows for e in data.episodes)
    for ep in data.episodes:
        assert ep.meta.device == "policy:ddm" and ep.meta.extra["driver"] == "policy:ddm"
        assert ep.meta.extra["action_noise"] == 0.2
        assert ep.meta.session_id.startswith("pol-ddm-")
        assert ep.num_rows == 30  # 1.5 s at 20 Hz on Putnam's wide road: nobody crashes
    assert {e.meta.layout["base"] for e in data.episodes} == {"asphalt", "ice"}


def test_noise_is_applied_and_seeded():
    """Noise 0: the seed changes nothing; noise > 0: seeds differ and repeat."""
    a = _wave(0.0, 1).columns
    b = _wave(0.0, 2).columns
    np.testing.assert_array_equal(a["steer"], b["steer"])  # no noise: the seed changes nothing
    c = _wave(0.3, 1).columns
    d = _wave(0.3, 2).columns
    assert np.abs(c["steer"] - d["steer"]).mean() > 0.05  # noise: the seeds differ
    assert np.abs(c["steer"] - a["steer"]).mean() > 0.05
    np.testing.assert_array_equal(c["steer"], _wave(0.3, 1).columns["steer"])  # repeatable


def test_recorded_actions_are_what_the_cars_received(monkeypatch):
    """The logged steer/accel are the clipped actions the vehicle model was given."""
    received: list[torch.Tensor] = []
    advance = VehicleModelCars.advance

    def spy(self, action, surfaces, wheel_mu):
        received.append(action.clone())
        return advance(self, action, surfaces, wheel_mu)

    monkeypatch.setattr(VehicleModelCars, "advance", spy)
    wave = _wave(0.5, 7)
    sent = torch.stack(received).numpy()  # (steps - 1, N, 2)
    assert np.abs(sent).max() <= 1.0  # clipped before the cars see it
    assert np.abs(sent).max() == 1.0  # sigma 0.5 saturates some actions
    logged = np.stack([wave.columns["steer"], wave.columns["accel"]], axis=-1)[: len(sent)]
    np.testing.assert_allclose(logged, sent, rtol=0, atol=1e-6)


def test_unknown_policy_and_simulator_are_refused(tmp_path):
    """Bad policy names and simulators get a clear error."""
    from gym_s3.errors import ConfigError

    with pytest.raises(ConfigError, match="no policy checkpoint"):
        drive_policy("nope", tmp_path / "x")
    with pytest.raises(ConfigError, match="unknown rollout simulator 'carla'"):
        drive_policy("ddm", tmp_path / "y", simulator="carla")
    with pytest.raises(ConfigError, match="fast"):
        drive_policy("ddm", tmp_path / "y", simulator="model", fast=True)


def test_open_loop_report_adds_policy_rollouts_per_surface(tmp_path):
    """``add_rollouts`` reports the rollout windows per surface, apart from the expert tables."""
    from gym_s3.distill.evaluate import add_rollouts, evaluate
    from gym_s3.distill.windows import TensorWindows
    from gym_s3.dynamics import default_checkpoint, load

    drive_policy("ddm", tmp_path / "r", sigma=0.2, noise_seeds=(3,), seed=1, preset="tiny",
                 **{**SMALL, "episode_s": 3.0})  # fmt: skip
    rolled = TensorWindows(DrivingDataset.load(tmp_path / "r").windows(10, 20, stride=4))
    models = {"bicycle": load(default_checkpoint("bicycle"))}
    expert = {"results": {"bicycle": {}}, "horizons": [1, 20]}  # stands for an expert report
    report = add_rollouts(expert, models, rolled, meta={"drivers": ["policy:ddm"]})
    alone = evaluate(models, rolled, [1, 20])
    assert report["results"] == {"bicycle": {}}  # the expert tables are left alone
    assert report["rollouts"]["results"] == alone["results"]
    assert {"surface:asphalt", "surface:ice"} <= set(report["rollouts"]["results"]["bicycle"])
    assert report["rollouts"]["windows"] == len(rolled) > 0
