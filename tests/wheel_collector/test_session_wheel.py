"""A virtual racing wheel drives the stand-in through the real joystick path; unplug and replug.

The SDL virtual wheel presents itself as a Logitech G29 (Linux layout: axis 0 steering, 2
throttle, 3 brake, pedals +1 released, -1 pressed), so :class:`WheelInput` reads it exactly like
a plugged-in wheel. The session sends its commands through beamngpy to the in-process stand-in;
what the stand-in latched is read back from its ``Electrics`` sensor.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gym_s3.beamng.client.link import BeamNGConfig
from gym_s3.data.dataset import DrivingDataset
from wheel_collector.commands import SAFE_BRAKE, InputStatus
from wheel_collector.session import CollectionSession, SessionConfig
from wheel_collector.store import CalibrationStore
from wheel_collector.virtual import VirtualWheel
from wheel_collector.wheel import WheelInput

pytestmark = pytest.mark.timeout(120)

# G29 calibration from the profile: steer deadzone 0.5 %, pedal deadzones 3 % / 2.5 %
STEER_RAW, THROTTLE_TRAVEL = 0.4, 0.7
STEER_CMD = (STEER_RAW - 0.005) / 0.995
THROTTLE_CMD = (THROTTLE_TRAVEL - 0.03) / 0.945
QUANTUM = 2.0 / 32767  # int16 axis resolution, twice


def test_wheel_drives_stand_in_and_survives_unplug(
    g29: VirtualWheel, store: CalibrationStore, tmp_path: Path
) -> None:
    """Wheel inputs reach the log and the simulator; unplug -> safe controls, no rows lost.

    1. 20 steps with the wheel turned right and the throttle pressed: every row logs the wheel's
       steering and throttle, and the stand-in latched that throttle.
    2. Unplug: the very next step sends no throttle and half brake, recording stops, and the
       first episode file holds all 20 rows. The car slows down while the wheel is away.
    3. Replug: recording resumes in a second episode of the same session.
    """
    config = SessionConfig(out_dir=str(tmp_path), track="putnam", duration_s=0, session_id="virt",
                           sim=BeamNGConfig(standin=True))  # fmt: skip
    session = CollectionSession(config, WheelInput(store=store))
    with session:
        g29.set_controls(steer=STEER_RAW, throttle=THROTTLE_TRAVEL)
        for _ in range(20):
            reading = session.step()
            assert reading.status is InputStatus.CONNECTED
        assert session.recording and session.stats.recorded == 20
        latched = session.measurement
        assert latched.throttle_input == pytest.approx(THROTTLE_CMD, abs=QUANTUM)
        assert latched.brake_input == 0.0
        speed_before = latched.v_long
        assert speed_before > 1.0  # the throttle drove the car

        g29.detach()
        reading = session.step()
        assert reading.status is InputStatus.DISCONNECTED
        assert session.measurement.throttle_input == 0.0
        assert session.measurement.brake_input == SAFE_BRAKE
        assert not session.recording
        assert len(session.stats.episodes) == 1
        for _ in range(10):
            session.step()
        assert session.measurement.v_long < speed_before
        assert session.stats.recorded == 20 and session.stats.safe_steps == 11

        g29.attach()
        g29.set_controls(steer=0.0, throttle=THROTTLE_TRAVEL)
        for _ in range(8):
            session.step()
        assert session.recording
    assert session.stats.dropouts == 1
    ds = DrivingDataset.load(tmp_path)
    assert [e.meta.episode_id for e in ds.episodes] == ["e000", "e001"]
    assert {e.meta.session_id for e in ds.episodes} == {"virt"}
    assert ds.episodes[0].meta.extra["end_reason"] == "device_removed"
    assert ds.episodes[0].num_rows == 20 and ds.num_samples == session.stats.recorded == 28
    assert ds.episodes[0].meta.device.startswith("wheel:Logitech G29")
    first = ds.columns["steer"][:20].numpy()
    np.testing.assert_allclose(first, STEER_CMD, atol=QUANTUM)
    np.testing.assert_allclose(ds.columns["throttle_cmd"][1:20].numpy(), THROTTLE_CMD, atol=QUANTUM)
    assert ds.episodes[0].meta.source == "standin-server"
