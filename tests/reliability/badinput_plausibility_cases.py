"""Catalogue cases of plausibility and bounded resources (issue 23).

Numbers that enter from checkpoint sidecars, policy sidecars, driving logs and configs must lie
in their physical range (the error names the field, the value and the range); NaN weights are
refused at load; a sidecar asking for a network far larger than its weights is refused before
anything is allocated; counts and file sizes are bounded, devices are not read, and JSON nested
200,000 levels deep is refused cleanly. Each case has a short timeout: a case that allocates or
reads without bound fails by time.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import torch
from badinput_cli_cases import _collect
from badinput_file_cases import episode_columns, write_log
from badinput_support import Case, CliExit, run_cli

from gym_s3 import checkpoints, dynamics
from gym_s3.data.files import read_episode
from gym_s3.errors import CheckpointError, ConfigError, DataFormatError
from gym_s3.task_config import TaskConfig
from policies.checkpoint import load_policy, shipped_policy

RANGE = r"outside its physical range"
SIDECAR_FIX = r"restore it or re-train"
LOG_FIX = r"re-record or regenerate the episode"


def _dynamics_copy(work: Path, backend: str) -> Path:
    """Copy the shipped ``backend`` checkpoint into ``work/ckpt``; returns the stem."""
    dynamics.save(dynamics.load(backend), work / "ckpt")
    return work / "ckpt"


def _edit(stem: Path, edit: Any) -> None:
    """Apply ``edit(sidecar_dict)`` to a checkpoint's JSON sidecar."""
    sidecar = checkpoints.checkpoint_paths(stem)[1]
    data = json.loads(sidecar.read_text())
    edit(data)
    sidecar.write_text(json.dumps(data))


def _load_edited_config(work: Path, backend: str, **config: Any) -> None:
    """Load a ``backend`` checkpoint whose sidecar config has ``config`` fields changed."""
    stem = _dynamics_copy(work, backend)
    _edit(stem, lambda d: d["meta"]["config"].update(config))
    dynamics.load(stem)


def _zero_history_std(work: Path) -> None:
    """Load a ddm checkpoint whose history standard deviations are 0 (divides by zero)."""
    stem = _dynamics_copy(work, "ddm")
    _edit(stem, lambda d: d["meta"]["normalization"].update(history_std=[0.0] * 9))
    dynamics.load(stem)


def _nan_weights(work: Path) -> None:
    """Load a ddm checkpoint saved with one NaN in its weights."""
    model = dynamics.load("ddm")
    with torch.no_grad():
        next(p for p in model.parameters() if p.dim() == 2)[0, 0] = float("nan")
    dynamics.save(model, work / "ckpt")
    dynamics.load(work / "ckpt")


def _policy_copy(work: Path, name: str = "bicycle") -> Path:
    """Copy the shipped policy ``name`` into ``work``; returns its sidecar."""
    source = shipped_policy(name)
    for suffix in (".json", ".safetensors"):
        (work / f"policy{suffix}").write_bytes(source.with_suffix(suffix).read_bytes())
    return work / "policy.json"


def _policy_nan_weights(work: Path) -> None:
    """Load a policy whose weights hold a NaN (Policy.act would return NaN)."""
    sidecar = _policy_copy(work)
    ckpt = checkpoints.load(sidecar)
    tensors = dict(ckpt.tensors)
    name = next(k for k, v in tensors.items() if v.is_floating_point() and v.dim() == 2)
    tensors[name] = tensors[name].clone()
    tensors[name][0, 0] = float("nan")
    checkpoints.save(work / "bad", tensors, ckpt.meta, kind=ckpt.kind)
    load_policy(work / "bad.json")


def _policy_hidden(work: Path, hidden: list[int]) -> None:
    """Load a policy whose sidecar claims hidden layers ``hidden``."""
    sidecar = _policy_copy(work)
    data = json.loads(sidecar.read_text())
    data["meta"]["hidden"] = hidden
    sidecar.write_text(json.dumps(data))
    load_policy(sidecar)


def _deep_sidecar(work: Path) -> None:
    """Load a sidecar nested 200,000 levels deep."""
    (work / "deep.json").write_text("[" * 200_000 + "]" * 200_000)
    dynamics.load(work / "deep")


def _log(work: Path, column: str, value: float, row: int = 5) -> None:
    """Read a log whose ``column`` holds ``value`` at ``row``."""
    values = episode_columns()[column].copy()
    values[row] = value
    read_episode(write_log(work, **{column: values}))


def _long_time_step(work: Path) -> None:
    """Read a log with a 10^6 s gap between two rows."""
    t = episode_columns()["t"].astype(np.float64)
    t[10:] += 1e6
    read_episode(write_log(work, t=t.astype(np.float32)))


def _cli_track(name: str) -> None:
    """``s3 tracks show NAME``."""
    run_cli(["tracks", "show", name])


CASES: tuple[Case, ...] = (
    Case("ckpt-sidecar-dt-one", lambda w: _load_edited_config(w, "ddm", dt=1.0),
         CheckpointError, rf"dt = 1\.0 is {RANGE} \[0\.005, 0\.2\] s", SIDECAR_FIX),
    Case("ckpt-sidecar-dt-nan", lambda w: _load_edited_config(w, "bicycle", dt=float("nan")),
         CheckpointError, rf"dt = nan is {RANGE}", SIDECAR_FIX),
    Case("ckpt-sidecar-dt-negative", lambda w: _load_edited_config(w, "ddm", dt=-0.05),
         CheckpointError, rf"dt = -0\.05 is {RANGE}", SIDECAR_FIX),
    Case("ckpt-sidecar-mass-one", lambda w: _load_edited_config(w, "ddm", mass=1),
         CheckpointError, rf"mass = 1 is {RANGE} \[100, 50000\] kg", SIDECAR_FIX),
    Case("ckpt-sidecar-substeps-one", lambda w: _load_edited_config(w, "ddm", substeps=1),
         CheckpointError, rf"substeps = 1 is {RANGE} \[2, 64\]", SIDECAR_FIX),
    Case("ckpt-sidecar-nested-config", lambda w: _load_edited_config(w, "dytr", residual_bound=-1),
         CheckpointError, rf"residual_bound = -1 is {RANGE}", SIDECAR_FIX),
    Case("ckpt-sidecar-history-std-zero", _zero_history_std,
         CheckpointError, rf"normalization\.history_std\[0\] = 0\.0 is {RANGE}", SIDECAR_FIX),
    Case("ckpt-nan-weights", _nan_weights,
         CheckpointError, r"holds 1 NaN or infinite values", r"earlier checkpoint|re-train"),
    Case("ckpt-ddm-hidden-20000", lambda w: _load_edited_config(w, "ddm", hidden=20000),
         CheckpointError, rf"hidden = 20000 is {RANGE} \[1, 4096\]", SIDECAR_FIX,
         timeout_s=10.0),
    Case("ckpt-ddm-hidden-larger-than-weights",
         lambda w: _load_edited_config(w, "ddm", hidden=4000),
         CheckpointError, r"shape mismatches", r"re-train it or pass the matching config",
         timeout_s=10.0),
    Case("ckpt-deep-json-sidecar", _deep_sidecar,
         CheckpointError, r"deep\.json: JSON nested too deeply", r"re-save the checkpoint"),
    Case("policy-nan-weights", _policy_nan_weights,
         CheckpointError, r"NaN or infinite values", r"earlier checkpoint|re-train"),
    Case("policy-hidden-20000", lambda w: _policy_hidden(w, [20000, 20000]),
         CheckpointError, rf"hidden\[0\] = 20000 is {RANGE} \[1, 4096\]", SIDECAR_FIX,
         timeout_s=10.0),
    Case("policy-hidden-larger-than-weights", lambda w: _policy_hidden(w, [4000, 4000]),
         CheckpointError, r"shape mismatches", r"re-train it", timeout_s=10.0),
    Case("log-v-long-1e30", lambda w: _log(w, "v_long", 1e30),
         DataFormatError, rf"column 'v_long' = 1e\+30 at row 5 is {RANGE} \[-100, 150\] m/s",
         LOG_FIX),
    Case("log-x-3e38", lambda w: _log(w, "x", 3e38),
         DataFormatError, rf"column 'x' = 3e\+38 at row 5 is {RANGE}", LOG_FIX),
    Case("log-mu-negative", lambda w: _log(w, "mu_fl", -5.0),
         DataFormatError, rf"column 'mu_fl' = -5 at row 5 is {RANGE} \[0, 3\]", LOG_FIX),
    Case("log-steer-1e6", lambda w: _log(w, "steer", 1e6),
         DataFormatError, rf"column 'steer' = 1e\+06 at row 5 is {RANGE}", LOG_FIX),
    Case("log-time-step-1e6", _long_time_step,
         DataFormatError, r"time step 1e\+06 s before row 10 is outside its range", LOG_FIX),
    Case("task-nan-off-track-margin", lambda w: TaskConfig(off_track_margin_m=float("nan")),
         ConfigError, rf"TaskConfig: off_track_margin_m = nan is {RANGE} \[0, 100\] m",
         r"pass a value inside the range"),
    Case("cli-collect-100000-ice-patches", lambda w: _collect(w, "--ice-patches", "100000"),
         CliExit, r"patch count 100000 is more than 200", r"use at most 200", timeout_s=20.0),
    Case("cli-tracks-dev-zero", lambda w: _cli_track("file:/dev/zero"),
         CliExit, r"/dev/zero is not a regular file", r"give the path of a track CSV",
         timeout_s=10.0),
    Case("cli-tracks-negative-procedural-seed", lambda w: _cli_track("procedural:-1"),
         CliExit, r"track 'procedural:-1': the seed must be an integer in \[0, 2\*\*63\)",
         r"e\.g\. procedural:0"),
)  # fmt: skip
