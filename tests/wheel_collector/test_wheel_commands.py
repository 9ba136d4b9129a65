"""Driver commands: ranges, NaN handling, the action layout and the safe command."""

from __future__ import annotations

import math
from types import ModuleType

import numpy as np
import pytest

from gym_s3.errors import ActionError
from gym_s3.spec import ACTION_FEATURES, single_action_space
from wheel_collector.commands import (
    SAFE_BRAKE,
    SAFE_COMMAND,
    DriverCommand,
    InputReading,
    InputSource,
    InputStatus,
)
from wheel_collector.keyboard import KeyboardInput
from wheel_collector.store import CalibrationStore
from wheel_collector.wheel import WheelInput


def test_to_action_is_steer_and_throttle_minus_brake() -> None:
    """to_action gives float32 (2,) [steer, throttle - brake]; braking makes accel negative."""
    action = DriverCommand(steer=0.25, throttle=0.75, brake=0.25, source="test").to_action()
    assert action.dtype == np.float32 and action.shape == (2,)
    np.testing.assert_allclose(action, [0.25, 0.5])
    braking = DriverCommand(steer=-1.0, throttle=0.0, brake=0.8, source="test").to_action()
    np.testing.assert_allclose(braking, [-1.0, -0.8], rtol=1e-6)


def test_actions_fit_the_project_action_space() -> None:
    """Commands at the extremes map into the spec's action space, named steer then accel."""
    assert [f.name for f in ACTION_FEATURES] == ["steer", "accel"]
    space = single_action_space()
    for steer, throttle, brake in [(-1, 0, 1), (1, 1, 0), (0, 1, 1), (0.3, 0.2, 0.0)]:
        command = DriverCommand(steer=steer, throttle=throttle, brake=brake, source="test")
        assert space.contains(command.to_action())
    assert space.contains(SAFE_COMMAND.to_action())


@pytest.mark.parametrize(
    ("field", "value"),
    [("steer", 1.5), ("steer", -1.01), ("throttle", -0.1), ("throttle", 1.2), ("brake", 2.0)],
)
def test_out_of_range_values_are_rejected_and_clamped_builder_clamps(
    field: str, value: float
) -> None:
    """The constructor rejects out-of-range values; DriverCommand.clamped clamps them."""
    values = {"steer": 0.0, "throttle": 0.0, "brake": 0.0, field: value}
    with pytest.raises(ActionError, match=field):
        DriverCommand(**values, source="test")
    clamped = DriverCommand.clamped(**values, source="test")
    low, high = (-1.0, 1.0) if field == "steer" else (0.0, 1.0)
    assert getattr(clamped, field) == min(max(value, low), high)


@pytest.mark.parametrize("field", ["steer", "throttle", "brake"])
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_values_raise_in_both_builders(field: str, bad: float) -> None:
    """NaN/inf are never clamped silently: both builders raise ActionError naming the field."""
    values = {"steer": 0.0, "throttle": 0.0, "brake": 0.0, field: bad}
    with pytest.raises(ActionError, match=field):
        DriverCommand(**values, source="test")
    with pytest.raises(ActionError, match=field):
        DriverCommand.clamped(**values, source="test")


def test_safe_command_centres_cuts_throttle_and_brakes() -> None:
    """SAFE_COMMAND: wheel centred, no throttle, SAFE_BRAKE > 0, flagged as not live."""
    assert (SAFE_COMMAND.steer, SAFE_COMMAND.throttle, SAFE_COMMAND.brake) == (0.0, 0.0, SAFE_BRAKE)
    assert 0.0 < SAFE_BRAKE <= 1.0
    assert SAFE_COMMAND.valid is False and SAFE_COMMAND.source == "safe"
    assert SAFE_COMMAND.to_action()[1] < 0


def test_reading_is_live_only_when_connected_with_valid_command() -> None:
    """InputReading.live needs CONNECTED status and a valid (non-substitute) command."""
    live = DriverCommand(source="wheel")
    assert InputReading(live, InputStatus.CONNECTED).live
    assert not InputReading(SAFE_COMMAND, InputStatus.CONNECTED).live
    assert not InputReading(live, InputStatus.DISCONNECTED).live
    assert not InputReading(SAFE_COMMAND, InputStatus.NO_DEVICE).live


def test_wheel_and_keyboard_are_input_sources(pg: ModuleType, store: CalibrationStore) -> None:
    """Both device classes satisfy the InputSource protocol the session codes against."""
    wheel, keyboard = WheelInput(store=store), KeyboardInput()
    assert isinstance(wheel, InputSource) and isinstance(keyboard, InputSource)
    assert isinstance(wheel.poll(), InputReading) and isinstance(keyboard.poll(), InputReading)
    wheel.close()
    keyboard.close()
