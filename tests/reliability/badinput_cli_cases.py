"""Catalogue cases of the ``s3`` command line: missing paths, unwritable outputs, bad numbers.

Most cases run ``gym_s3.cli.main`` in this process (the exact code of the ``s3`` entry point);
one runs ``python -m gym_s3.cli`` as a child process to cover the real process boundary. Every
case must end with exit code 2 and a one-line error on stderr, never a traceback (checked by
``test_bad_inputs``).
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

from badinput_file_cases import write_log
from badinput_support import Case, CliExit, run_cli, run_cli_process, unwritable_dir

from policies.checkpoint import shipped_policy

WRITABLE = r"writable"


def _small_dataset(work: Path) -> Path:
    """Two synthetic sessions of one episode each; returns the folder."""
    folder = work / "dataset"
    write_log(folder, "s0")
    write_log(folder, "s1")
    return folder


def _generate(work: Path, *options: str, out: Path | None = None) -> None:
    """``s3 data generate --preset tiny`` with extra options."""
    target = out if out is not None else work / "out"
    run_cli(["data", "generate", "--out", str(target), "--preset", "tiny", "--no-progress",
             *options])  # fmt: skip


def _distill(work: Path, *options: str, dataset: Path | None = None, out: Path | None = None):
    """``s3 distill train --backend bicycle`` with extra options."""
    data = dataset if dataset is not None else _small_dataset(work)
    target = out if out is not None else work / "ckpt"
    run_cli(["distill", "train", "--backend", "bicycle", "--dataset", str(data), "--out",
             str(target), "--epochs", "1", "--no-progress", *options])  # fmt: skip


def _train(work: Path, *options: str, out: Path | None = None) -> None:
    """``s3 train --preset tiny`` with extra options."""
    target = out if out is not None else work / "run"
    run_cli(["train", "--preset", "tiny", "--out", str(target), "--no-progress", *options])


def _collect(work: Path, *options: str, out: Path | None = None) -> None:
    """``s3 collect --device expert --standin`` for one simulated second, with extra options."""
    target = out if out is not None else work / "sessions"
    run_cli(["collect", "--device", "expert", "--standin", "--out", str(target), "--duration",
             "1", "--no-hud", *options])  # fmt: skip


def _foreign_policy(work: Path) -> None:
    """``s3 evaluate`` given another tool's JSON file as the policy."""
    path = work / "policy.json"
    path.write_text(json.dumps({"model": "resnet50"}))
    run_cli(["evaluate", str(path), "--out", str(work / "eval")])


def _evaluate_shipped(work: Path, *options: str) -> None:
    """``s3 evaluate`` of the shipped DDM policy with extra options (two steps per lap)."""
    run_cli(["evaluate", str(shipped_policy("ddm")), "--surfaces", "asphalt", "--ice-patches",
             "0", "--max-steps", "2", "--out", str(work / "eval"), *options])  # fmt: skip


def _scorecard_bad_policy(work: Path) -> None:
    """``s3 scorecard`` with ``--policy`` lacking ``=RESULTS_JSON``."""
    report = work / "evaluation.json"
    report.write_text(json.dumps({"results": {}}))
    run_cli(["scorecard", str(report), "--policy", "ddm"])


def _validate_foreign(work: Path) -> None:
    """``python -m gym_s3.cli data validate`` on a CSV export named ``.parquet``."""
    path = work / "export.parquet"
    path.write_text("t,x\n0,0\n")
    run_cli_process(["data", "validate", str(path)])


def _standin_on_busy_port(work: Path) -> None:
    """``s3 standin`` on a port another socket listens on."""
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        run_cli(["standin", "--port", str(busy.getsockname()[1])])


CASES: tuple[Case, ...] = (
    Case("cli-summary-missing-path", lambda w: run_cli(["data", "summary", str(w / "missing")]),
         CliExit, r"missing: no such log file", r"check the path"),
    Case("cli-validate-foreign-file-process", _validate_foreign,
         CliExit, r"INVALID .*export\.parquet: not a readable Parquet file",
         r"regenerate or delete the file"),
    Case("cli-generate-unwritable-out", lambda w: _generate(w, out=unwritable_dir(w)),
         CliExit, r"cannot write .*out|read_only", WRITABLE),
    Case("cli-generate-negative-cars", lambda w: _generate(w, "--cars", "-3"),
         CliExit, r"cars must be >= 1, got -3", r"must be >= 1"),
    Case("cli-generate-nan-seconds", lambda w: _generate(w, "--episode-seconds", "nan"),
         CliExit, r"episode_s .*got nan", r"at least 0\.1 s"),
    Case("cli-generate-not-a-number", lambda w: _generate(w, "--cars", "many"),
         CliExit, r"argument --cars: invalid int value: 'many'", r"usage: s3 data generate"),
    Case("cli-distill-missing-dataset",
         lambda w: _distill(w, dataset=w / "no_dataset"),
         CliExit, r"no_dataset: no such log file", r"check the path"),
    Case("cli-distill-nan-lr", lambda w: _distill(w, "--lr", "nan"),
         CliExit, r"lr must be > 0, got nan", r"must be > 0"),
    Case("cli-distill-evaluate-too-short",
         lambda w: run_cli(["distill", "evaluate", "--checkpoint", "bicycle", "--dataset",
                            str(_small_dataset(w)), "--out", str(w / "eval"), "--no-plots"]),
         CliExit, r"no window|too short|fits", r"longer|more episodes|shorter"),
    Case("cli-distill-unwritable-out", lambda w: _distill(w, out=unwritable_dir(w)),
         CliExit, r"cannot write|not a directory|permission", WRITABLE),
    Case("cli-train-nan-lr", lambda w: _train(w, "--lr", "nan"),
         CliExit, r"got lr nan", r"must be positive"),
    Case("cli-train-negative-envs", lambda w: _train(w, "--num-envs", "-4"),
         CliExit, r"num_envs must be >= 1, got -4", r"must be >= 1"),
    Case("cli-train-unwritable-out", lambda w: _train(w, out=unwritable_dir(w)),
         CliExit, r"cannot write|not a directory|permission", WRITABLE),
    Case("cli-evaluate-foreign-policy", _foreign_policy,
         CliExit, r"policy\.json is not a sim2sim2sim checkpoint sidecar",
         r"Pass a checkpoint written by"),
    Case("cli-evaluate-distilled-unknown-backend",
         lambda w: _evaluate_shipped(w, "--env", "distilled", "--backend", "gru"),
         CliExit, r"unknown dynamics backend 'gru'", r"valid backends: bicycle"),
    Case("cli-evaluate-unknown-label", lambda w: _evaluate_shipped(w, "--labels", "hard_breaking"),
         CliExit, r"unknown scenario label 'hard_breaking'", r"valid labels: hard_braking"),
    Case("cli-train-missing-logs", lambda w: _train(w, "--logs", str(w / "nologs")),
         CliExit, r"nologs: no such log file", r"check the path"),
    Case("cli-pipeline-unknown-device",
         lambda w: run_cli(["pipeline", "--out", str(w / "p"), "--device", "gpu"]),
         CliExit, r"unknown torch device 'gpu'", r"use cpu, cuda"),
    Case("cli-scorecard-missing-report",
         lambda w: run_cli(["scorecard", str(w / "evaluation.json")]),
         CliExit, r"evaluation\.json does not exist", r"run the stage that writes it"),
    Case("cli-scorecard-bad-policy-option", _scorecard_bad_policy,
         CliExit, r"--policy expects BACKEND=RESULTS_JSON, got 'ddm'", r"BACKEND=RESULTS_JSON"),
    Case("cli-tracks-unknown", lambda w: run_cli(["tracks", "show", "nosuch"]),
         CliExit, r"unknown track 'nosuch'", r"valid names: putnam"),
    Case("cli-tracks-nan-spacing", lambda w: run_cli(["tracks", "show", "putnam", "--ds", "nan"]),
         CliExit, r"ds must be positive, got nan", r"must be positive"),
    Case("cli-tracks-unwritable-plot",
         lambda w: run_cli(["tracks", "show", "town:0", "--plot", f"{unwritable_dir(w)}/t.png"]),
         CliExit, r"cannot save the plot to", WRITABLE),
    Case("cli-standin-bad-port", lambda w: run_cli(["standin", "--port", "99999"]),
         CliExit, r"port must be in \[0, 65535\].*got 99999", r"0 = any free port"),
    Case("cli-standin-port-in-use", _standin_on_busy_port,
         CliExit, r"cannot listen on 127\.0\.0\.1:\d+ .*Address already in use",
         r"Choose another --port"),
    Case("cli-collect-nan-duration", lambda w: _collect(w, "--duration", "nan"),
         CliExit, r"got duration_s nan", r"need duration_s >= 0"),
    Case("cli-collect-nan-timeout", lambda w: _collect(w, "--timeout", "nan"),
         CliExit, r"socket_timeout .*got nan", r"finite number of seconds > 0"),
    Case("cli-collect-unwritable-out", lambda w: _collect(w, out=unwritable_dir(w)),
         CliExit, r"cannot (write|create)", WRITABLE, timeout_s=120.0),
)  # fmt: skip

#: ids of cases expected to fail (none at present)
XFAIL: dict = {}
