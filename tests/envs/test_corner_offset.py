"""``corner_offset_mean`` moves inside when a driver steers more into corners, wide when less.

The scripted expert (pure pursuit with yaw-rate feedback, noise off) drives dry Putnam in
``S3Distilled-v0`` (ddm backend) three times from the same 16 starts: as it is, with 30 % more
than the kinematic steering angle of the path's curvature added (over-steering into every corner,
what a policy with a biased mean action does) and with 30 % of it taken away. The metric must
order them: over-steering reads more inside than the expert, under-steering wider, each by at
least 3 cm (measured: 5 cm). Reading the curvature's sign the wrong way round reverses
the order.
"""

from __future__ import annotations

import torch

from gym_s3.envs.distilled import S3DistilledBatchEnv
from gym_s3.tracks.layouts import LayoutConfig, PatchConfig
from policies.expert_driver import expert_controller

#: dry asphalt, no patches: the offset comes from the driver alone
_DRY = LayoutConfig(base=("asphalt",), patches=PatchConfig(count=(0, 0)))
_CARS, _STEPS = 16, 600


def _corner_offset(extra_steer: float) -> float:
    """Mean ``corner_offset_mean`` [m] of the cars after ``_STEPS`` steps (none may end).

    ``extra_steer`` is the share of the path's kinematic steering angle added to the expert's.
    """
    expert = expert_controller(seed=0, n=_CARS)
    cfg = expert.config
    env = S3DistilledBatchEnv(num_envs=_CARS, backend="ddm", tracks=("putnam",), layout=_DRY,
                              max_episode_steps=2 * _STEPS, seed=0)  # fmt: skip
    try:
        env.reset(seed=0)
        core = env.core
        for _ in range(_STEPS):
            ego = core.state.ego()
            road = core.task.measure(ego)
            action = expert.act(ego, road, core.task)
            kinematic = torch.atan(cfg.wheelbase_m * road.curvature) / cfg.max_steer_rad
            action[:, 0] = action[:, 0] - extra_steer * kinematic  # + steers right
            _, _, terminated, truncated, _ = env.step(action)
            assert not bool((terminated | truncated).any())
        stats = core.task.stats
        assert float(stats.corner_steps.min()) > 50  # every car met corners
        return float(stats.summary()["corner_offset_mean"].mean())
    finally:
        env.close()


def test_steering_more_into_corners_reads_inside_and_less_reads_wide():
    """Over-steer > expert + 3 cm > under-steer + 6 cm."""
    over, plain, under = _corner_offset(0.3), _corner_offset(0.0), _corner_offset(-0.3)
    assert over > plain + 0.03, (over, plain)
    assert under < plain - 0.03, (under, plain)
