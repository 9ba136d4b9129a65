"""``gym_s3`` stands alone: it works with the applications unimportable.

With ``policies`` and ``wheel_collector`` blocked, ``gym_s3`` imports, builds its envs, and ``s3``
offers the library's subcommands with a note naming what is missing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: Run in a fresh interpreter where importing an application raises ModuleNotFoundError.
SCRIPT = r"""
import importlib.abc, json, sys

class Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in ("policies", "wheel_collector"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, Blocker())
import gym_s3, gym_s3.cli, gym_s3.data.generate
import gymnasium as gym
import torch
torch.set_num_threads(1)

parser = gym_s3.cli.build_parser()
commands = sorted(parser._subparsers._group_actions[0].choices)
env = gym.make("S3Distilled-v0", num_envs=2, backend="bicycle", tracks=("putnam",),
               layouts_per_track=1)
obs, _ = env.reset(seed=0)
obs, reward, terminated, truncated, info = env.step(torch.zeros(2, 2).numpy())
expert = gym_s3.data.generate.GenerateConfig().expert  # the expert's settings are library code
apps = sorted(m for m in sys.modules if m.partition(".")[0] in ("policies", "wheel_collector"))
print(json.dumps({"commands": commands, "epilog": parser.epilog, "obs": list(obs.shape),
                  "expert": type(expert).__module__, "apps": apps}))
"""


def test_library_imports_and_runs_without_the_applications() -> None:
    """Import, ``s3 --help`` parser and ``gym.make("S3Distilled-v0")`` with both apps blocked."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                         env=env, cwd=ROOT, timeout=240)  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["apps"] == []
    assert result["obs"][0] == 2
    assert result["expert"] == "gym_s3.drivers.expert_config"
    assert {"data", "distill", "tracks"} <= set(result["commands"])
    assert "collect" not in result["commands"] and "train" not in result["commands"]
    assert "policies" in result["epilog"] and "wheel_collector" in result["epilog"]


def test_s3_offers_the_application_commands_when_installed() -> None:
    """With the applications present, ``s3`` lists their subcommands and no note."""
    from gym_s3.cli import build_parser

    parser = build_parser()
    commands = set(parser._subparsers._group_actions[0].choices)
    assert {"collect", "train", "pipeline", "data", "distill"} <= commands
    assert parser.epilog is None
