"""``s3 rollouts --simulator standin``: policy rollouts through S3BeamNG-v0 and the recorder.

The open stand-in server runs in-process behind the real beamngpy client; every test drives a few
seconds of Putnam Park (one asphalt layout with an ice patch, one full-ice layout).
"""

from __future__ import annotations

import argparse
import json
import socket

import numpy as np
import pytest
import torch

from gym_s3.data.dataset import INCOMPLETE_NAME, DrivingDataset
from gym_s3.data.labelling import episode_labels
from gym_s3.data.schema import COLUMNS
from gym_s3.errors import ConfigError, SimulatorConnectionError
from gym_s3.spec import CONTROL_DT_S, WHEELS
from gym_s3.task import END_REASONS
from gym_s3.tracks.layouts import PatchConfig
from gym_s3.tracks.surfaces import SURFACE_NAMES, get_surface
from policies.rollouts import drive_policy

pytest.importorskip("beamngpy")

SIGMA = 0.2
SMALL = dict(tracks=("putnam",), surfaces=("asphalt", "ice"), layouts_per_surface=1,
             patches=PatchConfig(count=(1, 1), placement="corners"), episode_s=3.0,
             preset="tiny")  # fmt: skip


@pytest.fixture(scope="module")
def rolled(tmp_path_factory):
    """Two 3 s episodes in the stand-in, with every policy call and every command sent spied on."""
    from gym_s3.beamng.client.link import SimLink
    from policies.checkpoint import Policy

    calls: list[tuple[np.ndarray, np.ndarray]] = []
    sent: list[tuple[float, float, float]] = []
    act, control = Policy.act, SimLink.control

    def act_spy(self, obs):
        out = act(self, obs)
        calls.append((np.asarray(obs).copy(), np.asarray(out).copy()))
        return out

    def control_spy(self, steer, throttle, brake):
        sent.append((steer, throttle, brake))
        return control(self, steer, throttle, brake)

    out = tmp_path_factory.mktemp("standin") / "r"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Policy, "act", act_spy)
        mp.setattr(SimLink, "control", control_spy)
        manifest = drive_policy("ddm", out, sigma=SIGMA, noise_seeds=(3,), seed=1,
                                simulator="standin", **SMALL)  # fmt: skip
    return out, manifest, calls, sent


def test_episodes_load_with_schema_tags_and_labels(rolled):
    """The folder loads as a dataset; rows, tags, labels and end reasons are the task's."""
    out, manifest, _, _ = rolled
    data = DrivingDataset.load(out)  # checks the schema and every digest of the manifest
    assert len(data.episodes) == 2
    assert data.num_samples == manifest["samples"] == sum(e.num_rows for e in data.episodes)
    assert manifest["simulator"] == "open stand-in" and manifest["source"] == "standin-server"
    assert manifest["driver"] == "policy:ddm" and manifest["steps_per_s"] > 0
    assert {e.meta.base_surface for e in data.episodes} == {"asphalt", "ice"}
    for ep, entry in zip(data.episodes, manifest["files"], strict=True):
        meta = ep.meta
        assert meta.source == "standin-server" and meta.device == "policy:ddm"
        assert meta.extra["simulator"] == "open stand-in"
        assert meta.extra["env"] == "S3BeamNG-v0 (open stand-in)"
        assert meta.extra["action_noise"] == SIGMA and meta.extra["noise_seed"] == 3
        assert meta.extra["end_reason"] == entry["end_reason"] in END_REASONS
        assert meta.vehicle  # the stand-in's car is known
        cols = {k: v[ep.start : ep.stop].numpy() for k, v in data.columns.items()}
        assert set(cols) == {c.name for c in COLUMNS}
        if meta.extra["end_reason"] == "time_limit":
            assert ep.num_rows == round(3.0 / CONTROL_DT_S)  # states 0 .. steps - 1
        np.testing.assert_allclose(cols["t"], np.arange(ep.num_rows) * CONTROL_DT_S, atol=1e-5)
        assert meta.labels == episode_labels(cols, meta.track_labels)


def test_positions_move_along_the_track_with_real_columns(rolled):
    """Pose, speed, Frenet coordinates, wheel spin and friction come from the simulator drive."""
    out, _, _, _ = rolled
    data = DrivingDataset.load(out)
    ice = get_surface("ice")
    for ep in data.episodes:
        cols = {k: v[ep.start : ep.stop].double().numpy() for k, v in data.columns.items()}
        travelled = float(np.sum(cols["v_long"][:-1]) * CONTROL_DT_S)
        progress = cols["s"][-1] - cols["s"][0]
        moved = np.hypot(cols["x"][-1] - cols["x"][0], cols["y"][-1] - cols["y"][0])
        # starts where it was drawn (placing the car steps it once, at the start speed)
        assert abs(cols["s"][0] - ep.meta.extra["start_s"]) < 1.0 + cols["v_long"][0] * 0.1
        assert progress > 1.0, "the car drives forward along the reference"
        assert abs(progress - travelled) < 0.2 * travelled + 0.5  # s follows the speed
        assert abs(moved - progress) < 0.1 * progress + 0.5  # and so do x, y
        assert np.abs(cols["d"]).max() < 3.0
        assert np.abs(np.diff(cols["yaw"])).max() < 0.5  # continuous heading
        assert np.isfinite([cols[f"omega_{w}"] for w in WHEELS]).all()  # stand-in wheel spin
        mu = np.stack([cols[f"mu_{w}"] for w in WHEELS])
        if ep.meta.base_surface == "ice":
            np.testing.assert_allclose(mu, ice.mu, rtol=1e-6)
            assert (np.stack([cols[f"surface_{w}"] for w in WHEELS]) ==
                    SURFACE_NAMES.index("ice")).all()  # fmt: skip
        else:
            assert mu.max() > 0.9


def test_recorded_actions_are_policy_plus_noise_clipped_and_sent(rolled):
    """Row k's action is clip(policy(obs_k) + sigma * noise_k); rows 0..T-2 are what was sent."""
    out, manifest, calls, sent = rolled
    data = DrivingDataset.load(out)
    k = 0
    logged_all, sent_rows = [], 0
    for ep in data.episodes:
        gen = torch.Generator().manual_seed(ep.meta.extra["episode_seed"])
        rows = ep.num_rows
        raw = np.concatenate([c[1] for c in calls[k : k + rows]])
        noise = np.concatenate([torch.randn((1, 2), generator=gen).numpy() for _ in range(rows)])
        expected = np.clip(raw + SIGMA * noise, -1.0, 1.0)
        logged = np.stack([data.columns["steer"][ep.start : ep.stop].numpy(),
                           data.columns["accel"][ep.start : ep.stop].numpy()], -1)  # fmt: skip
        np.testing.assert_allclose(logged, expected, atol=1e-6)
        assert np.abs(logged - np.clip(raw, -1, 1)).mean() > 0.05  # the noise is there
        logged_all.append(logged[:-1])  # the last row's action is chosen, never sent
        sent_rows += rows - 1
        k += rows
    assert k == len(calls), "one policy call per recorded row"
    commands = np.asarray(sent)
    assert len(commands) == sent_rows
    logged = np.concatenate(logged_all)
    np.testing.assert_allclose(commands[:, 0], logged[:, 0], atol=1e-6)
    np.testing.assert_allclose(commands[:, 1], np.maximum(logged[:, 1], 0), atol=1e-6)
    np.testing.assert_allclose(commands[:, 2], np.maximum(-logged[:, 1], 0), atol=1e-6)


@pytest.mark.slow  # ~12 s of stand-in driving; the batched path's seeding test stays
def test_same_seed_same_files_other_noise_seed_differs(tmp_path):
    """Seeded: the same seeds give the same content; another noise seed other actions."""
    small = {**SMALL, "surfaces": ("ice",), "episode_s": 2.0}
    runs = [
        drive_policy(
            "ddm",
            tmp_path / f"r{i}",
            sigma=SIGMA,
            noise_seeds=(n,),
            seed=1,
            simulator="standin",
            **small,
        )  # fmt: skip
        for i, n in enumerate((3, 3, 4))
    ]
    assert runs[0]["content_hash"] == runs[1]["content_hash"]
    assert runs[0]["content_hash"] != runs[2]["content_hash"]
    steer = [DrivingDataset.load(tmp_path / f"r{i}").columns["steer"].numpy() for i in range(3)]
    np.testing.assert_array_equal(steer[0], steer[1])
    n = min(len(steer[0]), len(steer[2]))
    assert np.abs(steer[0][:n] - steer[2][:n]).mean() > 0.05


def test_distill_evaluate_reads_the_rollouts(rolled, tmp_path):
    """``s3 distill evaluate --rollouts DIR`` reports the open-loop errors on the folder."""
    from gym_s3.distill import cli

    out = rolled[0]
    parser = argparse.ArgumentParser(prog="s3")
    cli.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["distill", "evaluate", "--checkpoint", "bicycle", "--dataset",
                              str(out), "--rollouts", str(out), "--split", "all", "--horizons",
                              "1", "5", "--stride", "5", "--no-plots", "--out",
                              str(tmp_path / "ev")])  # fmt: skip
    assert args.func(args) == 0
    report = json.loads((tmp_path / "ev" / "evaluation.json").read_text())
    rollouts = report["rollouts"]
    assert rollouts["windows"] > 0
    assert rollouts["meta"]["drivers"] == ["policy:ddm"]
    assert rollouts["meta"]["sources"] == ["standin-server"]
    assert {"surface:asphalt", "surface:ice"} <= set(rollouts["results"]["bicycle"])


def test_beamng_without_a_simulator_fails_clearly_and_leaves_no_folder(tmp_path):
    """--simulator beamng with nothing listening: a connection error, no partial dataset."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = tmp_path / "b"
    with pytest.raises(SimulatorConnectionError, match="nothing answers"):
        drive_policy("ddm", out, simulator="beamng", noise_seeds=(0,),
                     sim_options={"port": port, "socket_timeout": 2.0}, **SMALL)  # fmt: skip
    assert not out.exists() and not (out / INCOMPLETE_NAME).exists()
    with pytest.raises(ConfigError, match="BeamNG.tech connection"):
        drive_policy("ddm", out, simulator="standin", sim_options={"port": port}, **SMALL)


def test_cli_documents_the_simulators_and_refuses_misplaced_options(tmp_path, capsys):
    """``s3 rollouts --help`` names every simulator option; options of another one are refused."""
    from gym_s3.cli import main

    with pytest.raises(SystemExit):
        main(["rollouts", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for needle in ("--simulator {model,standin,beamng}", "about 50x faster", "--fast-standin",
                   "--host HOST BeamNG.tech address (default: 127.0.0.1)",
                   "--port PORT BeamNG.tech game-engine port (default: 25252)",
                   "[s] (default: 10.0)", "--episode-s EPISODE_S longest episode [s]"):  # fmt: skip
        assert needle in text
    base = ["rollouts", "ddm", "--out", str(tmp_path / "x")]
    for extra, message in (
        (["--simulator", "standin", "--cars", "4"], "--cars is for --simulator model"),
        (["--simulator", "standin", "--launch"], "add --simulator beamng"),
        (["--fast-standin"], "--fast-standin needs --simulator standin"),
    ):
        assert main([*base, *extra]) == 2
        assert message in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_pipeline_round_rollouts_run_in_the_chosen_simulator(tmp_path):
    """``rollout_simulator="standin"``: a round's rollouts come from the stand-in server."""
    from types import SimpleNamespace

    from policies.pipeline.config import preset
    from policies.pipeline.rounds import stage_rollouts

    with pytest.raises(ConfigError, match="unknown rollout simulator"):
        preset("tiny", rollout_simulator="carla")
    config = preset("tiny", rollout_simulator="standin", rollout_overrides={
        "tracks": ("putnam",), "surfaces": ("asphalt",), "episode_s": 1.0})  # fmt: skip
    train = SimpleNamespace(result={"policies": {"bicycle": "bicycle"}})
    result = stage_rollouts(tmp_path, config, train, 1)
    data = DrivingDataset.load(result["datasets"]["bicycle"])
    assert [e.meta.source for e in data.episodes] == ["standin-server"]
    assert data.episodes[0].meta.device == "policy:bicycle"
