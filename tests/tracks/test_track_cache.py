"""The on-disk cache of generated tracks returns exactly the track the generator builds."""

from __future__ import annotations

import pytest
import torch

from gym_s3.tracks import registry
from gym_s3.tracks.cache import CACHE_ENV, cache_dir
from gym_s3.tracks.registry import get_track


def _same(a, b) -> None:
    """Every field of two reference paths is equal."""
    for name in ("xyz", "heading", "curvature", "width_left", "width_right"):
        assert torch.equal(getattr(a, name), getattr(b, name)), name
        assert getattr(a, name).dtype == getattr(b, name).dtype
    assert (a.name, a.ds, a.closed, a.description, a.labels) == (
        b.name, b.ds, b.closed, b.description, b.labels)  # fmt: skip
    assert a.features == b.features


def test_cached_track_equals_the_built_one_and_skips_the_build(tmp_path, monkeypatch) -> None:
    """First call builds and stores; the second loads it without calling the generator."""
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    built = get_track("procedural:5")
    assert len(list((tmp_path / "tracks").glob("procedural_5-*.safetensors"))) == 1

    def no_build(arg, kwargs):
        raise AssertionError("the generator ran although the track is cached")

    monkeypatch.setitem(registry._BUILDERS, "procedural", no_build)
    _same(get_track("procedural:5"), built)
    with pytest.raises(AssertionError, match="generator ran"):
        get_track("procedural:5", ds=2.0)  # other arguments, other track: not served stale


def test_town_route_round_trip(tmp_path, monkeypatch) -> None:
    """Town routes (intersection features, straight-through ones with infinite radius) too."""
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    first = get_track("town:1")
    _same(get_track("town:1"), first)
    monkeypatch.setenv(CACHE_ENV, "off")
    assert cache_dir() is None
    _same(get_track("town:1"), first)


def test_a_corrupt_cache_file_is_rebuilt(tmp_path, monkeypatch) -> None:
    """A truncated cache entry is ignored and replaced."""
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    built = get_track("putnam")
    (stem,) = (tmp_path / "tracks").glob("putnam*.safetensors")
    stem.write_bytes(b"garbage")
    _same(get_track("putnam"), built)
