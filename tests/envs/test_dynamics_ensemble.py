"""``S3Distilled-v0`` driven by an ensemble of dynamics models (``checkpoint=[...]``).

Each model moves its own contiguous share of the cars in every episode
(:class:`gym_s3.sources.EnsembleCars`). These tests drive the same seeded cars through an
ensemble and through its members alone and compare the trajectories row by row.
"""

from __future__ import annotations

import pytest
import torch

from gym_s3 import dynamics
from gym_s3.envs.config import DistilledConfig
from gym_s3.envs.core import DistilledCore
from gym_s3.errors import ConfigError
from gym_s3.sources import EnsembleCars

N = 24
TRACK = "procedural:3"


def _core(checkpoint, *, num_envs: int = N, subset_resets: bool = True, **kw) -> DistilledCore:
    kw.setdefault("backend", "ddm")
    config = DistilledConfig.from_kwargs(checkpoint=checkpoint, tracks=TRACK, seed=5, **kw)
    core = DistilledCore(num_envs, config)
    core._subset_resets = subset_resets  # False: the accelerators' masked path, here on the CPU
    return core


def _actions(steps: int, n: int = N) -> torch.Tensor:
    """``(steps, n, 2)`` seeded actions: steering waves and full throttle or braking."""
    g = torch.Generator().manual_seed(3)
    steer = 0.6 * torch.sin(torch.arange(steps)[:, None] / 7.0 + torch.rand(n, generator=g) * 6)
    accel = torch.where(torch.rand(steps, n, generator=g) < 0.8, 1.0, -0.6)
    return torch.stack([steer, accel], dim=-1)


def _drive(
    core: DistilledCore,
    actions: torch.Tensor,
    *,
    autoreset: bool,
    resets: dict[int, list[int]] | None = None,
) -> torch.Tensor:
    """``(steps, N, 4)`` x, y, yaw, v_long after each step.

    With ``autoreset`` finished cars start new episodes; without, every car keeps driving its
    first episode's physics past its end (the core does not stop it), the same in every run.
    ``resets`` maps a step to the cars reset after it (the same draws in every run).
    """
    core.reset()
    trace = []
    for k, act in enumerate(actions):
        out = core.step(act)
        ego = core.ego()
        trace.append(torch.stack([ego.x, ego.y, ego.yaw, ego.v_long], dim=-1))
        if autoreset:
            core.autoreset(out.done)
        if resets and k in resets:
            mask = torch.zeros(core.num_envs, dtype=torch.bool)
            mask[resets[k]] = True
            core.reset(mask)
    return torch.stack(trace)


@pytest.fixture(scope="module")
def other_ddm(tmp_path_factory) -> str:
    """A second ``ddm`` checkpoint: the shipped one with its weights perturbed by 20 %."""
    model = dynamics.load("ddm")
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(1 + 0.2 * torch.randn(p.shape, generator=g))
    stem = tmp_path_factory.mktemp("ensemble") / "ddm_other"
    dynamics.save(model, stem)
    return str(stem)


def test_copies_of_one_model_drive_like_the_model_through_resets():
    """K copies of one checkpoint = that checkpoint alone, through partial resets, both paths."""
    actions = _actions(160)
    alone = _drive(_core(None), actions, autoreset=True)
    for subset in (True, False):
        core = _core(["ddm", "ddm", "ddm"], subset_resets=subset)
        assert isinstance(core.cars, EnsembleCars) and core.cars.bounds == [0, 8, 16, 24]
        together = _drive(core, actions, autoreset=True)
        bounds = core.cars.bounds
        for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
            assert bool((core.episode_id[lo:hi] > 0).any())  # every model's cars reset mid-run
        # float32 products of 8 rows and of 24 differ in their last bits on some CPUs (Intel
        # Xeon: up to 1.2e-4 m after 160 steps at 150 m); a car in the wrong row is metres off
        torch.testing.assert_close(together, alone, rtol=1e-6, atol=1e-4)


def test_each_member_moves_its_own_share_of_the_cars(other_ddm):
    """Rows 0..N/2-1 follow the first model alone, rows N/2.. the second, step for step.

    Partial resets that straddle the two slices (indexed on the CPU, masked as on accelerators)
    must start each car from its own model's state.
    """
    actions = _actions(40)
    resets = {9: [3, 11, 12, 20], 24: [0, 12, 13, 23]}
    half = N // 2  # float32 round-off only: batches of 12 and 24 rows sum in other orders
    for subset in (True, False):
        kw = {"autoreset": False, "resets": resets}
        first = _drive(_core(None, subset_resets=subset), actions, **kw)
        second = _drive(_core(other_ddm, subset_resets=subset), actions, **kw)
        assert (first - second).abs().amax() > 0.5  # the two models do differ [m, rad, m/s]
        core = _core(["ddm", other_ddm], subset_resets=subset)
        together = _drive(core, actions, **kw)
        torch.testing.assert_close(together[:, :half], first[:, :half], rtol=1e-6, atol=1e-4)
        torch.testing.assert_close(together[:, half:], second[:, half:], rtol=1e-6, atol=1e-4)


def test_learned_caches_of_an_ensemble_concatenate():
    """``dytr`` carries attention caches: an ensemble's state and car tensors hold every car's."""
    alone = _core(None, num_envs=6, backend="dytr")
    pair = _core(["dytr", "dytr"], num_envs=6, backend="dytr")
    actions = _actions(12, n=6)
    _drive(alone, actions, autoreset=True, resets={5: [1, 4]})
    _drive(pair, actions, autoreset=True, resets={5: [1, 4]})
    mine, theirs = pair.car_tensors(), alone.car_tensors()
    assert mine.keys() == theirs.keys() and any(k.startswith("state.extra.") for k in mine)
    for key, value in mine.items():
        torch.testing.assert_close(value, theirs[key], rtol=1e-5, atol=1e-4, msg=key)
    assert pair.bytes_per_env() == alone.bytes_per_env()


def test_gym_make_takes_a_list_of_checkpoints(other_ddm):
    """``gym.make`` passes the list on; the core holds every model, the first as ``backend``."""
    import gymnasium as gym

    env = gym.make("S3Distilled-v0", checkpoint=["ddm", other_ddm], num_envs=4, tracks=TRACK)
    core = env.unwrapped.core
    assert core.config.ensemble_size == 2 and core.config.backend == "ddm"
    assert len(core.backends) == 2 and core.backends[0] is core.backend
    env.reset(seed=0)
    env.step(torch.zeros(4, 2).numpy())
    env.close()


def test_bad_ensembles_are_refused_with_the_reason(tmp_path):
    """Too few cars, an empty list, two architectures, or an ensemble where one model is needed."""
    with pytest.raises(ConfigError, match="pass num_envs >= 3"):
        _core(["ddm", "ddm", "ddm"], num_envs=2)
    with pytest.raises(ConfigError, match="share one backend; model 1 is the shipped 'dytr'"):
        _core(["ddm", "dytr"])
    with pytest.raises(ConfigError, match="empty list"):
        DistilledConfig(checkpoint=[])
    wider = dynamics.make("ddm", hidden=32)
    stem = tmp_path / "wider"
    dynamics.save(wider, stem)
    with pytest.raises(ConfigError, match="share one architecture"):
        _core(["ddm", str(stem)])
    from gym_s3.envs.backends import resolve_backend

    with pytest.raises(ConfigError, match="one dynamics model"):
        resolve_backend(DistilledConfig(checkpoint=["ddm", "ddm"]))


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_compiled_ensemble_matches_eager(other_ddm):
    """``compile=True`` steps the members' slices in one graph: same cars as eager, resets too."""
    actions = _actions(60)
    eager = _drive(_core(["ddm", other_ddm]), actions, autoreset=True)
    compiled = _drive(_core(["ddm", other_ddm], compile=True), actions, autoreset=True)
    torch.testing.assert_close(compiled, eager, rtol=1e-4, atol=1e-3)


def test_frames_name_the_ensemble():
    """Rendered frames say that several models drive the cars (one model: the backend alone)."""
    from gym_s3.envs.faces import view_title

    ensemble = DistilledConfig.from_kwargs(backend="ddm", checkpoint=["ddm", "ddm", "ddm"])
    assert view_title(ensemble) == "S3Distilled-v0 / ddm (ensemble of 3 models)"
    assert view_title(DistilledConfig.from_kwargs(backend="ddm")) == "S3Distilled-v0 / ddm"
