"""The one thread rule of the env, the trainer and the pipeline (gym_s3.threads)."""

from __future__ import annotations

import pytest
import torch

from gym_s3.errors import ConfigError
from gym_s3.threads import DEFAULT_CPU_THREADS, ENV_VAR, configure_threads, resolve_threads


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch):
    """No thread variables set; torch's thread count restored afterwards."""
    for name in (ENV_VAR, "OMP_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    before = torch.get_num_threads()
    yield monkeypatch
    torch.set_num_threads(before)


def test_precedence_argument_then_variable_then_omp_then_default(clean_env) -> None:
    """An argument wins; then $S3_TORCH_THREADS; a user's OMP_NUM_THREADS is left to torch."""
    assert resolve_threads() == DEFAULT_CPU_THREADS == 1
    clean_env.setenv("OMP_NUM_THREADS", "2")
    assert resolve_threads() is None
    clean_env.setenv(ENV_VAR, "3")
    assert resolve_threads() == 3
    assert resolve_threads(2) == 2
    clean_env.setenv(ENV_VAR, "0")
    assert resolve_threads() is None  # 0: torch's choice
    clean_env.setenv(ENV_VAR, "many")
    with pytest.raises(ConfigError, match=ENV_VAR):
        resolve_threads()
    with pytest.raises(ConfigError, match="threads"):
        resolve_threads(-1)


def test_configure_applies_on_the_cpu_only(clean_env) -> None:
    """The default sets one thread for CPU work and leaves accelerator runs alone."""
    torch.set_num_threads(2)
    assert configure_threads(device="cuda") == 2
    assert configure_threads(device="cpu") == 1
    assert configure_threads(0) == 1  # 0 leaves the current setting


def test_env_applies_the_rule_and_its_threads_argument(clean_env) -> None:
    """S3Distilled-v0 applies the default when built and honours DistilledConfig.threads."""
    from gym_s3.envs.config import DistilledConfig
    from gym_s3.envs.core import DistilledCore
    from tests.torch_helpers import SMALL

    torch.set_num_threads(2)
    DistilledCore(2, DistilledConfig.from_kwargs(**SMALL))
    assert torch.get_num_threads() == 1
    DistilledCore(2, DistilledConfig.from_kwargs(**SMALL, threads=2))
    assert torch.get_num_threads() == 2
    with pytest.raises(ConfigError, match="threads"):
        DistilledConfig.from_kwargs(threads=-2)
