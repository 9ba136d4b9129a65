"""The backend registry keeps the built-ins whoever registers first."""

from __future__ import annotations

import pytest

from gym_s3.dynamics import registry
from gym_s3.dynamics.bicycle import BicycleBackend
from gym_s3.dynamics.ddm import DDMBackend
from gym_s3.errors import ConfigError


@pytest.fixture
def fresh_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """An untouched registry, as in a new process (restored afterwards)."""
    monkeypatch.setattr(registry, "_REGISTRY", {})
    monkeypatch.setattr(registry, "_BUILTINS_ADDED", False)


def test_own_backend_registered_first_keeps_the_builtins(fresh_registry: None) -> None:
    """Registering a user backend before any lookup still leaves ``make("ddm")`` working."""
    registry.register_backend("mine", BicycleBackend)
    assert isinstance(registry.make("ddm"), DDMBackend)
    assert isinstance(registry.make("mine"), BicycleBackend)
    assert set(registry.backend_names()) == {"bicycle", "ddm", "trans", "dytr", "mine"}


def test_unknown_backend_lists_the_valid_ones(fresh_registry: None) -> None:
    """A wrong name names every registered backend, the user's included."""
    registry.register_backend("mine", BicycleBackend)
    with pytest.raises(ConfigError, match="bicycle, ddm, trans, dytr, mine"):
        registry.make("ddn")


def test_a_backend_without_a_shipped_checkpoint_has_an_empty_source(fresh_registry: None) -> None:
    """Records name a user backend run without a checkpoint by ``None``; a missing path fails."""
    from gym_s3 import dynamics
    from gym_s3.errors import CheckpointError

    registry.register_backend("mine", BicycleBackend)
    assert dynamics.source("mine") == {"file": None, "sha256": None, "dataset_hash": None}
    assert dynamics.source("ddm")["file"] == "ddm.json"
    with pytest.raises(CheckpointError, match="no checkpoint sidecar"):
        dynamics.source("runs/nowhere/ddm")
