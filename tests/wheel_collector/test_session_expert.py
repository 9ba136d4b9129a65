"""The scripted expert drives the stand-in over beamngpy; the session logs what happened."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import torch

from gym_s3.beamng.client.link import BeamNGConfig
from gym_s3.data.dataset import DrivingDataset
from gym_s3.errors import ConfigError
from gym_s3.tracks import SURFACE_NAMES, get_track
from wheel_collector.commands import DriverCommand, InputReading, InputStatus
from wheel_collector.expert import ExpertConfig, ExpertInput, PerturbationConfig
from wheel_collector.session import CollectionSession, SessionConfig, make_layout

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(autouse=True)
def _restore_torch_threads() -> Iterator[None]:
    """Undo ``torch.set_num_threads`` calls of the code under test (process-global state)."""
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def test_expert_session_logs_match_the_simulator(tmp_path: Path) -> None:
    """Rows, episodes and track-side columns of an expert session on ice patches.

    The car starts 12 m before the first ice patch of a seeded Putnam layout and drives 3 s.
    Every step is recorded; episodes of 1 s follow each other without gaps; the friction the
    session computes under each wheel from the layout equals the friction the stand-in's own
    physics reports (``s3_wheel_mu``) at every step, and some wheel touches the ice.
    """
    torch.set_num_threads(1)
    layout = make_layout(get_track("putnam"), "asphalt", 3, seed=1)
    first = min(b.s_start for b in layout.bands)
    config = SessionConfig(out_dir=str(tmp_path), track="putnam", ice_patches=3, layout_seed=1,
                           start_s=first - 12.0, duration_s=3.0, episode_s=1.0,
                           sim=BeamNGConfig(standin=True))  # fmt: skip
    quiet = ExpertConfig(perturbations=PerturbationConfig.none())
    session = CollectionSession(config, ExpertInput(quiet, seed=0), seed=0)
    own_mu, logged_mu = [], []
    with session:
        while session.stats.steps < 60:
            mu = session._sample.mu[0].tolist()  # what the next row logs
            own_mu.append(session.link.vehicle.sensors["electrics"]["s3_wheel_mu"])
            logged_mu.append(mu)
            session.step()
    stats = session.stats
    assert stats.steps == stats.recorded == 60 and stats.safe_steps == 0
    ds = DrivingDataset.load(tmp_path)
    assert [e.num_rows for e in ds.episodes] == [20, 20, 20]
    assert all(e.meta.device == "scripted-expert" and e.meta.source == "standin-server"
               for e in ds.episodes)  # fmt: skip
    np.testing.assert_allclose(np.array(logged_mu), np.array(own_mu), atol=1e-6)
    ice = SURFACE_NAMES.index("ice")
    assert (ds.columns["surface_fl"] == ice).any() or (ds.columns["surface_fr"] == ice).any()
    c = ds.columns
    assert float(c["s"][-1] - c["s"][0]) > 3.0  # it drove forward along the path
    assert float(c["d"].abs().max()) < 1.0
    np.testing.assert_allclose(np.diff(c["t"][:20].numpy()), 0.05, atol=1e-6)
    gap = np.hypot(float(c["x"][20] - c["x"][19]), float(c["y"][20] - c["y"][19]))
    assert gap < 0.05 * float(c["v_long"][19]) + 0.05  # the next episode continues the drive
    assert not torch.isnan(c["omega_fl"]).any()  # stand-in extras were used


def test_bad_session_config() -> None:
    """Unknown surfaces and negative durations are refused before connecting."""
    with pytest.raises(ConfigError, match="unknown surface"):
        SessionConfig(surface="lava")
    with pytest.raises(ConfigError, match="duration_s"):
        SessionConfig(duration_s=-1)


class FullLockLeft:
    """An input source holding full left lock and a little throttle (a driver leaving the road)."""

    device_name = "full-lock"

    def poll(self) -> InputReading:
        """The constant command."""
        command = DriverCommand(steer=-1.0, throttle=0.4, source="wheel")
        return InputReading(command, InputStatus.CONNECTED, self.device_name)

    def close(self) -> None:
        """Nothing to release."""


def test_leaving_the_road_resets_the_car(tmp_path: Path) -> None:
    """A car driven off the road ends its episode (off_track) and restarts standing at the start."""
    config = SessionConfig(out_dir=str(tmp_path), track="putnam", off_track_m=0.5, duration_s=0,
                           start_s=100.0, sim=BeamNGConfig(standin=True))  # fmt: skip
    session = CollectionSession(config, FullLockLeft())
    with session:
        while session.stats.resets == 0 and session.stats.steps < 200:
            session.step()
        assert session.stats.resets == 1
        m = session.measurement
        assert abs(m.v_long) < 0.5  # standing again
        assert (
            abs(float(session._sample.s[0]) - 100.0) < 1.0
            and abs(float(session._sample.d[0])) < 0.5
        )
    ds = DrivingDataset.load(tmp_path)
    assert ds.episodes[0].meta.extra["end_reason"] == "off_track"
    assert float(ds.columns["d"][ds.episodes[0].stop - 1]) > 4.5  # it was past the left edge
