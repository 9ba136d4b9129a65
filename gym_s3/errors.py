"""User-facing errors.

Every error a user can trigger with bad input derives from :class:`S3Error` and from the builtin
exception a caller would expect (``ValueError`` for bad values, ``TimeoutError`` for a silent
simulator, ...), so both ``except S3Error`` and ``except ValueError`` work. Messages name what was
wrong and what to do about it.
"""

from __future__ import annotations


class S3Error(Exception):
    """Base class of all sim2sim2sim errors meant to be shown to a user."""


class ConfigError(S3Error, ValueError):
    """A configuration value or constructor argument is invalid."""


class ActionError(S3Error, ValueError):
    """An action has the wrong shape, dtype or contains non-finite values."""


class TrackFormatError(S3Error, ValueError):
    """A track geometry file is malformed (the message names the file and the line)."""


class DataFormatError(S3Error, ValueError):
    """A driving log or dataset file is corrupted, truncated or foreign."""


class CheckpointError(S3Error, ValueError):
    """A checkpoint is damaged, foreign, or was made for another spec version or backend."""


class SimulatorConnectionError(S3Error, ConnectionError):
    """Nothing answers at the simulator address, or the connection was lost."""


class SimulatorTimeoutError(S3Error, TimeoutError):
    """The simulator did not answer within the configured timeout."""


class MissingDependencyError(S3Error, ImportError):
    """An optional dependency is not installed (the message names the extra to install)."""


class StandInWarning(UserWarning):
    """The open stand-in was asked for something it does not model (a level, a vehicle model).

    It still serves the request (flat ground, its one sedan), so this is a warning; turn it into
    an error with ``warnings.simplefilter("error", StandInWarning)``.
    """


class StorageError(S3Error, OSError):
    """A file could not be written (disk full, file too large, folder gone); names the path."""
