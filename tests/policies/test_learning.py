"""PPO learns: ``s3 train`` on a small task beats untrained and random policies on a held-out track.

The run goes through the command line (``gym_s3.cli.main(["train", ...])``, the code path of
``s3 train``: preset, overrides, the TorchRL collector, GAE, the clipped PPO loss, the quick
evaluation and the saved checkpoint). It trains in the bicycle backend on Putnam Park (the
``tiny`` preset's track) and is judged on a procedural circuit it never saw, by the metrics of
:func:`policies.evaluate_distilled.evaluate_distilled` (one deterministic episode per car).

Measured with this seed (2026-12-03, 2-core machine, shared load): the trained policy reaches
a cross-track error of 0.60-0.72 m, a failure rate of 0.19-0.31 and a completion of 0.045
(seeds 0-2); the untrained policy 1.75 m / 0.75 / 0.027, a random policy about 2.1 m / 0.86 /
0.018. With the PPO objective negated, the reward negated or the advantages zeroed, training
ends at >= 1.78 m / >= 0.71 / <= 0.027 (each of those breakages fails this test), as it does
with GAE's bootstrap dropped (gamma 0 in GAE only: 2.22 m / 0.83 / 0.017) or the advantages
negated. Run time: 15 s for the test on the 2-core machine at load 1.2.
"""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("torchrl")

from torch_helpers import one_torch_thread  # noqa: E402

from gym_s3.cli import main  # noqa: E402
from policies.checkpoint import load_policy  # noqa: E402
from policies.config import preset  # noqa: E402
from policies.evaluate_distilled import evaluate_distilled  # noqa: E402
from policies.ppo import build_modules  # noqa: E402

pytestmark = pytest.mark.timeout(600)

#: ``s3 train`` overrides of the ``tiny`` preset: 24 iterations of 64 cars x 32 steps.
TRAIN = {"num-envs": 64, "rollout-steps": 32, "total-frames": 24 * 2048, "minibatch-size": 512,
         "epochs": 4, "lr": 1e-3, "max-episode-steps": 100, "eval-every": 24,
         "checkpoint-every": 0, "seed": 0}  # fmt: skip
#: The held-out task: a procedural circuit not among the training tracks.
HELD_OUT = {"backend": "bicycle", "tracks": ("procedural:100",), "layouts_per_track": 1,
            "max_episode_steps": 100}  # fmt: skip
#: What counts as having learned (trained vs untrained, see the module docstring).
MAX_CTE_M, MAX_FAILURE_RATE, MIN_COMPLETION = 1.1, 0.5, 0.036


def _held_out(act) -> dict[str, float]:
    """Mean metrics of 128 deterministic episodes on the held-out track (fixed scenarios)."""
    return evaluate_distilled(act, num_envs=128, seed=123, **HELD_OUT)


def _learned(m: dict[str, float]) -> bool:
    return (m["cte_mean"] < MAX_CTE_M and m["failure_rate"] < MAX_FAILURE_RATE
            and m["completion"] > MIN_COMPLETION)  # fmt: skip


@pytest.mark.parametrize("update_dtype", ["float32", "bfloat16"])
def test_s3_train_learns_to_track_a_held_out_track(tmp_path, update_dtype):
    """After 49k frames the policy tracks an unseen circuit; untrained and random ones do not.

    The same with the PPO epochs' hidden layers in bfloat16 (``--update-dtype bfloat16``).
    """
    argv = [
        "train",
        "--preset",
        "tiny",
        "--out",
        str(tmp_path),
        "--no-progress",
        "--update-dtype",
        update_dtype,
    ]
    for key, value in TRAIN.items():
        argv += [f"--{key}", str(value)]
    with one_torch_thread():
        assert main(argv) == 0
        trained = _held_out(load_policy(tmp_path / "policy_final").act)
        torch.manual_seed(0)
        untrained_net = build_modules(preset("tiny"))[0]
        untrained = _held_out(untrained_net.act)
        gen = torch.Generator().manual_seed(0)
        random = _held_out(lambda obs: torch.rand(obs.shape[0], 2, generator=gen) * 2 - 1)
    table = {"trained": trained, "untrained": untrained, "random": random}
    summary = {name: {k: round(m[k], 3) for k in ("cte_mean", "failure_rate", "completion")}
               for name, m in table.items()}  # fmt: skip
    print(summary)  # shown with pytest -s
    assert not _learned(untrained) and not _learned(random), summary
    assert _learned(trained), summary
    assert trained["cte_mean"] < 0.6 * untrained["cte_mean"], summary
