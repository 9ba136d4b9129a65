"""Bodies of the pipeline stages (each writes into its own folder and returns a JSON result)."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch

from gym_s3.errors import ConfigError
from policies.checkpoint import shipped_policy
from policies.pipeline.config import BACKENDS, VALIDATION_SIMULATORS, PipelineConfig
from policies.pipeline.stages import StageOutcome, run_stage


# ---------------------------------------------------------------------------------- data
def stage_data(folder: Path, config: PipelineConfig) -> dict[str, Any]:
    """Generate the driving dataset (scripted expert in the batched high-fidelity physics)."""
    from gym_s3.data.generate import generate_dataset, preset, summary_line

    gen = preset(config.data_preset, **config.data_overrides)
    manifest = generate_dataset(
        folder / "dataset", gen, config.seed, preset_name=config.data_preset
    )
    print(summary_line(manifest))
    return {
        "dataset": str(folder / "dataset"),
        "content_hash": manifest["content_hash"],
        "episodes": len(manifest["files"]),
        "samples": manifest["samples"],
        "hours": manifest["hours"],
        "generation_s": manifest["generation_s"],
    }


# ---------------------------------------------------------------------------------- distill
def stage_distill(
    folder: Path,
    config: PipelineConfig,
    data: StageOutcome,
    *,
    extra_data: tuple[str, ...] = (),
    previous: dict[str, str] | None = None,
    overrides: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Train the chosen backends, take the shipped ones for the rest, evaluate all open loop.

    Args:
        folder: stage folder.
        config: pipeline settings.
        data: the data stage.
        extra_data: further dataset folders trained on (policy rollouts of the rounds).
        previous: checkpoints of the round before, evaluated next to the new ones as
            ``"<name> (before)"`` (policy-in-the-loop rounds).
        overrides: training settings over ``config.distill_overrides`` (a round's few epochs).

    The open-loop report covers the held-out expert sessions and, when the dataset holds
    policy-driven episodes, their held-out sessions too (report key ``"rollouts"``).
    """
    from gym_s3.data.dataset import DrivingDataset
    from gym_s3.distill import recipes
    from gym_s3.distill.evaluate import add_rollouts, evaluate, print_tables, write_report
    from gym_s3.distill.windows import TensorWindows
    from gym_s3.dynamics import default_checkpoint, load

    dataset = DrivingDataset.load_folders([data.result["dataset"], *extra_data])
    checkpoints: dict[str, str] = {}
    if config.distill_backends:
        settings = {"device": config.device, **config.distill_overrides, **(overrides or {})}
        written = recipes.run(dataset, folder / "checkpoints", config.distill_backends,
                              overrides=settings,
                              command=f"s3 pipeline (seed {config.seed})")  # fmt: skip
        checkpoints.update({k: str(v) for k, v in written.items()})
    for name in BACKENDS:
        if name not in checkpoints:
            checkpoints[name] = str(default_checkpoint(name))
    val = dataset.split("val")
    by_driver = {
        driver: val.select_sessions(
            e.meta.session_id for e in val.episodes if e.meta.device.startswith("policy:") == driver
        )
        for driver in (False, True)
    }  # fmt: skip
    horizons = config.open_loop_horizons
    models = {name: load(path) for name, path in checkpoints.items()}
    for name, path in (previous or {}).items():
        if name in config.distill_backends:
            models[f"{name} (before)"] = load(path)
    expert = by_driver[False] if by_driver[False].episodes else val
    windows = TensorWindows(expert.windows(10, max(horizons), stride=4))
    meta = {"dataset_hash": dataset.content_hash, "checkpoints": checkpoints}
    report = evaluate(models, windows, horizons, meta=meta)
    policy_val = by_driver[True]
    if policy_val.episodes:
        rolled = TensorWindows(policy_val.windows(10, max(horizons), stride=4))
        if len(rolled):
            drivers = sorted({e.meta.device for e in policy_val.episodes})
            about = {"drivers": drivers, "episodes": len(policy_val.episodes)}
            add_rollouts(report, models, rolled, meta=about)
    path = write_report(report, folder / "open_loop")  # fmt: skip
    print_tables(report)
    return {
        "checkpoints": checkpoints,
        "trained": list(config.distill_backends),
        "open_loop": str(path),
        "samples": dataset.num_samples,
    }


def shipped_dynamics_identities(config: PipelineConfig) -> dict[str, str | None]:
    """SHA-256 of each shipped dynamics checkpoint the run uses instead of training it.

    Part of the distill stage's inputs, so replacing ``gym_s3/assets/dynamics`` (a new release,
    a checkpoint of one's own at the same path) re-runs every stage that read the old one.
    """
    from gym_s3.checkpoints import checkpoint_identity
    from gym_s3.dynamics import default_checkpoint

    return {name: checkpoint_identity(default_checkpoint(name))
            for name in BACKENDS if name not in config.distill_backends}  # fmt: skip


# ---------------------------------------------------------------------------------- train
def shipped_policy_identities(config: PipelineConfig) -> dict[str, str | None]:
    """SHA-256 of each shipped policy the run evaluates instead of training it.

    Part of the train stage's inputs (a missing file is ``None`` here and refused, naming the
    fix, when the stage runs), so swapping ``policies/assets`` re-runs the evaluation.
    """
    from gym_s3.checkpoints import checkpoint_identity

    return {name: checkpoint_identity(shipped_policy(name))
            for name in config.eval_policies if name not in config.policy_backends}  # fmt: skip


def _policy_preset(name: str) -> tuple[str, str]:
    """(PPO preset, dynamics backend) of a policy name."""
    return (name, "dytr") if name == "oracle" else (name, name)


def stage_train(folder: Path, config: PipelineConfig, distill: StageOutcome) -> dict[str, Any]:
    """PPO for the chosen policies in the distilled env; the others are the shipped policies."""
    from policies.config import config_to_dict, preset
    from policies.ppo import train

    policies: dict[str, str] = {}
    trained: dict[str, Any] = {}
    for name in config.policy_backends:
        preset_name, backend = _policy_preset(name)
        overrides = {"device": config.device, **config.ppo_preset_overrides}
        cfg = preset(preset_name, dynamics_checkpoint=distill.result["checkpoints"][backend],
                     seed=config.seed, **overrides)  # fmt: skip

        def train_one(out: Path, cfg=cfg) -> dict[str, Any]:
            result = train(cfg, out)
            return {"checkpoint": str(result.checkpoint), "frames": result.frames,
                    "wall_s": result.wall_s, "train_frames_per_s": result.train_frames_per_s,
                    "env_frames_per_s": result.env_frames_per_s}  # fmt: skip

        # a sub-stage: an interrupted train stage keeps the policies it finished
        done = run_stage(folder, name, {"ppo": config_to_dict(cfg)}, train_one).result
        policies[name] = done.pop("checkpoint")
        trained[name] = done
    for name in config.eval_policies:
        if name not in policies:
            path = shipped_policy(name)
            if not path.is_file():
                raise ConfigError(
                    f"the shipped policy '{name}' is missing ({path}); make it with "
                    f"`s3 train --preset {name} --ship`, or train it in this run (policy_backends)"
                )
            policies[name] = str(path)
    return {"policies": policies, "trained": trained}


# ---------------------------------------------------------------------------------- evaluate
def stage_evaluate(folder: Path, config: PipelineConfig, train: StageOutcome) -> dict[str, Any]:
    """Every policy in the high-fidelity simulator: Putnam Park, surfaces, ice patches.

    ``eval_simulator="standin"``: each lap through ``S3BeamNG-v0`` and the beamngpy client on the
    open stand-in, one after another (GIFs when ``gif_every``). ``"model"``: every lap of every
    policy as one car of one batch of the stand-in's vehicle model in-process
    (:mod:`policies.evaluate_model`: the same laps and physics, no GIFs, tens of times faster).
    """
    from policies.checkpoint import load_policy
    from policies.report import write_evaluation

    runs_of = _evaluate_batched(config, train) if config.eval_simulator == "model" else None
    where = VALIDATION_SIMULATORS[config.eval_simulator][1]
    results: dict[str, str] = {}
    for name in config.eval_policies:
        checkpoint = train.result["policies"][name]

        def evaluate_one(out: Path, name: str = name, checkpoint: str = checkpoint) -> dict:
            if runs_of is not None:
                runs = runs_of[name]
            else:
                runs = _evaluate_standin(load_policy(checkpoint), config)
            write_evaluation(runs, out, title=f"policy '{name}' in {where}")
            return {"results": str(out / "results.json")}

        # a sub-stage per policy: an interrupted evaluate stage keeps the policies it finished
        # (the stage's own key holds the shipped files' SHA-256 through the train stage's key)
        inputs = {"checkpoint": checkpoint}
        results[name] = run_stage(folder, name, inputs, evaluate_one).result["results"]
    return {"results": results}


def _seeded_patches(config: PipelineConfig) -> list[tuple[int, list[int]]]:
    """``(seed, ice-patch counts)`` per evaluation seed: a lap without patches runs once."""
    out = []
    for k, seed in enumerate(config.eval_seeds):
        patches = list(config.eval_ice_patches) if k == 0 else [
            p for p in config.eval_ice_patches if p > 0]  # fmt: skip
        if patches:
            out.append((seed, patches))
    return out


def _mark_seed(runs: list, seed: int) -> list:
    """Record the patch seed in the condition of the runs with ice patches."""
    for run in runs:
        if run.condition.get("ice_patches"):
            run.condition["seed"] = seed
    return runs


def _evaluate_standin(policy: Any, config: PipelineConfig) -> list:
    """One policy's laps through ``S3BeamNG-v0`` on the stand-in, every evaluation seed."""
    from policies.evaluate import evaluate_beamng

    runs = []
    for k, (seed, patches) in enumerate(_seeded_patches(config)):
        runs += _mark_seed(evaluate_beamng(
            policy, surfaces=config.eval_surfaces, ice_patches=patches, seed=seed,
            render_every=config.gif_every if k == 0 else 0, max_steps=config.eval_max_steps,
            fast=config.fast_standin), seed)  # fmt: skip
    return runs


def batched_evaluation_laps(config: PipelineConfig) -> list:
    """The evaluation laps of ``eval_simulator="model"`` (:class:`policies.evaluate_model.Lap`).

    Every seed's laps go into one batch (one compilation of the physics, one pass of the steps);
    laps with ice patches carry their seed in their condition, as :func:`_mark_seed` writes it.
    """
    from policies.evaluate_model import lap_grid

    return [replace(lap, seed=seed) if lap.ice_patches else lap
            for seed, patches in _seeded_patches(config)
            for lap in lap_grid(["putnam"], config.eval_surfaces, patches)]  # fmt: skip


def _evaluate_batched(config: PipelineConfig, train: StageOutcome) -> dict[str, list]:
    """Every policy's laps in one batch of the vehicle model per seed; rows per policy.

    Each policy's list holds the expert's rows of its laps and its own rows, as the stand-in
    path gives them.
    """
    from policies.checkpoint import load_policy
    from policies.evaluate_model import evaluate_model
    from policies.expert_driver import EXPERT

    policies = [(n, load_policy(train.result["policies"][n])) for n in config.eval_policies]
    runs = evaluate_model(policies, batched_evaluation_laps(config), seed=config.eval_seeds[0],
                          max_steps=config.eval_max_steps, fast=config.fast_standin,
                          progress=False)  # fmt: skip
    out: dict[str, list] = {}
    for name in config.eval_policies:
        out[name] = [r for r in runs if r.driver in (EXPERT, name)]
        for r in out[name]:  # a policy's table names its rows "policy", as the stand-in path does
            r.driver = EXPERT if r.driver == EXPERT else "policy"
    return out


# ---------------------------------------------------------------------------------- speedup
def _distilled_rate(backend: str, checkpoint: str, n: int, seconds: float, device: str) -> float:
    """Env steps per second of ``S3Distilled-v0`` with random actions (resets included)."""
    import gymnasium as gym

    import gym_s3  # noqa: F401

    env = gym.make("S3Distilled-v0", num_envs=n, backend=backend, checkpoint=checkpoint,
                   tracks=("putnam",), layouts_per_track=2, seed=0, device=device)  # fmt: skip
    gen = torch.Generator().manual_seed(0)
    actions = [(torch.rand(n, 2, generator=gen) * 2 - 1).to(device) for _ in range(8)]
    env.reset(seed=0)
    for k in range(3):  # warm-up
        env.step(actions[k])
    _sync(device)
    steps, began = 0, time.perf_counter()
    while time.perf_counter() - began < seconds:
        env.step(actions[steps % len(actions)])
        steps += 1
    _sync(device)
    rate = steps * n / (time.perf_counter() - began)
    env.close()
    return rate


def _sync(device: str) -> None:
    """Wait for queued GPU work (timings of asynchronous devices)."""
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


def _standin_rate(seconds: float, fast: bool) -> float:
    """Env steps per second of ``S3BeamNG-v0`` on the open stand-in (one car)."""
    import gymnasium as gym
    import numpy as np

    import gym_s3  # noqa: F401

    env = gym.make("S3BeamNG-v0", standin=True, standin_fast=fast)
    env.reset(seed=0)
    action = np.array([0.0, 0.3], dtype=np.float32)
    steps, began = 0, time.perf_counter()
    while time.perf_counter() - began < seconds:
        env.step(action)
        steps += 1
    rate = steps / (time.perf_counter() - began)
    env.close()
    return rate


def _vehicle_model_rate(n: int, seconds: float) -> float:
    """Control steps per second of the stand-in's vehicle model batched in-process.

    N cars of :class:`~gym_s3.vehicle.VehicleModel` (eager, float32, 50 physics substeps per
    20 Hz control step) on a uniform-friction road with slalom controls: the high-fidelity
    physics alone, without server, protocol, sensors or task layer.
    """
    import math

    from gym_s3.tracks.friction import UniformFriction
    from gym_s3.vehicle import VehicleModel

    model = VehicleModel(dtype=torch.float32)
    friction = UniformFriction(torch.full((n,), 1.0))
    state = model.initial_state(torch.zeros(n), 0.0, 0.0, speed=15.0)
    phase = torch.linspace(0.0, math.pi, n)

    def controls(k: int) -> torch.Tensor:
        steer = 0.3 * torch.sin(2 * math.pi * 0.5 * k * 0.05 + phase)
        return torch.stack([steer, torch.full_like(steer, 0.4), torch.zeros_like(steer)], -1)

    for k in range(2):  # warm-up
        state = model.step(state, controls(k), friction)
    steps, began = 0, time.perf_counter()
    while time.perf_counter() - began < seconds:
        state = model.step(state, controls(steps), friction)
        steps += 1
    return steps * n / (time.perf_counter() - began)


def stage_speedup(folder: Path, config: PipelineConfig, distill: StageOutcome) -> dict[str, Any]:
    """Throughput of the distilled env per backend against two high-fidelity denominators.

    (a) ``standin_steps_per_s``: one car of ``S3BeamNG-v0`` driven through beamngpy over TCP on
    the stand-in (the BeamNG-like path a user of the real simulator has); (b)
    ``vehicle_model_steps_per_s``: the stand-in's vehicle model batched in-process at the same N
    (the physics alone, as fast as the high-fidelity model itself can go). Both in this run.
    """
    standin = _standin_rate(max(config.speedup_seconds, 2.0), config.fast_standin)
    model = _vehicle_model_rate(config.speedup_num_envs, config.speedup_seconds)
    rows = {}
    for name, ckpt in distill.result["checkpoints"].items():
        rate = _distilled_rate(name, ckpt, config.speedup_num_envs, config.speedup_seconds,
                               config.device)  # fmt: skip
        rows[name] = {"steps_per_s": rate, "speedup": rate / standin,
                      "speedup_vs_model": rate / model}  # fmt: skip
    result = {"num_envs": config.speedup_num_envs, "standin_steps_per_s": standin,
              "standin_compiled": config.fast_standin, "vehicle_model_steps_per_s": model,
              "device": config.device, "threads": torch.get_num_threads(),
              "backends": rows}  # fmt: skip
    (folder / "speedup.json").write_text(json.dumps(result, indent=2) + "\n")
    return result
