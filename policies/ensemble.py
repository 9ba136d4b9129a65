"""Policy ensembles: K trained policies combined into one checkpoint that acts with their mean.

``s3 ensemble A B C --out runs/ddm_ens`` writes one policy checkpoint holding every member's actor
and normaliser (:class:`~policies.networks.ActorEnsemble`); it loads with
:func:`~policies.checkpoint.load_policy` and drives every env, evaluation and GIF like a single
policy. Its deterministic action is ``tanh`` of the members' mean pre-squash mean (with
``--steer-members`` / ``--accel-members``, each action axis the mean of chosen members). The members
must share the observation mode, the dynamics backend and the network shape (an ensemble given as
a member contributes its members). The sidecar records the training settings the members share
under ``training`` and each member's own under ``member_training``, with the files they came from
(file name and SHA-256 of the weights) under ``member_sources``.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gym_s3 import checkpoints
from gym_s3.errors import CheckpointError, ConfigError
from policies.checkpoint import (
    SHIPPED_POLICIES,
    Policy,
    load_policy,
    resolve_policy,
    save_policy,
    shipped_policy,
)
from policies.networks import ActorEnsemble, ActorNet


def _members(policy: Policy) -> list[tuple[ActorNet, dict[str, Any], dict[str, Any]]]:
    """``(actor, training settings, source)`` of each actor in a policy (one unless an ensemble).

    A source is the checkpoint's file name and the SHA-256 of its weights file (no folder: it
    would name someone's disk; a shipped file may later be replaced, the hash still names the
    weights).
    """
    source: dict[str, Any] = {"file": None, "sha256": None}
    if policy.path is not None:
        source = checkpoints.source(policy.path)
    damaged = (f"{policy.path}: the sidecar was edited or damaged; restore it or combine the "
               "member checkpoints again")  # fmt: skip
    if not isinstance(policy.actor, ActorEnsemble):
        training = policy.meta.get("training", {})
        if not isinstance(training, dict):
            raise CheckpointError(f"{damaged} (its 'training' is not a mapping)")
        return [(policy.actor, dict(training), source)]
    k = len(policy.actor.members)
    trainings = policy.meta.get("member_training") or [{}] * k
    sources = policy.meta.get("member_sources") or [source] * k
    for name, records in (("member_training", trainings), ("member_sources", sources)):
        if not isinstance(records, list) or len(records) != k:
            raise CheckpointError(f"{damaged} ({k} members but '{name}' is not a list of {k})")
        if not all(isinstance(r, dict) for r in records):
            raise CheckpointError(f"{damaged} ('{name}' holds entries that are not mappings)")
    return list(zip(policy.actor.members, trainings, sources, strict=True))


def combine(
    policies: Sequence[Policy],
    members: Sequence[int] | None = None,
    *,
    steer_members: Sequence[int] | None = None,
    accel_members: Sequence[int] | None = None,
) -> tuple[ActorEnsemble, dict[str, Any], dict[str, Any]]:
    """The ensemble of ``policies`` and the sidecar records of its training.

    Args:
        policies: the policies; an ensemble contributes each of its members.
        members: indices into the list of all their actors, in order (0-based; the members of an
            ensemble in their stored order), to keep only those; ``None``: all.
        steer_members: indices into the ensemble's own members (after ``members``) whose mean
            steering it drives with; ``None``: all (the plain mean).
        accel_members: the same for the pedal axis.

    Returns:
        ``(actor, training, extra)``: the ensemble actor; the training settings every member
        shares (a setting that differs, such as ``seed``, is left out); and ``member_training``
        and ``member_sources``, one entry per member.

    Raises:
        ConfigError: fewer than two actors, members of different observation modes, backends
            or network shapes, the same member (same weights) given twice, or ``members``
            naming an actor that does not exist or one actor twice; an axis selection naming no
            member, a member that does not exist or one twice; a given ensemble that has
            per-axis weights itself.
        CheckpointError: an ensemble given as a member whose records do not match its actors.
    """
    modes = sorted({(p.obs_mode, p.backend, tuple(p.meta["hidden"])) for p in policies})
    if len(modes) > 1:
        raise ConfigError(
            "ensemble members must share the observation mode, backend and hidden widths; got "
            + "; ".join(f"{m} / {b} / {list(h)}" for m, b, h in modes)
            + ". Combine policies trained with the same preset (different seeds)."
        )
    weighted = [p for p in policies if getattr(p.actor, "axis_weights", None) is not None]
    if weighted:
        raise ConfigError(
            f"{weighted[0].path} weights its members per action axis; combine the policies it "
            "was made of instead (its sidecar's member_sources name them)"
        )
    members_all = [m for p in policies for m in _members(p)]
    chosen = range(len(members_all)) if members is None else list(members)
    bad = [i for i in chosen if not 0 <= i < len(members_all)]
    if bad or len(set(chosen)) != len(chosen):
        raise ConfigError(
            f"--members {' '.join(map(str, chosen))}: each index must name one of the "
            f"{len(members_all)} actors of the given policies (0 to {len(members_all) - 1}, an "
            "ensemble's members in their stored order), once"
        )
    members = [members_all[i] for i in chosen]
    if len(members) < 2:
        raise ConfigError(f"an ensemble needs at least two policies, got {len(members)} actor(s)")
    hashes = [s.get("sha256") for _, _, s in members if s.get("sha256")]
    repeated = sorted({h[:12] for h in hashes if hashes.count(h) > 1})
    actors = [a for a, _, _ in members]
    if repeated or len({id(a) for a in actors}) != len(actors):
        raise ConfigError(
            f"the same member was given twice (weights {', '.join(repeated) or 'in memory'}); "
            "an ensemble averages different seeds: list each checkpoint once (an ensemble given "
            "as a member already contributes all of its members)"
        )
    trainings = [t for _, t, _ in members]
    shared = {k: v for k, v in trainings[0].items() if all(t.get(k) == v for t in trainings[1:])}
    extra = {"member_training": trainings, "member_sources": [s for _, _, s in members]}
    weights = axis_weights(len(actors), steer_members, accel_members)
    return ActorEnsemble(actors, weights), shared, extra


def axis_weights(
    k: int, steer_members: Sequence[int] | None, accel_members: Sequence[int] | None
) -> list[list[float]] | None:
    """``(K, 2)`` per-axis weights: an equal share for each chosen member of an axis, 0 for others.

    ``None`` when neither axis names members (the plain mean, unchanged).

    Raises:
        ConfigError: an axis naming no member, a member outside ``0 .. K - 1`` or one twice.
    """
    if steer_members is None and accel_members is None:
        return None
    columns = []
    for option, chosen in (("--steer-members", steer_members), ("--accel-members", accel_members)):
        chosen = range(k) if chosen is None else list(chosen)
        if not chosen or len(set(chosen)) != len(chosen) or any(not 0 <= i < k for i in chosen):
            raise ConfigError(
                f"{option} {' '.join(map(str, chosen))}: name one or more of the ensemble's {k} "
                f"members (0 to {k - 1}, after --members), each once"
            )
        columns.append([1.0 / len(chosen) if i in chosen else 0.0 for i in range(k)])
    return [[steer, accel] for steer, accel in zip(*columns, strict=True)]


def write_ensemble(
    policies: Sequence[Policy],
    out: str | Path,
    members: Sequence[int] | None = None,
    *,
    steer_members: Sequence[int] | None = None,
    accel_members: Sequence[int] | None = None,
) -> Path:
    """Combine ``policies`` (:func:`combine`, same arguments) and write ``out`` (a stem)."""
    actor, training, extra = combine(
        policies, members, steer_members=steer_members, accel_members=accel_members
    )
    first = policies[0]
    return save_policy(out, actor, backend=first.backend, obs_mode=first.obs_mode,
                       training=training, extra=extra)  # fmt: skip


def register(subparsers: Any) -> None:
    """Add ``s3 ensemble`` to the ``s3`` command line."""
    p = subparsers.add_parser(
        "ensemble",
        help="combine trained policies (seeds of one preset) into one mean-action policy",
        description="Combine K trained policies into one policy checkpoint whose action is tanh "
        "of the members' mean pre-squash mean. The members must share the observation mode, "
        "the dynamics backend and the network shape; typically seeds of one preset "
        "(`s3 train --preset ddm --seed S`); an ensemble given as a POLICY contributes its "
        "members. The result loads and evaluates like any policy. The members are read before "
        "anything is written, so OUT may replace one of them (an existing OUT is overwritten).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("policies", nargs="+", metavar="POLICY",
                   help="member policies: checkpoint paths (stem, .json or .safetensors) or "
                   "shipped names")  # fmt: skip
    p.add_argument("--members", type=int, nargs="+", metavar="I", default=None,
                   help="keep only these actors: 0-based indices into all the POLICY arguments' "
                   "actors in order (an ensemble's members in their stored order, as its "
                   "sidecar's member_training lists them); e.g. `s3 ensemble dytr --members "
                   "3 4 5 --out taught` takes three members of the shipped dytr (default: "
                   "all)")  # fmt: skip
    p.add_argument("--steer-members", type=int, nargs="+", metavar="J", default=None,
                   help="steer with the mean of only these members: 0-based indices into the "
                   "ensemble's members (after --members); the pedals stay the mean of all unless "
                   "--accel-members is given; e.g. `s3 ensemble dytr --steer-members 3 4 5 "
                   "--out X6` steers with the shipped dytr's three taught members (default: "
                   "all)")  # fmt: skip
    p.add_argument("--accel-members", type=int, nargs="+", metavar="J", default=None,
                   help="the same for the pedal axis (throttle and brake) (default: "
                   "all)")  # fmt: skip
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--out", type=Path,
                       help="checkpoint stem to write (OUT.json + OUT.safetensors)")  # fmt: skip
    where.add_argument("--ship", choices=SHIPPED_POLICIES,
                       help="write it as this shipped policy of the package instead")  # fmt: skip
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    """``s3 ensemble``."""
    policies = [resolve_policy(name)[1] for name in args.policies]
    out = shipped_policy(args.ship).with_suffix("") if args.ship else args.out
    path = write_ensemble(policies, out, args.members, steer_members=args.steer_members,
                          accel_members=args.accel_members)  # fmt: skip
    written = load_policy(path)  # read back: the count is the file's, and the file loads
    count = len(written.actor.members) if isinstance(written.actor, ActorEnsemble) else 1
    axes = "".join(f", {axis} from members {' '.join(map(str, chosen))}"
                   for axis, chosen in (("steering", args.steer_members),
                                        ("pedals", args.accel_members)) if chosen)  # fmt: skip
    print(f"ensemble of {count} actors written to {path}{axes}")
    return 0
