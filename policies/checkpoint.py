"""Policy checkpoints and the inference-only policy used by evaluation.

A policy checkpoint is a :mod:`gym_s3.checkpoints` checkpoint of kind ``"policy"``: the actor
weights and the observation normaliser in safetensors, and in the JSON sidecar the spec version,
the backend it was trained on, the observation mode, the network shape and the training settings.
Loading needs neither TorchRL nor the training code.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

from gym_s3 import checkpoints
from gym_s3.errors import ActionError, CheckpointError, ConfigError
from gym_s3.plausibility import POLICY_BOUNDS, check_value
from gym_s3.spec import observation_size
from policies.networks import ActorEnsemble, ActorNet, RunningNorm, check_axis_weights

KIND = "policy"


def hidden_widths(actor: ActorNet) -> list[int]:
    """The hidden layer widths of an actor (``[64, 64]`` for the presets)."""
    return [m.out_features for m in actor.body if isinstance(m, torch.nn.Linear)][:-1]


def save_policy(
    path: str | os.PathLike[str],
    actor: ActorNet | ActorEnsemble,
    *,
    backend: str,
    obs_mode: str,
    training: dict[str, Any],
    extra: dict[str, Any] | None = None,
) -> Path:
    """Write a policy checkpoint (``<stem>.safetensors`` + ``<stem>.json``).

    An :class:`~policies.networks.ActorEnsemble` is written as one checkpoint whose sidecar
    records ``members`` (K) and, when set, its ``(K, 2)`` ``axis_weights``, and whose tensors are
    the members' (``members.<k>.<name>``).

    Raises:
        ConfigError: the members of an ensemble have different hidden widths.
    """
    members = list(actor.members) if isinstance(actor, ActorEnsemble) else [actor]
    widths = [hidden_widths(m) for m in members]
    if any(w != widths[0] for w in widths):
        raise ConfigError(
            f"ensemble members have hidden widths {widths}; combine actors of one network shape"
        )
    meta: dict[str, Any] = {
        "backend": backend,
        "obs_mode": obs_mode,
        "obs_size": observation_size(obs_mode),
        "hidden": widths[0],
        "training": training,
    }
    if isinstance(actor, ActorEnsemble):
        meta["members"] = len(members)
    meta.update(extra or {})
    if isinstance(actor, ActorEnsemble) and actor.axis_weights is not None:
        meta["axis_weights"] = actor.axis_weights.cpu().tolist()  # the actor's own, always
    tensors = {k: v for k, v in actor.state_dict().items()}
    return checkpoints.save(path, tensors, meta, kind=KIND)


@dataclass
class Policy:
    """A trained policy for inference: ``act(obs) -> action`` in ``[-1, 1]^2``.

    Attributes:
        actor: the actor network (with its normaliser).
        backend: the dynamics backend it was trained in.
        obs_mode: observation mode it expects.
        meta: the checkpoint metadata.
        path: the checkpoint sidecar path.
    """

    actor: ActorNet | ActorEnsemble
    backend: str
    obs_mode: str
    meta: dict[str, Any]
    path: Path | None = None

    @torch.no_grad()
    def act(self, obs: Tensor | np.ndarray) -> Tensor | np.ndarray:
        """Deterministic action for ``(F,)`` or ``(N, F)`` observations (numpy in, numpy out)."""
        is_np = isinstance(obs, np.ndarray)
        x = torch.as_tensor(obs, dtype=torch.float32)
        size = self.meta["obs_size"]
        if x.shape[-1] != size:
            raise ActionError(
                f"policy {self.path} expects observations with {size} features "
                f"(obs_mode '{self.obs_mode}'), got shape {tuple(x.shape)}; build the env with "
                f"obs_mode='{self.obs_mode}'."
            )
        device = next(self.actor.parameters()).device
        out = self.actor.act(x.to(device))
        return out.cpu().numpy() if is_np else out


def init_actor_from(
    actor: ActorNet, path: str | os.PathLike[str], *, obs_mode: str, hidden: Sequence[int]
) -> None:
    """Load the actor and observation normaliser of the policy at ``path`` into ``actor``.

    The start of a fine-tune (``PPOConfig.init_policy``): the normaliser is shared with the
    critic, so a fresh critic sees the same scaling (a privileged critic's own normaliser starts
    empty and learns the scaling from the first batch on).

    Raises:
        ConfigError: the checkpoint is an ensemble, or its observation mode or hidden widths
            differ from the run's.
    """
    policy = load_policy(path)
    if isinstance(policy.actor, ActorEnsemble):
        raise ConfigError(
            f"init_policy {path} is an ensemble of {len(policy.actor.members)} actors; fine-tune "
            "one of its members (the checkpoints it was combined from) instead"
        )
    if policy.obs_mode != obs_mode or policy.meta["hidden"] != list(hidden):
        raise ConfigError(
            f"init_policy {path} has obs_mode '{policy.obs_mode}' and hidden "
            f"{policy.meta['hidden']}, the run has '{obs_mode}' and {list(hidden)}; start from a "
            "policy of the same observation mode and network shape (or drop --init-policy)"
        )
    actor.load_state_dict(policy.actor.state_dict())


#: Folder of the policies shipped with the package (``s3 train --preset NAME --ship``).
POLICY_ASSETS = Path(str(resources.files("policies") / "assets"))

#: Names of the shipped policies: one per dynamics backend, plus ``oracle`` (dytr, oracle obs).
SHIPPED_POLICIES: tuple[str, ...] = ("bicycle", "ddm", "trans", "dytr", "oracle")


def shipped_policy(name: str) -> Path:
    """Path of the shipped policy checkpoint ``name`` (one of :data:`SHIPPED_POLICIES`)."""
    if name not in SHIPPED_POLICIES:
        raise ConfigError(f"no shipped policy '{name}'; shipped: {', '.join(SHIPPED_POLICIES)}")
    return POLICY_ASSETS / f"{name}.json"


def training_dynamics(meta: dict[str, Any]) -> tuple[str, ...] | None:
    """The dynamics checkpoints a policy was trained in, where they can be found; else ``None``.

    Each member's record (``member_training``, or ``training`` for one network) names its models
    by content (``dynamics_sources``: weights SHA-256, found among the shipped checkpoints by
    :func:`gym_s3.dynamics.io.find_shipped`, else at the recorded paths if the files there still
    have those hashes) or, in older records, by path only (``dynamics_checkpoint`` and
    ``dynamics_ensemble``; ``None`` and no ensemble: the shipped default of its backend).
    ``None`` when a model is neither shipped nor on this disk as trained, or when the members
    trained in different models (no one distilled env is theirs).

    Returns:
        Checkpoint stems (a backend's shipped default by the backend's name, however its record
        names it), in training order: one for a single model, several for an ensemble.
    """
    from gym_s3 import dynamics
    from gym_s3.dynamics.io import default_checkpoint, expand_checkpoints, find_shipped

    def name(stem: Path) -> str:  # a backend's shipped default by its name, as older records do
        return stem.name if stem == default_checkpoint(stem.name) else str(stem)

    def by_path(record: dict[str, Any]) -> tuple[str, ...] | None:
        first = record.get("dynamics_checkpoint")
        paths = expand_checkpoints((first or record.get("backend") or meta["backend"],
                                    *(record.get("dynamics_ensemble") or ())))  # fmt: skip
        known = dynamics.backend_names()
        if not all(p in known or checkpoints.checkpoint_paths(p)[1].is_file() for p in paths):
            return None
        return paths

    def models(record: dict[str, Any]) -> tuple[str, ...] | None:
        sources = record.get("dynamics_sources")
        if not sources:
            return by_path(record)
        found = [find_shipped(src["sha256"]) if src.get("sha256") else None for src in sources]
        if all(found):
            return tuple(name(f) for f in found)
        paths = by_path(record)  # models of one's own: at their recorded paths, if unchanged
        if paths is None or len(paths) != len(sources):
            return None
        same = all(dynamics.source(p)["sha256"] == src.get("sha256")
                   for p, src in zip(paths, sources, strict=True))  # fmt: skip
        return paths if same else None

    records = meta.get("member_training") or [meta.get("training") or {}]
    found = {models(record) for record in records}
    return found.pop() if len(found) == 1 else None


def resolve_policy(name_or_path: str) -> tuple[str, Policy]:
    """``(tag name, policy)`` of a shipped policy name or a checkpoint path (stem or either file).

    Raises:
        ConfigError: neither a shipped name nor a checkpoint with a sidecar; lists the names.
    """
    path = shipped_policy(name_or_path) if name_or_path in SHIPPED_POLICIES else name_or_path
    if not checkpoints.checkpoint_paths(path)[1].is_file():
        raise ConfigError(
            f"no policy checkpoint '{name_or_path}'; give a shipped name "
            f"({', '.join(SHIPPED_POLICIES)}) or the path of a checkpoint (.json sidecar)"
        )
    name = name_or_path if name_or_path in SHIPPED_POLICIES else Path(path).stem
    return name, load_policy(path)


def _check_shape_fields(meta: dict, path: Path) -> None:
    """Refuse an implausible ``obs_size``, ``hidden`` or ``members`` before anything is built."""
    where, fix = f"policy {path}", "the sidecar was edited or damaged; restore it or re-train it"
    hidden = meta["hidden"]
    if not isinstance(hidden, list) or not 1 <= len(hidden) <= 16:
        raise CheckpointError(
            f"{where}: hidden = {hidden!r} is not a list of 1 to 16 widths; {fix}"
        )
    fields = [("obs_size", meta["obs_size"])] + [(f"hidden[{i}]", h) for i, h in enumerate(hidden)]
    if "members" in meta:
        fields.append(("members", meta["members"]))
    for field, value in fields:
        check_value(field, value, POLICY_BOUNDS[field.split("[")[0]], where=where, fix=fix,
                    error=CheckpointError)  # fmt: skip
        if not isinstance(value, int) or isinstance(value, bool):  # 3.0 passes the range check
            raise CheckpointError(f"{where}: {field} = {value!r} is not a whole number; {fix}")


def _checked_axis_weights(meta: dict, path: Path) -> list[list[float]] | None:
    """The sidecar's per-axis ensemble weights (``None``: a plain mean), refused if implausible."""
    if "axis_weights" not in meta:
        return None
    weights = meta["axis_weights"]
    problem = "" if "members" in meta else "a single policy has no members to weight"
    if not problem:
        try:
            tensor = torch.tensor(weights, dtype=torch.float32, device="cpu")
        except (TypeError, ValueError):
            problem = "not a list of [steer, accel] rows of numbers"
        else:
            problem = check_axis_weights(tensor, meta["members"])
    if problem:
        raise CheckpointError(
            f"policy {path}: axis_weights = {weights!r}: {problem}; the sidecar was edited or "
            "damaged; restore it or combine the member checkpoints again"
        )
    return weights


def load_policy(path: str | os.PathLike[str], *, device: torch.device | str = "cpu") -> Policy:
    """Load a policy checkpoint written by :func:`save_policy` (strict, no pickle).

    Raises:
        CheckpointError: a damaged, foreign, wrong-kind or wrong-spec checkpoint, or weights that
            do not fit the recorded network shape.
    """
    ckpt = checkpoints.load(path, kind=KIND, device=device)
    meta = ckpt.meta
    for key in ("backend", "obs_mode", "obs_size", "hidden"):
        if key not in meta:
            raise CheckpointError(f"{ckpt.path} lacks '{key}' in its metadata; re-save the policy")
    if meta["obs_size"] != observation_size(meta["obs_mode"]):
        raise CheckpointError(
            f"{ckpt.path} was made for {meta['obs_size']} observation features but mode "
            f"'{meta['obs_mode']}' has {observation_size(meta['obs_mode'])}; re-train the policy."
        )
    _check_shape_fields(meta, ckpt.path)

    def one() -> ActorNet:
        return ActorNet(RunningNorm(meta["obs_size"]), meta["obs_size"], meta["hidden"])

    axis_weights = _checked_axis_weights(meta, ckpt.path)

    def build() -> ActorNet | ActorEnsemble:
        if "members" not in meta:
            return one()
        return ActorEnsemble([one() for _ in range(meta["members"])], axis_weights)

    actor = checkpoints.build_checked(build, ckpt.tensors, f"policy {ckpt.path}")
    actor.to(device).eval()
    return Policy(actor=actor, backend=meta["backend"], obs_mode=meta["obs_mode"], meta=meta,
                  path=ckpt.path)  # fmt: skip
