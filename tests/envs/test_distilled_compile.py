"""``compile=True`` runs the same core through torch.compile (slow: compiles for ~30-60 s)."""

from __future__ import annotations

import warnings

import pytest
import torch

from gym_s3.envs.distilled import S3DistilledBatchEnv

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def test_compiled_core_matches_eager(small_kwargs, driver):
    """Compiled and eager envs agree (to float tolerance) through steps and autoresets.

    Compiling warns about no cached function (the spec's tables are plain dicts; checked: with
    ``functools.cache`` back on ``observation_features`` dynamo warns on the first step).
    """
    kw = dict(num_envs=32, max_episode_steps=10, seed=3, **small_kwargs)
    eager = S3DistilledBatchEnv(**kw)
    compiled = S3DistilledBatchEnv(compile=True, **kw)
    obs_e, _ = eager.reset(seed=3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch._dynamo.utils.warn_once_cache.clear()  # dynamo warns once per process otherwise
        obs_c, _ = compiled.reset(seed=3)
        compiled.step(torch.zeros(32, 2))
    cached = [str(w.message) for w in caught if "lru_cache" in str(w.message)]
    assert not cached, cached
    compiled = S3DistilledBatchEnv(compile=True, **kw)
    obs_c, _ = compiled.reset(seed=3)
    assert torch.allclose(obs_e, obs_c, atol=1e-4)
    resets = 0
    for _ in range(25):
        action = driver(obs_e)
        obs_e, rew_e, term_e, trunc_e, _ = eager.step(action)
        obs_c, rew_c, term_c, trunc_c, _ = compiled.step(action)
        assert torch.equal(term_e, term_c) and torch.equal(trunc_e, trunc_c)
        assert torch.allclose(rew_e, rew_c, atol=1e-4)
        assert torch.allclose(obs_e, obs_c, atol=1e-3, rtol=1e-4)
        resets += int((term_e | trunc_e).sum())
    assert resets >= 32
