"""WheelInput through the real pygame joystick path, driven by an SDL virtual wheel.

The virtual wheel presents itself as a Logitech G29 (name and USB ids in its SDL GUID), so the
Linux G29 layout applies: axis 0 steering, 1 clutch, 2 throttle, 3 brake, pedals +1 released and
-1 pressed. Expected values are written out here from that layout, not computed by the code
under test.
"""

from __future__ import annotations

from types import ModuleType

import pytest

from gym_s3.errors import ConfigError
from wheel_collector.calibration import Calibration, PedalCalibration, SteerCalibration
from wheel_collector.commands import SAFE_COMMAND, InputStatus
from wheel_collector.profiles import G29_LINUX, G920_LINUX, GENERIC
from wheel_collector.store import CalibrationStore
from wheel_collector.virtual import VirtualWheel
from wheel_collector.wheel import WheelInput

G29_NAME = "Logitech G29 Driving Force Racing Wheel"  # as in conftest.py

pytestmark = pytest.mark.timeout(30)

STEER, CLUTCH, THROTTLE, BRAKE = 0, 1, 2, 3
QUANTUM = 1.0 / 32767  # one int16 step of an SDL axis


def test_selects_g29_profile_from_guid(g29: VirtualWheel, store: CalibrationStore) -> None:
    """A wheel whose GUID carries the G29 USB ids gets the G29 Linux profile; status connected."""
    wheel = WheelInput(store=store)
    reading = wheel.poll()
    assert reading.status is InputStatus.CONNECTED
    assert wheel.profile is G29_LINUX and reading.device_name == G29_NAME
    assert reading.guid == wheel.guid and len(reading.guid) == 32
    assert wheel.calibration is not None and wheel.calibration.origin == "profile:g29-linux"


def test_centre_full_lock_and_pedals(g29: VirtualWheel, store: CalibrationStore) -> None:
    """Centre/released -> zeros; full left -> -1, full right -> +1; pressed pedals -> 1."""
    wheel = WheelInput(store=store)
    idle = wheel.poll().command
    assert (idle.steer, idle.throttle, idle.brake, idle.valid) == (0.0, 0.0, 0.0, True)
    assert idle.source == "wheel"
    g29.set_axes({STEER: -1.0, THROTTLE: -1.0})
    command = wheel.poll().command
    assert command.steer == -1.0 and command.throttle == 1.0 and command.brake == 0.0
    assert wheel.raw_axes[STEER] == -1.0  # the -1.0000305 event was clamped
    g29.set_axes({STEER: 1.0, THROTTLE: 1.0, BRAKE: -1.0})
    command = wheel.poll().command
    assert (command.steer, command.throttle, command.brake) == (1.0, 0.0, 1.0)
    g29.set_axes({STEER: 0.5, BRAKE: 0.0, CLUTCH: -1.0})
    command = wheel.poll().command
    # steer deadzone 0.5 %: (0.5 - 0.005) / 0.995; pedal half travel: (0.5 - 0.03) / 0.945
    assert command.steer == pytest.approx((0.5 - 0.005) / 0.995, abs=2 * QUANTUM)
    assert command.brake == pytest.approx((0.5 - 0.03) / 0.945, abs=2 * QUANTUM)
    assert command.throttle == 0.0  # the clutch does not leak into throttle


def test_deadzones_through_the_device(g29: VirtualWheel, store: CalibrationStore) -> None:
    """Steer within 0.5 % -> 0, pedal travel < 3 % -> 0, travel > 97.5 % -> 1."""
    wheel = WheelInput(store=store)
    g29.set_axes({STEER: 0.004, THROTTLE: 0.96, BRAKE: -0.96})  # travel 2 % and 98 %
    command = wheel.poll().command
    assert (command.steer, command.throttle, command.brake) == (0.0, 0.0, 1.0)


def test_buttons_become_actions_once(g29: VirtualWheel, store: CalibrationStore) -> None:
    """Mapped buttons (Options=pause, Share=reset, PS=quit) are reported once, in order."""
    wheel = WheelInput(store=store)
    wheel.poll()
    g29.click(9)
    assert wheel.poll().actions == ("pause",)
    g29.click(8)
    g29.click(0)  # Cross: not mapped
    g29.click(24)
    assert wheel.poll().actions == ("reset", "quit")
    assert wheel.poll().actions == ()


def test_log_of_a_manoeuvre_shows_the_wheel_inputs(
    g29: VirtualWheel, store: CalibrationStore
) -> None:
    """A scripted manoeuvre through SDL shows up step by step in the polled commands."""
    wheel = WheelInput(store=store)
    script = [(-0.8 + 0.08 * k, min(0.1 * k, 1.0), 0.6 if k >= 15 else 0.0) for k in range(20)]
    log = []
    for steer, throttle, brake in script:
        g29.set_controls(steer=steer, throttle=throttle, brake=brake)
        log.append(wheel.poll().command.to_action())
    assert len(log) == len(script)
    for (steer, throttle, brake), action in zip(script, log, strict=True):
        assert action[0] == pytest.approx(steer, abs=0.006)  # steer deadzone rescale <= 0.5 %
        assert action[1] == pytest.approx(throttle - brake, abs=0.035)  # pedal deadzones


def test_unplug_sends_safe_controls_at_once_and_replug_resumes(
    g29: VirtualWheel, store: CalibrationStore
) -> None:
    """Detach -> next poll is SAFE_COMMAND + DISCONNECTED; re-attach -> live inputs again."""
    wheel = WheelInput(store=store)
    g29.set_controls(steer=0.5, throttle=1.0)
    assert wheel.poll().command.throttle == 1.0
    old_instance = g29.instance_id
    g29.detach()
    reading = wheel.poll()
    assert reading.command == SAFE_COMMAND and reading.status is InputStatus.DISCONNECTED
    assert reading.dropouts == 1 and not reading.live
    assert reading.device_name == G29_NAME  # still says which wheel to plug back in
    for _ in range(3):
        again = wheel.poll()
        assert again.command == SAFE_COMMAND and again.dropouts == 0
    g29.attach()
    assert g29.instance_id != old_instance  # a new SDL instance, same GUID
    resumed = wheel.poll()
    assert resumed.status is InputStatus.CONNECTED and resumed.live
    assert resumed.command.throttle == 0.0  # fresh device state: released until it reports
    g29.set_controls(steer=-1.0, brake=1.0)
    command = wheel.poll().command
    assert (command.steer, command.brake) == (-1.0, 1.0)


def test_polling_loop_keeps_every_sample_across_a_dropout(
    g29: VirtualWheel, store: CalibrationStore
) -> None:
    """A 20 Hz-style loop gets one reading per poll: live before/after, safe while unplugged."""
    wheel = WheelInput(store=store)
    readings = []
    for step in range(60):
        if step == 20:
            g29.detach()
        if step == 40:
            g29.attach()
        if g29.attached:
            g29.set_controls(steer=(step % 10) / 10.0)
        readings.append((step, wheel.poll()))
    assert len(readings) == 60
    for step, reading in readings:
        if 20 <= step < 40:
            assert reading.command == SAFE_COMMAND
            assert reading.status is InputStatus.DISCONNECTED
        else:
            assert reading.live
            expected = (step % 10) / 10.0
            assert reading.command.steer == pytest.approx(expected, abs=0.006)
    assert sum(r.dropouts for _, r in readings) == 1


def test_reconnect_policy_same_waits_for_the_unplugged_guid(
    g29: VirtualWheel, store: CalibrationStore
) -> None:
    """reconnect='same' ignores a different wheel; 'any' takes it with its own profile."""
    same, other = WheelInput(store=store), None
    g29.detach()
    assert same.poll().status is InputStatus.DISCONNECTED
    g920 = VirtualWheel.for_profile(
        G920_LINUX,
        name="Logitech G920 Driving Force Racing Wheel",
        vendor_id=0x046D,
        product_id=0xC262,
    )
    try:
        g920.attach()
        assert same.poll().status is InputStatus.DISCONNECTED
        g29.attach()
        assert same.poll().status is InputStatus.CONNECTED and same.guid == same.poll().guid
        same.close()
        g29.detach()
        other = WheelInput(store=store, device="G29", reconnect="any")
        g29.attach()
        assert other.poll().status is InputStatus.CONNECTED and other.profile is G29_LINUX
        g29.detach()
        assert other.poll().status is InputStatus.DISCONNECTED
        g920.detach()
        g920.attach()
        # 'any' still honours the device filter ("G29"): the G920 is not taken
        assert other.poll().status is InputStatus.DISCONNECTED
        anything = WheelInput(store=store, reconnect="any")
        assert anything.poll().status is InputStatus.CONNECTED
        assert anything.profile is G920_LINUX
        g920.set_controls(throttle=1.0)  # G920 layout: throttle on axis 1
        assert anything.poll().command.throttle == 1.0
    finally:
        g920.detach()


def test_wheel_plugged_in_after_start(pg: ModuleType, store: CalibrationStore) -> None:
    """With no wheel, polls report NO_DEVICE + SAFE_COMMAND; plugging one in connects it."""
    wheel = WheelInput(store=store)
    reading = wheel.poll()
    assert reading.status is InputStatus.NO_DEVICE and reading.command == SAFE_COMMAND
    named = VirtualWheel.for_profile(G29_LINUX, name=G29_NAME, vendor_id=0x046D, product_id=0xC24F)
    with named as virtual:
        assert wheel.poll().status is InputStatus.CONNECTED
        virtual.set_axis(THROTTLE, -1.0)
        assert wheel.poll().command.throttle == 1.0
    assert wheel.poll().status is InputStatus.DISCONNECTED
    wheel.close()
    assert wheel.poll().status is InputStatus.NO_DEVICE


def test_stored_calibration_is_used_per_guid(g29: VirtualWheel, store: CalibrationStore) -> None:
    """A calibration stored for the wheel's GUID overrides the profile (here: swapped pedals)."""
    probe = WheelInput(store=store)
    guid = probe.guid
    probe.close()
    store.save(
        Calibration(
            guid=guid,
            name=G29_NAME,
            steer=SteerCalibration(STEER, left=-0.5, centre=0.0, right=0.5),
            throttle=PedalCalibration(BRAKE, released=1.0, pressed=-1.0),
            brake=PedalCalibration(THROTTLE, released=1.0, pressed=-1.0),
        )
    )
    wheel = WheelInput(store=store)
    assert wheel.calibration is not None and wheel.calibration.origin == "wizard"
    g29.set_axes({STEER: 0.5, THROTTLE: -1.0})
    command = wheel.poll().command
    assert (command.steer, command.throttle, command.brake) == (1.0, 0.0, 1.0)


def test_corrupted_calibration_stops_with_a_clear_error(
    g29: VirtualWheel, store: CalibrationStore
) -> None:
    """A broken calibration file for the plugged wheel raises ConfigError naming the file."""
    probe = WheelInput(store=store)
    path = store.path_for(probe.guid)
    probe.close()
    path.parent.mkdir(parents=True)
    path.write_text("{ broken")
    with pytest.raises(ConfigError, match="s3 collect --calibrate") as info:
        WheelInput(store=store)
    assert str(path) in str(info.value)


def test_wheel_without_the_profile_axes_is_not_used(
    pg: ModuleType, store: CalibrationStore
) -> None:
    """A 2-axis device cannot serve a 3-axis layout: it is skipped (status stays NO_DEVICE)."""
    with VirtualWheel(num_axes=2):
        wheel = WheelInput(store=store, profile=GENERIC)
        reading = wheel.poll()
    assert reading.status is InputStatus.NO_DEVICE and reading.command == SAFE_COMMAND


def test_bad_arguments(pg: ModuleType, store: CalibrationStore) -> None:
    """Unknown reconnect policies are rejected; axis_snapshot needs a connected wheel."""
    with pytest.raises(ConfigError, match="reconnect"):
        WheelInput(store=store, reconnect="sometimes")
    with pytest.raises(ConfigError, match="no racing wheel"):
        WheelInput(store=store).axis_snapshot()
