"""Settings of ``s3 pipeline``: :class:`PipelineConfig` and the presets quick, full and tiny."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from gym_s3.errors import ConfigError
from policies.checkpoint import SHIPPED_POLICIES

__all__ = ["BACKENDS", "POLICIES", "PRESETS", "VALIDATION_SIMULATORS", "PipelineConfig", "preset"]

BACKENDS: tuple[str, ...] = ("bicycle", "ddm", "trans", "dytr")
POLICIES: tuple[str, ...] = SHIPPED_POLICIES


#: How the report and the evaluation tables name where the validation laps ran, per
#: ``PipelineConfig.eval_simulator``: ``(section heading, figure captions and table titles)``.
VALIDATION_SIMULATORS: dict[str, tuple[str, str]] = {
    "standin": ("S3BeamNG-v0 (open stand-in)", "S3BeamNG-v0 on the open stand-in"),
    "model": (
        "the open stand-in's vehicle model (batched in-process)",
        "the open stand-in's vehicle model, batched in-process",
    ),
}


@dataclass(frozen=True)
class PipelineConfig:
    """Settings of one pipeline run.

    Attributes:
        seed: seed of every stage.
        data_preset: ``s3 data generate`` preset.
        data_overrides: fields of the data preset to replace (e.g. ``{"waves": 1}``).
        distill_backends: backends trained in this run (the rest use shipped checkpoints).
        distill_overrides: training settings applied to every distilled backend (e.g. epochs).
        open_loop_horizons: horizons of the open-loop evaluation [steps of 50 ms].
        policy_backends: policies trained in this run (the rest use shipped policies).
        ppo_preset_overrides: PPO settings applied to every trained policy.
        eval_policies: policies evaluated in the stand-in.
        eval_surfaces: base surfaces of the evaluation laps.
        eval_ice_patches: ice-patch counts of the evaluation laps.
        eval_max_steps: cap on the steps of each evaluation run (None: full lap).
        eval_seeds: patch-placement seeds of the laps with ice patches (one run each); laps
            without patches are deterministic and run once. The scorecard's confidence
            intervals come from these runs.
        gif_every: keep a GIF frame every this many steps of the evaluation runs (``standin``).
        eval_simulator: where the evaluation laps run: ``"standin"`` (``S3BeamNG-v0`` through
            the beamngpy client and the open stand-in server, one lap after another, with GIFs)
            or ``"model"`` (every lap of every policy one car of one batch of the stand-in's
            vehicle model in-process: the same physics and laps, no GIFs, tens of times faster).
        fast_standin: compiled float32 stand-in physics for evaluation and the speed-up baseline
            (one-off compilation of up to a minute, then about 10x faster).
        speedup_num_envs: cars of the distilled-env throughput measurement.
        speedup_seconds: measuring time per backend [s].
        rounds: policy-in-the-loop rounds after the first pass (``s3 pipeline --rounds K``):
            drive the policies with action noise in the high-fidelity model, add the logs,
            re-distil the trained backends, retrain the policies, evaluate and measure the gap.
        rollout_noise: std of the Gaussian action noise of the round rollouts.
        rollout_seeds: noise seeds of the round rollouts (one wave of cars each).
        rollout_overrides: data-preset fields of the round rollouts (``cars``, ``episode_s``);
            tracks, surfaces and patch layouts are the data preset's.
        rollout_simulator: where the round rollouts run (:data:`policies.rollouts.SIMULATORS`):
            ``model`` (the batched vehicle model, about 50x faster at 64 cars), ``standin``
            (the stand-in server through beamngpy, one car at a time) or ``beamng``
            (BeamNG.tech).
        rollout_sim_options: the BeamNG.tech connection of ``rollout_simulator="beamng"``
            (``host``, ``port``, ``home``, ``launch``, ``level``, ``vehicle_model``,
            ``socket_timeout``).
        round_distill_overrides: training settings of the re-distillation in a round (few
            epochs), applied over ``distill_overrides``.
        device: torch device of distillation, PPO and the distilled-env throughput (``"cuda"``
            for the ``full`` preset on a GPU); the stand-in physics always runs on the CPU.
    """

    seed: int = 0
    data_preset: str = "default"
    data_overrides: dict[str, Any] = field(default_factory=dict)
    distill_backends: tuple[str, ...] = BACKENDS
    distill_overrides: dict[str, Any] = field(default_factory=dict)
    open_loop_horizons: tuple[int, ...] = (1, 5, 20, 60)
    policy_backends: tuple[str, ...] = POLICIES
    ppo_preset_overrides: dict[str, Any] = field(default_factory=dict)
    eval_policies: tuple[str, ...] = POLICIES
    eval_surfaces: tuple[str, ...] = ("asphalt", "asphalt_wet", "gravel", "snow", "ice")
    eval_ice_patches: tuple[int, ...] = (0, 4)
    eval_max_steps: int | None = None
    eval_seeds: tuple[int, ...] = (0, 1, 2)
    gif_every: int = 4
    eval_simulator: str = "standin"
    fast_standin: bool = True
    speedup_num_envs: int = 4096
    speedup_seconds: float = 5.0
    rounds: int = 0
    rollout_noise: float = 0.1
    rollout_seeds: tuple[int, ...] = (1, 2)
    rollout_overrides: dict[str, Any] = field(default_factory=dict)
    rollout_simulator: str = "model"
    rollout_sim_options: dict[str, Any] = field(default_factory=dict)
    round_distill_overrides: dict[str, Any] = field(default_factory=dict)
    device: str = "cpu"

    def __post_init__(self) -> None:
        import torch

        try:
            device = torch.device(self.device)
        except (RuntimeError, TypeError) as exc:
            msg = f"unknown torch device '{self.device}' (use cpu, cuda, cuda:1)"
            raise ConfigError(msg) from exc
        if device.type == "cuda" and not torch.cuda.is_available():
            raise ConfigError(
                f"device '{self.device}' asked for, but this torch build sees no CUDA GPU; "
                "install a CUDA build of torch or use --device cpu"
            )
        if self.eval_simulator not in VALIDATION_SIMULATORS:
            raise ConfigError(
                f"eval_simulator must be 'standin' or 'model', got {self.eval_simulator!r}"
            )
        if self.rounds < 0 or not self.rollout_noise >= 0 or not self.rollout_seeds:
            raise ConfigError(
                f"rounds must be >= 0 (got {self.rounds}), rollout_noise >= 0 (got "
                f"{self.rollout_noise}) and rollout_seeds non-empty (got {self.rollout_seeds})"
            )
        from policies.rollouts import SIMULATORS

        if self.rollout_simulator not in SIMULATORS:
            raise ConfigError(
                f"unknown rollout simulator '{self.rollout_simulator}'; valid: {SIMULATORS}"
            )
        for name in (*self.distill_backends,):
            if name not in BACKENDS:
                raise ConfigError(f"unknown backend '{name}' to distil; valid: {BACKENDS}")
        for name in (*self.policy_backends, *self.eval_policies):
            if name not in POLICIES:
                raise ConfigError(f"unknown policy '{name}'; valid: {POLICIES}")

    def to_json(self) -> dict[str, Any]:
        """JSON-ready settings."""
        return json.loads(json.dumps(asdict(self), default=list))


#: How long the ``quick`` preset takes, as ``s3 pipeline --help`` and the README state it.
QUICK_DURATION = (
    "about 7-11 minutes on a 2-core CPU: 5 for the PPO time budget, about 1 for laps of five "
    "policies beside the scripted expert in the batched vehicle model"
)

#: ``quick`` (default): :data:`QUICK_DURATION`. It generates a small dataset, fits the
#: bicycle and trains a short DDM, trains one short PPO policy on the DDM and uses the shipped
#: checkpoints for everything else; evaluation drives the first 40 s of a lap on asphalt with and
#: without ice patches. ``full``: everything from scratch with the shipped-checkpoint recipes and
#: full laps on every surface; meant for a GPU or a long CPU run.
PRESETS: dict[str, PipelineConfig] = {
    "quick": PipelineConfig(
        data_overrides={"cars": 128, "waves": 1, "episode_s": 30.0},
        distill_backends=("bicycle", "ddm"),
        distill_overrides={"epochs": 4, "batches_per_epoch": 150},
        policy_backends=("ddm",),
        # a 5-minute budget needs sample efficiency: 4 minibatches of 8192 per epoch, 4 epochs
        # (16 gradient steps per 32k-frame batch instead of 6) and lr 1e-3: against lr 3e-4 with
        # the same minibatches (3-minute runs, busy machine) mean reward 0.12 vs 0.05 per step at
        # 0.8 M frames, closed-loop speed error 5.6 m/s after 0.85 M frames vs 6.4 after 1.6 M
        ppo_preset_overrides={
            "time_budget_s": 300.0,
            "total_frames": 24_000_000,  # the learning-rate schedule the 5-min run was tuned on
            "num_envs": 1024,
            "minibatch_size": 8192,
            "epochs": 4,
            "lr": 1e-3,
            "eval_every": 0,
            "checkpoint_every": 0,
        },  # fmt: skip
        eval_surfaces=("asphalt",),
        eval_ice_patches=(0, 4),
        eval_max_steps=800,
        eval_simulator="model",
        gif_every=4,
        speedup_num_envs=4096,
        speedup_seconds=3.0,
        rollout_overrides={"cars": 128, "episode_s": 30.0},
        round_distill_overrides={"epochs": 2},
    ),
    "full": PipelineConfig(),
    # seconds, for the end-to-end test
    "tiny": PipelineConfig(
        data_preset="tiny",
        distill_backends=("bicycle",),
        distill_overrides={"epochs": 1, "batches_per_epoch": 5},
        open_loop_horizons=(1, 5, 20),
        policy_backends=("bicycle",),
        ppo_preset_overrides={
            "num_envs": 64,
            "rollout_steps": 8,
            "total_frames": 1024,
            "minibatch_size": 256,
            "epochs": 1,
            "hidden": (16, 16),
            "tracks": ("putnam",),
            "layouts_per_track": 1,
            "eval_every": 0,
            "checkpoint_every": 0,
        },  # fmt: skip
        eval_policies=("bicycle",),
        eval_surfaces=("asphalt",),
        eval_ice_patches=(2,),
        eval_max_steps=40,
        eval_seeds=(0, 1),
        gif_every=10,
        fast_standin=False,
        speedup_num_envs=256,
        speedup_seconds=0.5,
        rollout_seeds=(1,),
        rollout_overrides={"cars": 8},
    ),
}


def preset(name: str, **overrides: Any) -> PipelineConfig:
    """A pipeline preset with some fields replaced (``None`` values are ignored)."""
    if name not in PRESETS:
        raise ConfigError(f"unknown pipeline preset '{name}'; valid: {', '.join(PRESETS)}")
    return replace(PRESETS[name], **{k: v for k, v in overrides.items() if v is not None})
