"""Wheel profiles: GUID parsing, profile selection, validation, shipped deadzone values."""

from __future__ import annotations

import pytest

from gym_s3.errors import ConfigError
from wheel_collector.profiles import (
    BUILTIN_PROFILES,
    G29_LINUX,
    G29_WINDOWS,
    G920_LINUX,
    G920_WINDOWS,
    GENERIC,
    WheelProfile,
    parse_guid,
    select_profile,
)

# SDL2 GUID layout: bus(2) crc(2) vendor(2) 0(2) product(2) 0(2) version(2) driver(2), LE
G29_USB_GUID = "03000000" + "6d04" + "0000" + "4fc2" + "0000" + "1101" + "0000"
G920_USB_GUID = "0300a1b2" + "6d04" + "0000" + "62c2" + "0000" + "0100" + "0000"
NAME_ONLY_GUID = "ff00d3535669727475616c2057007602"  # SDL stores "Virtual W..." instead of ids


def test_parse_guid_extracts_usb_ids_or_none() -> None:
    """Vendor/product come out of USB GUIDs; name-based or malformed GUIDs give None."""
    assert parse_guid(G29_USB_GUID) == (0x046D, 0xC24F)
    assert parse_guid(G920_USB_GUID) == (0x046D, 0xC262)
    assert parse_guid(NAME_ONLY_GUID) is None
    assert parse_guid("not-a-guid") is None
    assert parse_guid("") is None


@pytest.mark.parametrize(
    ("name", "guid", "platform", "expected"),
    [
        ("Logitech G29 Driving Force Racing Wheel", G29_USB_GUID, "linux", G29_LINUX),
        ("Some renamed device", G29_USB_GUID, "linux", G29_LINUX),
        ("G29 Driving Force Racing Wheel", G29_USB_GUID, "win32", G29_WINDOWS),
        ("Logitech G920 Driving Force Racing Wheel", NAME_ONLY_GUID, "linux", G920_LINUX),
        ("Logitech G920 Driving Force Racing Wheel USB", G920_USB_GUID, "win32", G920_WINDOWS),
        ("Logitech G29 Driving Force Racing Wheel", NAME_ONLY_GUID, "darwin", G29_LINUX),
        ("Thrustmaster T300RS", NAME_ONLY_GUID, "linux", GENERIC),
        ("Acme G290 pad", NAME_ONLY_GUID, "linux", GENERIC),
    ],
)
def test_select_profile(name: str, guid: str, platform: str, expected: WheelProfile) -> None:
    """USB ids win, then the name; the platform's variant is preferred; else GENERIC."""
    assert select_profile(name, guid, platform=platform) is expected


def test_linux_layouts_follow_the_reference() -> None:
    """G29 Linux: steer 0, clutch 1, throttle 2, brake 3; G920 Linux: 0, 1 throttle, 2 brake, 3."""
    assert (G29_LINUX.steer_axis, G29_LINUX.clutch_axis) == (0, 1)
    assert (G29_LINUX.throttle_axis, G29_LINUX.brake_axis) == (2, 3)
    assert (G920_LINUX.steer_axis, G920_LINUX.throttle_axis) == (0, 1)
    assert (G920_LINUX.brake_axis, G920_LINUX.clutch_axis) == (2, 3)
    for profile in (G29_LINUX, G920_LINUX):
        assert (profile.pedal_released, profile.pedal_pressed) == (1.0, -1.0)
        assert profile.rotation_deg == 900.0


@pytest.mark.parametrize("profile", list(BUILTIN_PROFILES.values()), ids=list(BUILTIN_PROFILES))
def test_builtin_deadzones_follow_the_conventions(profile: WheelProfile) -> None:
    """Shipped profiles: steer deadzone <= 1 %, pedal low 2-5 %, top saturation 2-3 %."""
    assert 0.0 <= profile.steer_deadzone <= 0.01
    assert 0.02 <= profile.pedal_deadzone <= 0.05
    assert 0.02 <= profile.pedal_saturation <= 0.03


def test_button_map() -> None:
    """Button indices map to the named actions (G920: menu 6 pause, view 7 reset, Xbox 10 quit)."""
    assert G920_LINUX.button_actions == {6: "pause", 7: "reset", 10: "quit"}
    assert G29_LINUX.button_actions[9] == "pause"
    assert GENERIC.button_actions == {}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"throttle_axis": 0}, "distinct"),
        ({"steer_axis": -1}, ">= 0"),
        ({"steer_deadzone": 0.3}, "steer_deadzone"),
        ({"pedal_deadzone": 0.3, "pedal_saturation": 0.3}, "< 0.5"),
        ({"pedal_released": 0.5, "pedal_pressed": 0.45}, "differ"),
        ({"pedal_pressed": -1.5}, "pedal_pressed"),
        ({"buttons": (("launch", 1),)}, "unknown button action"),
        ({"buttons": (("pause", 1), ("pause", 2))}, "bad button entry"),
        ({"rotation_deg": 10.0}, "rotation_deg"),
    ],
)
def test_invalid_profiles_are_rejected(kwargs: dict[str, object], message: str) -> None:
    """Bad profile fields raise ConfigError naming the problem."""
    with pytest.raises(ConfigError, match=message):
        WheelProfile(name="bad", description="bad", **kwargs)  # type: ignore[arg-type]
