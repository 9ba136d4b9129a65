"""Soak (issue 11): long batched rollouts of every backend and of the vehicle simulator.

Every shipped dynamics backend drives ``S3Distilled-v0`` from randomised starts on random
surfaces with ice patches, with random actions and same-step autoreset; the reference vehicle is
stepped from random states with random controls. No observation, final observation, reward or
vehicle state may hold a non-finite value, and the process memory must stay flat once warmed up.
The default run soaks about 10^5 car-steps; the ``slow`` run 10^7 env steps (2.5 x 10^6 per
backend) plus 2 x 10^5 vehicle control steps (10^7 physics steps). ``benchmarks/gpu_soak.py``
runs 10^8 steps on a GPU.
"""

from __future__ import annotations

import pytest
from soak_support import SoakReport, soak_distilled, soak_vehicle

BACKENDS = ("bicycle", "ddm", "trans", "dytr")


def _check(report: SoakReport, *, steps: int, growth_mib: float) -> None:
    """Assert a finished soak: all steps done, nothing non-finite, memory flat after warm-up."""
    print(report.line())
    assert report.steps == steps
    assert report.nonfinite == 0, report.line()
    host, _ = report.growth_mib()
    assert host < growth_mib, [round(rss, 1) for _, rss, _ in report.samples]
    late = report.samples[len(report.samples) // 2 :]  # the second half must be flatter still
    assert max(r for _, r, _ in late) - late[0][1] < growth_mib / 2, late


@pytest.mark.timeout(120)
@pytest.mark.parametrize("backend", BACKENDS)
def test_short_soak_stays_finite(backend: str) -> None:
    """256 cars x 100 steps of a backend: every observation and reward finite, episodes end."""
    report = soak_distilled(backend, 256, 100, seed=1)
    _check(report, steps=25_600, growth_mib=64.0)
    assert report.episodes > 0  # terminations and time limits happened and were reset


@pytest.mark.timeout(120)
def test_short_vehicle_soak_stays_finite() -> None:
    """128 random cars x 20 control steps of the vehicle simulator: every state value finite."""
    report = soak_vehicle(128, 20, seed=1)
    _check(report, steps=2_560, growth_mib=64.0)


@pytest.mark.slow
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("backend", BACKENDS)
def test_long_soak_finite_and_memory_flat(backend: str) -> None:
    """4096 cars x 611 steps (2.5 x 10^6 car-steps) per backend: finite, memory flat (< 32 MiB)."""
    report = soak_distilled(backend, 4096, 611, seed=2)
    _check(report, steps=4096 * 611, growth_mib=32.0)


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_long_vehicle_soak_finite_and_memory_flat() -> None:
    """1024 random cars x 200 control steps (10^7 physics steps): finite, memory flat."""
    report = soak_vehicle(1024, 200, seed=2)
    _check(report, steps=1024 * 200, growth_mib=32.0)
