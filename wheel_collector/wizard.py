"""Interactive calibration wizard (``s3 collect --calibrate``) and its headless core.

The wizard asks the driver to centre the wheel, turn it to full left and full right lock, then
press each pedal fully and release it. It samples every axis of the wheel while each step runs
and :func:`calibration_from_samples` turns those samples into a :class:`Calibration`:

* the steering axis is the one that moved most in the ``left`` and ``right`` steps; its centre is
  the median of the ``centre`` step, its end values the samples farthest from the centre;
* each pedal axis is the one (not yet assigned) that moved most during its step; ``released`` is
  the step's last sample (the pedal was let go), ``pressed`` the sample farthest from it. Taking
  ``released`` from a released pedal rather than from the untouched rest value avoids back-ends
  that report 0 for an axis that has not moved yet;
* the clutch step is optional: if nothing moves, the wheel has no clutch.

The axis indices found override the profile's, so an unknown wheel works after calibration.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from gym_s3.errors import ConfigError
from wheel_collector.calibration import (
    REDO_HINT,
    Calibration,
    PedalCalibration,
    SteerCalibration,
)
from wheel_collector.commands import InputStatus
from wheel_collector.wheel import WheelInput

__all__ = [
    "CALIBRATION_STEPS",
    "MIN_PEDAL_TRAVEL",
    "MIN_STEER_TRAVEL",
    "CalibrationStep",
    "calibrate",
    "calibration_from_samples",
]

#: smallest raw change [-] that counts as "this pedal axis was pressed" (full travel is 2)
MIN_PEDAL_TRAVEL = 0.5
#: smallest raw change [-] from the centre that counts as "the wheel was turned" (full is ~1)
MIN_STEER_TRAVEL = 0.25


@dataclass(frozen=True)
class CalibrationStep:
    """One step of the wizard.

    Attributes:
        key: sample key (``centre``, ``left``, ``right``, ``throttle``, ``brake``, ``clutch``).
        instruction: what the driver must do while the step runs.
        optional: the step may show no movement (e.g. a wheel without clutch).
    """

    key: str
    instruction: str
    optional: bool = False


CALIBRATION_STEPS: tuple[CalibrationStep, ...] = (
    CalibrationStep("centre", "Centre the wheel, take your feet off the pedals and keep still."),
    CalibrationStep("left", "Turn the wheel to full LEFT lock and hold it there."),
    CalibrationStep("right", "Turn the wheel to full RIGHT lock and hold it there."),
    CalibrationStep("throttle", "Press the THROTTLE fully, then release it before the step ends."),
    CalibrationStep("brake", "Press the BRAKE fully, then release it before the step ends."),
    CalibrationStep(
        "clutch",
        "Press the CLUTCH fully, then release it (no clutch pedal: just wait).",
        optional=True,
    ),
)
_REQUIRED = ("centre", "left", "right", "throttle", "brake")


def _as_samples(
    samples: Mapping[str, np.ndarray | Sequence[Sequence[float]]],
) -> dict[str, np.ndarray]:
    """Validate the sample arrays: each ``(M, A)`` finite, the same ``A`` everywhere."""
    missing = [k for k in _REQUIRED if k not in samples]
    if missing:
        raise ConfigError(f"calibration samples lack the steps {missing}")
    arrays: dict[str, np.ndarray] = {}
    for key, value in samples.items():
        array = np.asarray(value, dtype=np.float64)
        if array.ndim != 2 or array.shape[0] < 1 or array.shape[1] < 3:
            raise ConfigError(
                f"calibration samples of step {key!r} must have shape (M, A) with M >= 1 samples "
                f"and A >= 3 axes, got {array.shape}"
            )
        if not np.isfinite(array).all():
            raise ConfigError(f"calibration samples of step {key!r} contain NaN or inf")
        arrays[key] = np.clip(array, -1.0, 1.0)
    widths = {a.shape[1] for a in arrays.values()}
    if len(widths) != 1:
        raise ConfigError(f"calibration steps disagree on the number of axes: {sorted(widths)}")
    return arrays


def _farthest(values: np.ndarray, reference: float) -> float:
    """The entry of ``values`` (M,) farthest from ``reference``."""
    return float(values[np.argmax(np.abs(values - reference))])


def calibration_from_samples(
    samples: Mapping[str, np.ndarray | Sequence[Sequence[float]]], *, guid: str, name: str
) -> Calibration:
    """Build a calibration from raw axis samples recorded during the wizard steps.

    Args:
        samples: step key -> ``(M, A)`` raw axis values [-1, 1] (M samples of A axes), for the
            steps ``centre``, ``left``, ``right``, ``throttle``, ``brake`` and optionally
            ``clutch``.
        guid: SDL GUID of the device.
        name: device name.

    Raises:
        ConfigError: a step shows no usable movement; the message says which step and how to
            redo it.
    """
    arrays = _as_samples(samples)
    rest = np.median(arrays["centre"], axis=0)
    move_left = np.abs(arrays["left"] - rest).max(axis=0)
    move_right = np.abs(arrays["right"] - rest).max(axis=0)
    axis = int(np.argmax(move_left + move_right))
    if min(move_left[axis], move_right[axis]) < MIN_STEER_TRAVEL:
        raise ConfigError(
            f"the steering axis did not move enough (left {move_left[axis]:.2f}, right "
            f"{move_right[axis]:.2f}, need {MIN_STEER_TRAVEL}); turn the wheel to full lock in "
            f"the 'left' and 'right' steps. Redo with `{REDO_HINT}`"
        )
    centre = float(rest[axis])
    left = _farthest(arrays["left"][:, axis], centre)
    right = _farthest(arrays["right"][:, axis], centre)
    if (left - centre) * (right - centre) >= 0:
        raise ConfigError(
            f"full left ({left:+.2f}) and full right ({right:+.2f}) lie on the same side of the "
            f"centre ({centre:+.2f}): turn left in the 'left' step and right in the 'right' step. "
            f"Redo with `{REDO_HINT}`"
        )
    steer = SteerCalibration(axis, left=left, centre=centre, right=right)
    used = {axis}
    pedals: dict[str, PedalCalibration | None] = {}
    for key in ("throttle", "brake", "clutch"):
        if key not in arrays:
            pedals[key] = None
            continue
        array = arrays[key]
        released = array[-1]
        movement = np.abs(array - released).max(axis=0)
        movement[list(used)] = -1.0
        pedal_axis = int(np.argmax(movement))
        if movement[pedal_axis] < MIN_PEDAL_TRAVEL:
            if key == "clutch":
                pedals[key] = None
                continue
            raise ConfigError(
                f"no pedal moved during the '{key}' step (largest change "
                f"{max(movement[pedal_axis], 0.0):.2f}, need {MIN_PEDAL_TRAVEL}); press the "
                f"{key} fully and release it before the step ends. Redo with `{REDO_HINT}`"
            )
        pedals[key] = PedalCalibration(
            pedal_axis,
            released=float(released[pedal_axis]),
            pressed=_farthest(array[:, pedal_axis], float(released[pedal_axis])),
        )
        used.add(pedal_axis)
    assert pedals["throttle"] is not None and pedals["brake"] is not None
    return Calibration(
        guid=guid,
        name=name,
        steer=steer,
        throttle=pedals["throttle"],
        brake=pedals["brake"],
        clutch=pedals["clutch"],
        origin="wizard",
    )


def _print_step(step: CalibrationStep) -> None:
    """Default prompt: print the step's instruction."""
    print(f"[calibration: {step.key}] {step.instruction}", flush=True)


def calibrate(
    wheel: WheelInput,
    *,
    step_s: float = 3.0,
    rate_hz: float = 20.0,
    prompt: Callable[[CalibrationStep], None] = _print_step,
    sleep: Callable[[float], None] = time.sleep,
    steps: Sequence[CalibrationStep] = CALIBRATION_STEPS,
) -> Calibration:
    """Run the calibration wizard on a connected wheel and return the new calibration.

    Each step prints its instruction, then samples all axes of the wheel for ``step_s`` seconds
    at ``rate_hz``, from live joystick events. Save the result with
    :meth:`CalibrationStore.save` and apply it with :meth:`WheelInput.set_calibration`.

    Args:
        wheel: the wheel to calibrate (must be connected).
        step_s: duration of each step [s].
        rate_hz: sampling rate [Hz].
        prompt: shows a step's instruction to the driver.
        sleep: waits between samples (replaceable to script the wizard in tests).
        steps: the steps to run (:data:`CALIBRATION_STEPS`).

    Raises:
        ConfigError: no wheel is connected, it was unplugged during a step, or a step shows no
            usable movement.
    """
    if not step_s > 0 or not rate_hz > 0:
        raise ConfigError(f"step_s={step_s} and rate_hz={rate_hz} must be > 0")
    if wheel.poll().status is not InputStatus.CONNECTED:
        raise ConfigError(f"no racing wheel is connected; plug one in and run `{REDO_HINT}`")
    count = max(1, int(round(step_s * rate_hz)))
    samples: dict[str, np.ndarray] = {}
    for step in steps:
        prompt(step)
        rows = []
        for _ in range(count):
            sleep(1.0 / rate_hz)
            if wheel.poll().status is not InputStatus.CONNECTED:
                raise ConfigError(
                    f"the wheel was unplugged during the '{step.key}' step; plug it back in and "
                    f"run `{REDO_HINT}` again"
                )
            rows.append(wheel.axis_snapshot())
        samples[step.key] = np.array(rows)
    return calibration_from_samples(samples, guid=wheel.guid, name=wheel.device_name)
