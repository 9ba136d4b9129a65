"""Where wheel calibrations live: one JSON file per device GUID in the user's config directory.

Default location: ``$XDG_CONFIG_HOME/sim2sim2sim/wheels/<guid>.json`` (``~/.config`` when
``XDG_CONFIG_HOME`` is unset, ``%APPDATA%`` on Windows). ``S3_WHEEL_CONFIG_DIR`` or the
``directory`` argument of :class:`CalibrationStore` override it (tests use a temporary folder).
"""

from __future__ import annotations

import json
import logging
import os
import sys
import tempfile
from pathlib import Path

from gym_s3.errors import ConfigError
from wheel_collector.calibration import REDO_HINT, Calibration
from wheel_collector.profiles import is_sdl_guid

__all__ = ["CONFIG_DIR_ENV", "CalibrationStore", "default_config_dir"]

_LOG = logging.getLogger(__name__)

#: environment variable that overrides the calibration directory
CONFIG_DIR_ENV = "S3_WHEEL_CONFIG_DIR"


def default_config_dir() -> Path:
    """Return the directory holding wheel calibrations (not created)."""
    override = os.environ.get(CONFIG_DIR_ENV)
    if override:
        return Path(override).expanduser()
    if sys.platform.startswith(("win32", "cygwin")):
        base = Path(os.environ.get("APPDATA") or Path.home() / "AppData" / "Roaming")
    else:
        base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "sim2sim2sim" / "wheels"


class CalibrationStore:
    """Load and save :class:`Calibration` files keyed by SDL GUID.

    Args:
        directory: folder of the JSON files; :func:`default_config_dir` when ``None``.
    """

    def __init__(self, directory: str | os.PathLike[str] | None = None) -> None:
        self.directory = Path(directory) if directory is not None else default_config_dir()

    def path_for(self, guid: str) -> Path:
        """Return the file of device ``guid`` (32 hex digits from ``Joystick.get_guid()``)."""
        if not is_sdl_guid(guid):
            raise ConfigError(
                f"{guid!r} is not an SDL joystick GUID (32 hex digits, as returned by "
                "pygame's Joystick.get_guid())"
            )
        return self.directory / f"{guid.lower()}.json"

    def load(self, guid: str, *, name: str | None = None) -> Calibration | None:
        """Return the stored calibration of ``guid``, or ``None`` when there is none.

        Args:
            guid: SDL GUID of the device.
            name: current device name; a different stored name only logs a warning (the GUID
                identifies the model, the name may differ between driver versions).

        Raises:
            ConfigError: the file exists but cannot be read; the message names the file and how
                to redo the calibration.
        """
        path = self.path_for(guid)
        if not path.exists():
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            calibration = Calibration.from_dict(data)
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, ConfigError) as exc:
            raise ConfigError(
                f"the wheel calibration file {path} is corrupted ({exc}). Delete it and redo "
                f"the calibration with `{REDO_HINT}`"
            ) from exc
        if calibration.guid.lower() != guid.lower():
            raise ConfigError(
                f"the wheel calibration file {path} belongs to GUID {calibration.guid}, not "
                f"{guid}. Delete it and redo the calibration with `{REDO_HINT}`"
            )
        if name is not None and calibration.name != name:
            _LOG.warning(
                "calibration %s was recorded for %r, the device now reports %r; using it anyway",
                path,
                calibration.name,
                name,
            )
        return calibration

    def save(self, calibration: Calibration) -> Path:
        """Write ``calibration`` atomically (temporary file + rename) and return its path."""
        path = self.path_for(calibration.guid)
        path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(calibration.to_dict(), indent=2, sort_keys=True) + "\n"
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return path

    def delete(self, guid: str) -> bool:
        """Remove the calibration of ``guid``; returns whether a file was removed."""
        path = self.path_for(guid)
        if path.exists():
            path.unlink()
            return True
        return False
