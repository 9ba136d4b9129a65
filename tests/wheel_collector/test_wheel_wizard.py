"""The calibration wizard end to end: live SDL events -> calibration file -> WheelInput."""

from __future__ import annotations

from types import ModuleType

import pytest

from gym_s3.errors import ConfigError
from wheel_collector.commands import InputStatus
from wheel_collector.profiles import GENERIC
from wheel_collector.store import CalibrationStore
from wheel_collector.virtual import VirtualWheel
from wheel_collector.wheel import WheelInput
from wheel_collector.wizard import CALIBRATION_STEPS, CalibrationStep, calibrate

pytestmark = pytest.mark.timeout(30)

# an unknown wheel with a layout no profile guesses: steer on axis 3, throttle 0, brake 4,
# pedals resting at -1 and reaching +1 when pressed, steering short of the end stops
STEER, THROTTLE, BRAKE = 3, 0, 4
REST = {THROTTLE: -1.0, BRAKE: -1.0, STEER: 0.04}
SAMPLES_PER_STEP = 6


class ScriptedDriver:
    """Acts out each wizard step on the virtual wheel (the prompt and sleep hooks)."""

    def __init__(self, wheel: VirtualWheel) -> None:
        self.wheel, self.step, self.sample = wheel, "", 0

    def prompt(self, step: CalibrationStep) -> None:
        """Start a step: reset the wheel to rest, then do what the step asks."""
        self.step, self.sample = step.key, 0
        self.wheel.set_axes(REST)
        if step.key == "left":
            self.wheel.set_axis(STEER, -0.9)
        elif step.key == "right":
            self.wheel.set_axis(STEER, 0.95)

    def sleep(self, _seconds: float) -> None:
        """Between samples: press the step's pedal, release it before the step ends."""
        self.sample += 1
        pedal = {"throttle": THROTTLE, "brake": BRAKE}.get(self.step)
        if pedal is not None:
            pressed = 2 <= self.sample < SAMPLES_PER_STEP
            self.wheel.set_axis(pedal, 1.0 if pressed else -1.0)


def test_wizard_calibrates_an_unknown_wheel(pg: ModuleType, store: CalibrationStore) -> None:
    """Recorded ranges land in the store and make the odd wheel drive correctly afterwards."""
    virtual = VirtualWheel(num_axes=5, rest_axes=REST)
    virtual.attach()
    try:
        wheel = WheelInput(store=store)
        assert wheel.profile is GENERIC
        driver = ScriptedDriver(virtual)
        calibration = calibrate(
            wheel,
            step_s=SAMPLES_PER_STEP / 20.0,
            rate_hz=20.0,
            prompt=driver.prompt,
            sleep=driver.sleep,
        )
        assert calibration.axes == (STEER, THROTTLE, BRAKE)  # no clutch moved
        assert calibration.steer.left == pytest.approx(-0.9, abs=1e-4)
        assert calibration.steer.centre == pytest.approx(0.04, abs=1e-4)
        assert calibration.steer.right == pytest.approx(0.95, abs=1e-4)
        assert calibration.throttle.released == pytest.approx(-1.0, abs=1e-4)
        assert calibration.throttle.pressed == pytest.approx(1.0, abs=1e-4)
        path = store.save(calibration)
        assert path.name == f"{wheel.guid}.json"
        wheel.close()

        fresh = WheelInput(store=store)  # picks the stored calibration by GUID
        virtual.set_axes({STEER: -0.9, THROTTLE: 1.0})
        command = fresh.poll().command
        assert (command.steer, command.throttle, command.brake) == (-1.0, 1.0, 0.0)
        virtual.set_axes({STEER: 0.04 + 0.91 / 2, THROTTLE: -1.0, BRAKE: 0.0})
        command = fresh.poll().command
        assert command.steer == pytest.approx((0.5 - 0.005) / 0.995, abs=1e-3)
        assert command.brake == pytest.approx((0.5 - 0.03) / 0.945, abs=1e-3)
    finally:
        virtual.detach()


def test_wizard_refuses_without_wheel_or_on_unplug(pg: ModuleType, store: CalibrationStore) -> None:
    """No wheel -> ConfigError; a wheel unplugged mid-step -> ConfigError naming the step."""
    with pytest.raises(ConfigError, match="no racing wheel"):
        calibrate(WheelInput(store=store), step_s=0.1, sleep=lambda _s: None)
    virtual = VirtualWheel(num_axes=5, rest_axes=REST)
    virtual.attach()
    wheel = WheelInput(store=store)
    assert wheel.poll().status is InputStatus.CONNECTED
    with pytest.raises(ConfigError, match="unplugged during the 'centre' step"):
        calibrate(
            wheel,
            step_s=0.1,
            prompt=lambda _s: virtual.detach(),
            sleep=lambda _s: None,
            steps=CALIBRATION_STEPS,
        )
