"""Calibration: raw-axis mapping, JSON files per GUID, corrupted files, the wizard's core."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from gym_s3.errors import ConfigError
from wheel_collector.calibration import Calibration, PedalCalibration, SteerCalibration
from wheel_collector.profiles import G29_LINUX, G920_LINUX, WheelProfile
from wheel_collector.store import CONFIG_DIR_ENV, CalibrationStore, default_config_dir
from wheel_collector.wizard import calibration_from_samples

GUID = "030000006d0400004fc2000011010000"
NO_DEADZONE = WheelProfile(
    name="raw", description="raw", steer_deadzone=0.0, pedal_deadzone=0.0, pedal_saturation=0.0
)


def test_steer_mapping_symmetric_asymmetric_and_inverted() -> None:
    """Full left -> -1, centre -> 0, full right -> +1, halfway -> 0.5 on each side."""
    symmetric = SteerCalibration(0, left=-1.0, centre=0.0, right=1.0)
    assert [symmetric.normalise(a, 0.0) for a in (-1.0, 0.0, 1.0, 0.5)] == [-1.0, 0.0, 1.0, 0.5]
    skewed = SteerCalibration(0, left=-0.8, centre=0.1, right=0.9)
    assert skewed.normalise(-0.8, 0.0) == pytest.approx(-1.0)
    assert skewed.normalise(0.5, 0.0) == pytest.approx(0.5)  # halfway from 0.1 to 0.9
    assert skewed.normalise(-0.35, 0.0) == pytest.approx(-0.5)  # halfway from 0.1 to -0.8
    inverted = SteerCalibration(0, left=1.0, centre=0.0, right=-1.0)
    assert inverted.normalise(1.0, 0.0) == -1.0 and inverted.normalise(-0.25, 0.0) == 0.25


def test_steer_deadzone_is_cut_out_and_output_stays_continuous() -> None:
    """Inside the deadzone the output is 0; outside it is rescaled, monotone, reaching +-1."""
    cal = SteerCalibration(0, left=-1.0, centre=0.0, right=1.0)
    assert cal.normalise(0.009, 0.01) == 0.0 and cal.normalise(-0.01, 0.01) == 0.0
    assert cal.normalise(0.01 + 1e-6, 0.01) == pytest.approx(1e-6 / 0.99)
    assert cal.normalise(0.505, 0.01) == pytest.approx(0.5)
    sweep = [cal.normalise(a, 0.01) for a in np.linspace(-1, 1, 401)]
    assert sweep[0] == -1.0 and sweep[-1] == 1.0 and np.all(np.diff(sweep) >= 0)
    assert np.max(np.abs(np.diff(sweep))) < 0.006  # no jump at the deadzone edge


def test_pedal_mapping_with_deadzone_and_saturation() -> None:
    """Released -> 0, pressed -> 1; 3 % low deadzone and 2.5 % saturation, continuous between."""
    pedal = PedalCalibration(2, released=1.0, pressed=-1.0)
    assert pedal.normalise(1.0, 0.03, 0.025) == 0.0
    assert pedal.normalise(-1.0, 0.03, 0.025) == 1.0
    assert pedal.normalise(0.95, 0.03, 0.025) == 0.0  # travel 2.5 %: inside the deadzone
    assert pedal.normalise(-0.96, 0.03, 0.025) == 1.0  # travel 98 %: saturated
    assert pedal.normalise(0.0, 0.03, 0.025) == pytest.approx((0.5 - 0.03) / 0.945)
    sweep = [pedal.normalise(a, 0.03, 0.025) for a in np.linspace(1, -1, 401)]
    assert np.all(np.diff(sweep) >= 0) and np.max(np.diff(sweep)) < 0.006
    reversed_pedal = PedalCalibration(0, released=-1.0, pressed=1.0)
    assert reversed_pedal.normalise(0.0, 0.0, 0.0) == 0.5


def test_end_stop_reading_is_clamped() -> None:
    """SDL's -1.0000305 (int16 -32768) gives exactly full lock / full pedal, not beyond."""
    cal = Calibration.from_profile(G29_LINUX)
    command = cal.command({0: -1.0000305, 2: -1.0000305}, G29_LINUX)
    assert command.steer == -1.0 and command.throttle == 1.0


def test_untouched_axes_count_as_centred_and_released() -> None:
    """No event yet -> centred wheel and released pedals (not the half-pressed 0.0 reading)."""
    cal = Calibration.from_profile(G29_LINUX)
    idle = cal.command({}, G29_LINUX)
    assert (idle.steer, idle.throttle, idle.brake) == (0.0, 0.0, 0.0)
    half = cal.command({2: 0.0}, G29_LINUX)  # what an untouched axis would read as
    assert half.throttle == pytest.approx(0.497, abs=1e-3)


def test_profile_default_calibration_uses_profile_axes() -> None:
    """from_profile takes axis indices and pedal direction from the profile."""
    cal = Calibration.from_profile(G920_LINUX, guid=GUID, name="G920")
    assert cal.axes == (0, 1, 2, 3)
    assert (cal.throttle.released, cal.throttle.pressed) == (1.0, -1.0)
    assert cal.origin == "profile:g920-linux"


@pytest.mark.parametrize(
    "build",
    [
        lambda: SteerCalibration(0, left=0.5, centre=0.0, right=1.0),
        lambda: SteerCalibration(0, left=-0.01, centre=0.0, right=1.0),
        lambda: SteerCalibration(0, left=float("nan"), centre=0.0, right=1.0),
        lambda: PedalCalibration(1, released=0.5, pressed=0.45),
        lambda: PedalCalibration(-1, released=1.0, pressed=-1.0),
        lambda: Calibration(
            GUID,
            "x",
            SteerCalibration(0, -1, 0, 1),
            PedalCalibration(0, 1, -1),
            PedalCalibration(2, 1, -1),
        ),
    ],
)
def test_invalid_calibrations_are_rejected(build: Callable[[], object]) -> None:
    """Same-side steering ends, tiny spans, NaN, unmoved pedals, shared axes: ConfigError."""
    with pytest.raises(ConfigError):
        build()


def _wizard_calibration() -> Calibration:
    """A typical recorded calibration (asymmetric, slightly short of the end stops)."""
    return Calibration(
        guid=GUID,
        name="Logitech G29 Driving Force Racing Wheel",
        steer=SteerCalibration(0, left=-0.97, centre=0.02, right=0.99),
        throttle=PedalCalibration(2, released=0.98, pressed=-0.95),
        brake=PedalCalibration(3, released=1.0, pressed=-0.9),
        clutch=PedalCalibration(1, released=0.99, pressed=-1.0),
    )


def test_store_round_trip(store: CalibrationStore) -> None:
    """Save then load gives an equal calibration from <dir>/<guid>.json, written atomically."""
    cal = _wizard_calibration()
    path = store.save(cal)
    assert path == store.directory / f"{GUID}.json"
    assert json.loads(path.read_text())["format"] == "sim2sim2sim.wheel_calibration"
    assert store.load(GUID) == cal
    assert store.load(GUID.upper()) == cal
    assert [p.name for p in store.directory.iterdir()] == [path.name]  # no temp files left
    assert store.load("0" * 32) is None
    assert store.delete(GUID) and store.load(GUID) is None


def _valid_text() -> str:
    """JSON text of a valid calibration file."""
    return json.dumps(_wizard_calibration().to_dict())


@pytest.mark.parametrize(
    "content",
    [
        b"{not json",
        b"\xff\xfe\x00garbage",
        b"[]",
        b'{"format": "something.else", "version": 1}',
        _valid_text()[: len(_valid_text()) // 2].encode(),
        _valid_text().replace('"version": 1', '"version": 99').encode(),
        json.dumps({**_wizard_calibration().to_dict(), "brake": None}).encode(),
        json.dumps({**_wizard_calibration().to_dict(), "steer": {"axis": 0}}).encode(),
        json.dumps(
            {
                **_wizard_calibration().to_dict(),
                "steer": {"axis": 0, "left": 0.5, "centre": 0.0, "right": 1.0},
            }
        ).encode(),
        json.dumps({**_wizard_calibration().to_dict(), "guid": "f" * 32}).encode(),
    ],
    ids=[
        "syntax",
        "binary",
        "array",
        "format",
        "truncated",
        "version",
        "no-brake",
        "fields",
        "same-side",
        "foreign-guid",
    ],
)
def test_corrupted_file_error_names_file_and_fix(store: CalibrationStore, content: bytes) -> None:
    """Any unreadable calibration file raises ConfigError naming the file and the redo command."""
    path = store.path_for(GUID)
    path.parent.mkdir(parents=True)
    path.write_bytes(content)
    with pytest.raises(ConfigError) as info:
        store.load(GUID)
    assert str(path) in str(info.value) and "s3 collect --calibrate" in str(info.value)


def test_store_rejects_non_guid_names(store: CalibrationStore) -> None:
    """A GUID that is not 32 hex digits cannot become a file name."""
    with pytest.raises(ConfigError, match="GUID"):
        store.path_for("../../etc/passwd")


def test_config_dir_follows_xdg_and_override(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """$XDG_CONFIG_HOME/sim2sim2sim/wheels by default; S3_WHEEL_CONFIG_DIR overrides it."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    assert default_config_dir() == tmp_path / "cfg" / "sim2sim2sim" / "wheels"
    assert CalibrationStore().directory == default_config_dir()
    monkeypatch.setenv(CONFIG_DIR_ENV, str(tmp_path / "elsewhere"))
    assert default_config_dir() == tmp_path / "elsewhere"


def _samples(
    layout: dict[str, int],
    released: float,
    pressed: float,
    *,
    num_axes: int = 5,
    clutch: bool = True,
    seed: int = 0,
) -> dict[str, np.ndarray]:
    """Synthetic wizard samples: 30 noisy frames per step of a wheel with ``layout``."""
    rng = np.random.default_rng(seed)
    rest = np.zeros(num_axes)
    for key in ("throttle", "brake", "clutch"):
        if key in layout:
            rest[layout[key]] = released
    rest[layout["steer"]] = 0.02

    def frames(axis: int | None = None, values: np.ndarray | None = None) -> np.ndarray:
        out = np.tile(rest, (30, 1)) + rng.normal(0.0, 0.003, (30, num_axes))
        if axis is not None and values is not None:
            out[:, axis] = values + rng.normal(0.0, 0.003, 30)
        return out

    turn = np.linspace(0.0, 1.0, 30)
    press = np.concatenate([np.linspace(0, 1, 12), np.ones(8), np.linspace(1, 0, 10)])
    samples = {
        "centre": frames(),
        "left": frames(layout["steer"], 0.02 + turn * (-0.97 - 0.02)),
        "right": frames(layout["steer"], 0.02 + turn * (0.99 - 0.02)),
    }
    for key in ("throttle", "brake") + (("clutch",) if clutch else ()):
        travel = press if key in layout else np.zeros(30)
        samples[key] = frames(layout.get(key), released + travel * (pressed - released))
    return samples


def test_samples_to_calibration_detects_axes_and_ranges() -> None:
    """The wizard core finds each axis by its movement and recovers the recorded end values."""
    layout = {"steer": 3, "throttle": 0, "brake": 4, "clutch": 1}  # deliberately unusual
    cal = calibration_from_samples(_samples(layout, -1.0, 1.0), guid=GUID, name="odd wheel")
    assert cal.axes == (3, 0, 4, 1) and cal.origin == "wizard"
    assert cal.steer.centre == pytest.approx(0.02, abs=0.005)
    assert cal.steer.left == pytest.approx(-0.97, abs=0.02)
    assert cal.steer.right == pytest.approx(0.99, abs=0.02)
    assert cal.throttle.released == pytest.approx(-1.0, abs=0.02)
    assert cal.throttle.pressed == pytest.approx(1.0, abs=0.02)


def test_samples_without_clutch_give_no_clutch() -> None:
    """An optional clutch step where nothing moves yields clutch=None."""
    layout = {"steer": 0, "throttle": 1, "brake": 2}
    cal = calibration_from_samples(_samples(layout, 1.0, -1.0), guid=GUID, name="no clutch")
    assert cal.clutch is None and cal.axes == (0, 1, 2)


def test_samples_error_messages() -> None:
    """Unmoved steering, unpressed pedal or left/right on one side: ConfigError saying what."""
    layout = {"steer": 0, "throttle": 1, "brake": 2}
    samples = _samples(layout, 1.0, -1.0)
    still = {**samples, "left": samples["centre"], "right": samples["centre"]}
    with pytest.raises(ConfigError, match="steering axis did not move"):
        calibration_from_samples(still, guid=GUID, name="x")
    lazy = {**samples, "brake": samples["centre"]}
    with pytest.raises(ConfigError, match="'brake' step"):
        calibration_from_samples(lazy, guid=GUID, name="x")
    twice_right = {**samples, "left": samples["right"]}
    with pytest.raises(ConfigError, match="same side"):
        calibration_from_samples(twice_right, guid=GUID, name="x")
    with pytest.raises(ConfigError, match="lack the steps"):
        calibration_from_samples({"centre": samples["centre"]}, guid=GUID, name="x")
    broken = {**samples, "centre": samples["centre"] * np.nan}
    with pytest.raises(ConfigError, match="NaN"):
        calibration_from_samples(broken, guid=GUID, name="x")
