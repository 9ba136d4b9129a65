"""``s3 evaluate``: lap tables (and label sets) of one or several policies, with the expert's row.

Where the laps run:

* ``--simulator standin`` (default): ``S3BeamNG-v0`` through the real beamngpy client, one lap
  after another, on the open stand-in server; ``--simulator beamng`` (or ``--beamng``) the same
  in BeamNG.tech (:func:`policies.evaluate.evaluate_beamng`);
* ``--simulator model``: every lap one car of one batch of the stand-in's vehicle model,
  in-process (:mod:`policies.evaluate_model`): the same laps and physics, far faster;
* ``--env distilled``: ``S3Distilled-v0`` on a dynamics backend, every lap one car of one batch
  per backend (:func:`policies.evaluate_model.evaluate_model` with ``dynamics``; rows lap by lap,
  every driver of a lap together, as with ``--simulator model``); with
  ``--gif-every``, one lap after another in the env itself, which renders them
  (:func:`policies.evaluate_distilled.evaluate_distilled_laps`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from gym_s3.errors import ConfigError
from policies.lap_options import add_beamng_options, add_lap_options, beamng_options, csv_list

__all__ = ["parse_conditions", "register"]


def register(subparsers: Any) -> None:
    """Add ``s3 evaluate`` to the ``s3`` parser."""
    from gym_s3.scenarios import LABELS
    from policies.checkpoint import SHIPPED_POLICIES
    from policies.report import PLOT_CHOICES

    p = subparsers.add_parser(
        "evaluate",
        help="evaluate policies on laps in S3BeamNG-v0 (stand-in by default), the stand-in's "
        "vehicle model batched in-process, or S3Distilled-v0, and on labelled scenario sets",
        description="Drive laps of one or several tracks with trained policies on every requested "
        "surface and ice-patch count, in S3BeamNG-v0 (the open stand-in through beamngpy unless "
        "--beamng points at BeamNG.tech), in the stand-in's vehicle model batched in-process "
        "(--simulator model: the same laps and physics, every lap one car of one batch) or, with "
        "--env distilled, in S3Distilled-v0 on any backend (the same laps: same layouts, start "
        "and task). The scripted expert drives every lap too; each policy row gets its ratio to "
        "the expert. With --labels, also run episodes of the scenario pool filtered by each "
        "label. Writes a table, JSON, plots and optional GIFs.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("policy", nargs="+",
                   help=f"policies: shipped names ({', '.join(SHIPPED_POLICIES)}) or checkpoint "
                   "paths (.json sidecar or stem); several share one table")  # fmt: skip
    p.add_argument(
        "--env",
        choices=("beamng", "distilled"),
        default="beamng",
        help="where to drive the laps: the high-fidelity simulator or S3Distilled-v0",
    )
    p.add_argument(
        "--simulator",
        choices=("standin", "model", "beamng"),
        default="standin",
        help="with --env beamng: 'standin' drives S3BeamNG-v0 through the beamngpy client and "
        "the open stand-in server, one lap after another; 'model' drives every lap as one car "
        "of one batch of the stand-in's vehicle model in-process (the same physics: float32 "
        "through torch.compile, as the stand-in of this command); 'beamng' is BeamNG.tech at "
        "--host/--port through beamngpy (same as --beamng)",
    )
    p.add_argument(
        "--reference-physics",
        action="store_true",
        help="run the stand-in's physics (server or --simulator model) as the float64 eager "
        "reference (bitwise repeatable, several times slower) instead of float32 through "
        "torch.compile (a one-off compilation of about a minute per batch size, cached on disk)",
    )
    add_lap_options(p, surfaces="asphalt,asphalt_wet,gravel,snow,ice", ice_patches="0,4")
    p.add_argument(
        "--tracks",
        default=None,
        help="comma-separated tracks, each driven with every condition (replaces --track), e.g. "
        "putnam,procedural:201,procedural:202",
    )
    p.add_argument(
        "--conditions",
        default=None,
        help="comma-separated lap conditions SURFACE[+PATCHES], e.g. 'asphalt,ice,asphalt+6,"
        "asphalt>ice' (replaces every --surfaces x --ice-patches pair)",
    )
    p.add_argument("--no-laps", action="store_true", help="skip the laps (only the --labels sets)")
    p.add_argument(
        "--labels",
        default="",
        help="comma-separated scenario labels: episodes of the scenario pool filtered by each "
        f"label, in the env of --env ('all' for every label; valid: {', '.join(LABELS)})",
    )
    p.add_argument(
        "--episodes",
        type=int,
        default=None,
        help="episodes per label set [count] (default: 256 in S3Distilled-v0, run as one batch "
        "of cars; 8 in S3BeamNG-v0, run one after another)",
    )
    bng = add_beamng_options(p, when="with --beamng")
    bng.add_argument(
        "--beamng",
        action="store_true",
        help="drive in BeamNG.tech at --host/--port instead of the open stand-in",
    )
    p.add_argument(
        "--plots",
        choices=PLOT_CHOICES,
        default="all",
        help="which runs get a trajectory and an error plot (two PNGs per run and driver, about "
        "a second each on one core): all; failed: every driver's run of a lap that one driver did "
        "not complete; none (the table, JSON and GIFs are written either way)",
    )
    p.add_argument(
        "--no-expert",
        action="store_true",
        help="skip the scripted expert's reference laps (by default every lap table has the "
        "expert's row and each policy row its ratio to it)",
    )
    p.add_argument(
        "--gif-every",
        type=int,
        default=0,
        help="keep a GIF frame every N steps (0: no GIFs) [steps]",
    )
    p.add_argument("--out", type=Path, default=Path("runs/eval"), help="output folder")
    p.set_defaults(func=_run)


def parse_conditions(text: str) -> list[tuple[str, int]]:
    """``"asphalt,ice,asphalt+6,asphalt>ice"`` -> ``[(lap surface, ice patches), ...]``.

    Raises:
        ConfigError: an unknown surface or a patch count that is not an integer >= 0.
    """
    from gym_s3.tracks.lap_layouts import parse_lap_surface

    out = []
    for item in csv_list(text, str):
        surface, _, count = item.partition("+")
        parse_lap_surface(surface)
        if count and not (count.strip().isdigit()):
            raise ConfigError(f"--conditions: '{item}' needs SURFACE or SURFACE+PATCHES (>= 0)")
        out.append((surface.strip(), int(count) if count else 0))
    if not out:
        raise ConfigError("--conditions is empty; give e.g. 'asphalt,ice,asphalt+6'")
    return out


def _sim_options(args: argparse.Namespace) -> dict[str, Any]:
    """BeamNG.tech connection options (none for the stand-in)."""
    return beamng_options(args, active=args.beamng, how="--beamng")


def _check(args: argparse.Namespace, labels: list[str]) -> None:
    """Refuse contradictory options before anything is driven."""
    if args.no_laps and not labels:
        raise ConfigError("--no-laps leaves nothing to evaluate; pass --labels too")
    if args.beamng and args.env != "beamng":
        raise ConfigError("--beamng drives the laps in BeamNG.tech; it needs --env beamng")
    _sim_options(args)  # --launch / --home need --beamng
    if args.simulator == "model":
        clash = [o for o, on in (("--env distilled", args.env != "beamng"),
                                 ("--beamng", args.beamng), ("--labels", bool(labels)),
                                 ("--gif-every", args.gif_every > 0)) if on]  # fmt: skip
        if clash:
            raise ConfigError(
                f"--simulator model drives laps in the stand-in's vehicle model; it does not "
                f"take {', '.join(clash)} (drop them, or drop --simulator model)"
            )
    if args.episodes is not None and args.episodes < 1:
        raise ConfigError(f"--episodes must be >= 1, got {args.episodes}")
    if args.tracks and args.track != "putnam":
        raise ConfigError("give the tracks with --tracks or one track with --track, not both")


def _run(args: argparse.Namespace) -> int:
    """``s3 evaluate``."""
    from gym_s3.scenarios import LABELS, label_mask
    from policies.checkpoint import resolve_policy
    from policies.evaluate import compare_with_expert
    from policies.report import write_evaluation

    labels = list(LABELS) if args.labels.strip() == "all" else csv_list(args.labels, str)
    label_mask(labels)  # unknown labels fail before any lap is driven
    args.beamng = args.beamng or args.simulator == "beamng"
    _check(args, labels)
    if args.conditions:
        conditions = parse_conditions(args.conditions)
    else:
        conditions = [(s, p) for s in csv_list(args.surfaces, str)
                      for p in csv_list(args.ice_patches, int)]  # fmt: skip
    tracks = csv_list(args.tracks, str) if args.tracks else [args.track]
    named = [resolve_policy(str(p)) for p in args.policy]
    if len(named) == 1:
        named = [("policy", named[0][1])]
    elif len({n for n, _ in named}) != len(named):
        raise ConfigError(f"policy names must differ, got {[n for n, _ in named]}")
    if args.env == "distilled" and args.simulator != "model" and args.dynamics_checkpoint is None:
        for line in training_dynamics_notes(named, args.backend):
            print(line, file=sys.stderr)
    results = [] if args.no_laps else _laps(args, named, tracks, conditions)
    if labels:
        results += _label_sets(args, named, labels)
    who = ", ".join(f"{n if n != 'policy' else p.path} ({p.backend})" for n, p in named)
    where = f" in the {results[0].env}" if args.simulator == "model" and results else ""
    title = f"Polic{'y' if len(named) == 1 else 'ies'} {who}{where}"
    paths = write_evaluation(compare_with_expert(results), args.out, title=title, plots=args.plots)
    for path in paths:
        print(path)
    return 0


def training_dynamics_notes(named: list, backend: str | None) -> list[str]:
    """A note per policy that trained in other dynamics than the shipped model it is driven in.

    The lap tables in ``S3Distilled-v0`` drive one model, by default the backend's shipped one;
    a policy trained across an ensemble (the shipped ``ddm``: ``ddm:ice``) is told apart.
    """
    from gym_s3.dynamics.io import shipped_name
    from policies.checkpoint import training_dynamics

    notes = []
    for name, policy in named:
        trained = training_dynamics(policy.meta)
        if (backend or policy.backend) != policy.backend or trained in (None, (policy.backend,)):
            continue
        models = ", ".join(shipped_name(m) or m for m in trained)
        notes.append(f"note: {name} trained in {len(trained)} dynamics model(s) ({models}); these "
                     f"laps drive the shipped {policy.backend} model: `s3 gap` drives all of "
                     "them, --dynamics-checkpoint picks one")  # fmt: skip
    return notes


def _laps(args: argparse.Namespace, named: list, tracks: list[str],
          conditions: list[tuple[str, int]]) -> list:  # fmt: skip
    """The lap rows of every policy, and the expert's once per lap and environment.

    In ``S3Distilled-v0`` every backend is an environment of its own; ``--no-expert`` drops the
    expert's rows.
    """
    from policies.evaluate import evaluate_beamng
    from policies.evaluate_distilled import evaluate_distilled_laps
    from policies.evaluate_model import Lap, evaluate_model
    from policies.expert_driver import EXPERT

    common = dict(seed=args.seed, max_steps=args.max_steps, time_limit_s=args.time_limit)
    fast = not args.reference_physics
    laps = [Lap(t, s, p) for t in tracks for s, p in conditions]
    if args.simulator == "model":
        return evaluate_model(named, laps, expert=not args.no_expert, fast=fast, **common)
    if args.env == "distilled" and not args.gif_every:
        return _distilled_laps(args, named, laps, **common)
    surfaces = sorted({s for s, _ in conditions}, key=[s for s, _ in conditions].index)
    patches = sorted({p for _, p in conditions}, key=[p for _, p in conditions].index)
    product = len(conditions) == len(surfaces) * len(patches)
    groups = [(surfaces, patches)] if product else [([s], [p]) for s, p in conditions]
    sim = _sim_options(args)
    results = []
    # the expert once per environment: in S3Distilled-v0 every backend is one (its laps differ)
    envs = [(args.backend or p.backend) if args.env == "distilled" else "beamng" for _, p in named]
    with_expert = [not args.no_expert and env not in envs[:k] for k, env in enumerate(envs)]
    for track in tracks:
        for surf, pats in groups:
            for k, (name, policy) in enumerate(named):
                kw = dict(surfaces=surf, ice_patches=pats, track=track,
                          render_every=args.gif_every, expert=with_expert[k],
                          **common)  # fmt: skip
                if args.env == "beamng":
                    rows = evaluate_beamng(policy, standin=not args.beamng, fast=fast, **kw, **sim)
                else:
                    backend = args.backend or policy.backend
                    rows = evaluate_distilled_laps(policy, backend=backend,
                                                   checkpoint=args.dynamics_checkpoint,
                                                   **kw)  # fmt: skip
                for r in rows:
                    r.driver = r.driver if r.driver == EXPERT else name
                results += rows
    return results


def _distilled_laps(args: argparse.Namespace, named: list, laps: list, **common: Any) -> list:
    """Every lap in ``S3Distilled-v0``, one batch per backend, the expert in each (its own laps)."""
    from policies.evaluate_distilled import lap_backend
    from policies.evaluate_model import evaluate_model

    by_backend: dict[str, list] = {}
    for name, policy in named:
        by_backend.setdefault(args.backend or policy.backend, []).append((name, policy))
    results = []
    for backend, group in by_backend.items():
        results += evaluate_model(group, laps, expert=not args.no_expert,
                                  dynamics=lap_backend(backend, args.dynamics_checkpoint),
                                  **common)  # fmt: skip
    return results


def _label_sets(args: argparse.Namespace, named: list, labels: list[str]) -> list:
    """The label-set rows of every policy."""
    from policies.evaluate_distilled import evaluate_labels
    from policies.evaluate_labels import evaluate_beamng_labels

    beamng = args.env == "beamng"
    episodes = args.episodes if args.episodes is not None else 8 if beamng else 256
    sim = _sim_options(args)
    results = []
    for name, policy in named:
        if beamng:
            rows = evaluate_beamng_labels(policy, labels, episodes=episodes, seed=args.seed,
                                          standin=not args.beamng,
                                          fast=not args.reference_physics, **sim)  # fmt: skip
        else:
            rows = evaluate_labels(policy, labels, backend=args.backend or policy.backend,
                                   checkpoint=args.dynamics_checkpoint, num_envs=episodes,
                                   seed=args.seed)  # fmt: skip
        for r in rows:
            r.driver = name
        results += rows
    return results
