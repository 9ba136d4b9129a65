"""Policy rollouts in the high-fidelity simulator: driving logs for policy-in-the-loop distillation.

``s3 rollouts POLICY`` drives a trained policy, with Gaussian exploration noise on its actions,
through the same episode loop as ``s3 data generate`` (task + source of cars + driver +
recorder) and writes the same episode files, manifest and labels. The expert's logs only cover
the states the expert visits; a policy visits others (late braking on ice, sliding after a patch,
recoveries), and that is where a distilled model is wrong. Adding these logs to the dataset and
re-distilling is one round of ``s3 pipeline --rounds K``.

Simulators (``--simulator``):

* ``model`` (default): the high-fidelity vehicle model of the open stand-in, batched in-process
  (``VehicleModelCars``: ``--cars`` cars at once, one wave per noise seed; the same physics the
  stand-in server steps, about 50x faster at 64 cars than driving it over TCP);
* ``standin``: the open stand-in server over TCP through the real ``beamngpy`` client
  (``S3BeamNG-v0``), one car at a time, every step through the recorder of ``s3 collect``;
* ``beamng``: BeamNG.tech at ``--host/--port`` the same way (:mod:`policies.rollouts_beamng`).

Every episode file names its simulator: ``meta.source`` is ``standin-batched``,
``standin-server`` or ``beamng``; ``meta.device`` is the driver ``policy:<name>``; the manifest
has ``simulator`` and ``source``.

Noise: ``a = clip(policy(obs) + sigma * N(0, I), -1, 1)``, drawn from one CPU generator per wave
(``model``: seeded by that wave's noise seed) or per episode (``standin``/``beamng``); the
clipped action is what the car receives and what is recorded.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gym_s3.errors import ConfigError
from gym_s3.task import TrackingTask
from policies.checkpoint import SHIPPED_POLICIES, Policy, resolve_policy
from policies.lap_options import add_beamng_options, beamng_options
from policies.noise import NoisyPolicyDriver

__all__ = [
    "SIMULATORS",
    "NoisyPolicyDriver",
    "drive_policy",
    "policy_wave_driver",
    "register",
    "resolve_policy",
]

#: Where rollouts can run: the batched vehicle model, the stand-in server, BeamNG.tech.
SIMULATORS: tuple[str, ...] = ("model", "standin", "beamng")


def policy_wave_driver(name: str, policy: Policy, sigma: float, noise_seeds: Sequence[int]) -> Any:
    """The :class:`~gym_s3.data.generate.WaveDriver` of a policy: wave ``w`` uses seed ``w``."""
    from gym_s3.data.generate import WaveDriver

    seeds = [int(s) for s in noise_seeds]

    def make(n: int, task: TrackingTask, wave: int) -> NoisyPolicyDriver:
        return NoisyPolicyDriver(policy, sigma, seeds[wave])

    from gym_s3.data.generate import SIMULATOR

    extra = {"action_noise": float(sigma), "noise_seeds": seeds, "simulator": SIMULATOR,
             "policy_checkpoint": str(policy.path), "policy_backend": policy.backend}  # fmt: skip
    return WaveDriver(name=f"policy:{name}", obs_mode=policy.obs_mode, make=make, extra=extra,
                      session_prefix=f"pol-{name}-")  # fmt: skip


def drive_policy(
    policy: str,
    out: str | Path,
    *,
    sigma: float = 0.1,
    noise_seeds: Sequence[int] = (0,),
    seed: int = 0,
    simulator: str = "model",
    tag: str | None = None,
    fast: bool = False,
    sim_options: dict[str, Any] | None = None,
    progress: Any = None,
    **generate: Any,
) -> dict[str, Any]:
    """Drive ``policy`` with action noise and write a dataset to ``out``; returns its manifest.

    Args:
        policy: a shipped policy name or a checkpoint path.
        out: output folder (new or empty).
        sigma: action noise.
        noise_seeds: ``model``: one wave of cars per seed; otherwise one episode per variant
            (track x surface x layout) and seed.
        seed: seed of tracks, layouts and starts.
        simulator: one of :data:`SIMULATORS` (see the module docstring).
        tag: driver name in the logs (``policy:<tag>``; default: the shipped name or the
            checkpoint's file stem).
        fast: ``standin``: compiled float32 stand-in physics (a one-off compilation of up to
            a minute, then about 10x faster; default: the float64 eager reference physics).
        sim_options: ``beamng``: the BeamNG.tech connection (``host``, ``port``, ``home``,
            ``launch``, ``level``, ``vehicle_model``, ``socket_timeout``).
        progress: ``standin``/``beamng``: called after each episode with ``(done, total,
            manifest entry)``.
        **generate: :class:`~gym_s3.data.generate_config.GenerateConfig` fields (``tracks``,
            ``surfaces``, ``patches``, ``cars``, ``episode_s``, ...); the ``tiny`` preset's
            otherwise when ``preset`` is given, else the default preset's.
    """
    from gym_s3.data.generate import generate_dataset, preset

    if simulator not in SIMULATORS:
        raise ConfigError(
            f"unknown rollout simulator '{simulator}'; valid: {', '.join(SIMULATORS)}"
        )
    if sim_options and simulator != "beamng":
        raise ConfigError("BeamNG.tech connection options need simulator 'beamng'")
    if fast and simulator != "standin":
        raise ConfigError("fast (compiled) physics is an option of the stand-in server only")
    if not noise_seeds:
        raise ConfigError("give at least one noise seed (--seeds)")
    name, loaded = resolve_policy(policy)
    name = tag or name
    base = generate.pop("preset", "default")
    if simulator != "model":
        from policies.rollouts_beamng import drive_in_simulator

        return drive_in_simulator(name, loaded, out, preset(base, **generate), sigma=sigma,
                                  noise_seeds=noise_seeds, seed=seed,
                                  standin=simulator == "standin", fast=fast,
                                  sim_options=sim_options, preset_name=f"rollouts:{base}",
                                  progress=progress)  # fmt: skip
    config = preset(base, **{**generate, "waves": len(noise_seeds)})  # one wave per noise seed
    driver = policy_wave_driver(name, loaded, sigma, noise_seeds)
    return generate_dataset(out, config, seed, preset_name=f"rollouts:{base}", driver=driver)


# ---------------------------------------------------------------------------------- CLI
def register(subparsers: Any) -> None:
    """Add ``s3 rollouts`` (policy rollouts with exploration noise) to the ``s3`` parser."""
    p = subparsers.add_parser(
        "rollouts",
        help="drive a policy with action noise in the high-fidelity simulator (batched vehicle "
        "model, stand-in server or BeamNG.tech) and log it",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("policy", help=f"shipped policy ({', '.join(SHIPPED_POLICIES)}) or checkpoint")
    p.add_argument("--out", required=True, help="output folder of the logs (new or empty)")
    p.add_argument("--tracks", nargs="+", default=None,
                   help="tracks (putnam, procedural:SEED, town:SEED); default: the data preset's "
                        "Putnam Park + procedural circuits + town routes")  # fmt: skip
    p.add_argument(
        "--surfaces",
        nargs="+",
        default=None,
        help="base surfaces, each driven equally often (default: all)",
    )
    p.add_argument(
        "--ice-patches",
        nargs=2,
        type=int,
        default=None,
        metavar=("MIN", "MAX"),
        help="ice patches per layout, drawn in MIN..MAX (default: 1 6)",
    )
    p.add_argument(
        "--layouts", type=int, default=None, help="patch layouts per track and surface (default: 2)"
    )
    p.add_argument("--cars", type=int, default=None,
                   help="--simulator model only: cars per wave (default: 64); the standin and "
                   "beamng simulators drive one car at a time")  # fmt: skip
    p.add_argument(
        "--episode-s", type=float, default=60.0, help="longest episode [s] (default: 60)"
    )
    p.add_argument(
        "--action-noise",
        type=float,
        default=0.1,
        help="std of the Gaussian noise added to the actions in [-1, 1] (default 0.1)",
    )
    p.add_argument(
        "--seeds",
        nargs="+",
        type=int,
        default=[0],
        help="noise seeds: model: one wave of --cars cars each; standin/beamng: one episode per "
        "track x surface x layout each (default: 0)",
    )
    p.add_argument(
        "--seed", type=int, default=0, help="seed of tracks, patch layouts and starts (default: 0)"
    )
    p.add_argument(
        "--simulator",
        choices=SIMULATORS,
        default="model",
        help="model (default): the open stand-in's vehicle model, batched in-process (about 50x "
        "faster than the server at 64 cars); standin: the open stand-in server over TCP through "
        "beamngpy (S3BeamNG-v0), one car at a time; beamng: BeamNG.tech at --host/--port the "
        "same way",
    )
    p.add_argument(
        "--fast-standin",
        action="store_true",
        help="--simulator standin: compiled float32 physics (a one-off compilation of up to a "
        "minute, then about 10x faster; default: the float64 eager reference physics)",
    )
    add_beamng_options(p, when="with --simulator beamng")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    """``s3 rollouts``."""
    from gym_s3.data.generate import summary_line
    from gym_s3.tracks.layouts import PatchConfig

    sim_options = beamng_options(args, active=args.simulator == "beamng",
                                 how="--simulator beamng")  # fmt: skip
    if args.cars is not None and args.simulator != "model":
        raise ConfigError(f"--cars is for --simulator model; {args.simulator} drives one car")
    if args.fast_standin and args.simulator != "standin":
        raise ConfigError("--fast-standin needs --simulator standin")
    options: dict[str, Any] = {"cars": args.cars, "episode_s": args.episode_s,
                               "layouts_per_surface": args.layouts}  # fmt: skip
    if args.tracks:
        options["tracks"] = tuple(args.tracks)
    if args.surfaces:
        options["surfaces"] = tuple(args.surfaces)
    if args.ice_patches:
        options["patches"] = PatchConfig(count=tuple(args.ice_patches))
    if args.simulator == "model" and args.cars is None:
        options["cars"] = 64

    def episode_done(done: int, total: int, entry: dict[str, Any]) -> None:
        """One line per episode driven in the simulator."""
        print(f"  [{done}/{total}] {entry['track']} {entry['surface']}: {entry['rows']} rows, "
              f"{entry['end_reason']}", flush=True)  # fmt: skip

    manifest = drive_policy(args.policy, args.out, sigma=args.action_noise,
                            noise_seeds=args.seeds, seed=args.seed, simulator=args.simulator,
                            fast=args.fast_standin, sim_options=sim_options,
                            progress=episode_done, **options)  # fmt: skip
    where = manifest.get("simulator", "")
    rate = f", {manifest['steps_per_s']:.1f} steps/s" if manifest.get("steps_per_s") else ""
    print(f"{manifest['driver']} in {where}: {summary_line(manifest)}{rate} -> {args.out}")
    return 0
