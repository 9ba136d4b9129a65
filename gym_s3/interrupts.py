"""Stop signals: SIGTERM handled like Ctrl-C, and critical sections they cannot cut in half.

A service manager stops a process with SIGTERM; Ctrl-C sends SIGINT. Inside
:func:`stop_signals_interrupt` both raise :class:`Interrupted` (a ``KeyboardInterrupt``) in the
main thread, so every ``finally`` and ``with`` block runs and recordings are finished, not left
as journals. Code that must not be interrupted half-way (a recorder writing one batch and
updating its row counts) runs inside :func:`critical_section`: a stop signal arriving there is
held and raised when the section ends.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

#: The signals handled like Ctrl-C.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(KeyboardInterrupt):
    """A stop signal arrived; :attr:`signum` says which (exit code ``128 + signum``)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        """The shell's exit code of a process ended by this signal (130 for SIGINT, 143 TERM)."""
        return 128 + self.signum


def interrupt_exit_code(exc: KeyboardInterrupt) -> int:
    """Exit code of a command ended by ``exc`` (``128 + signal``; 130 for a plain Ctrl-C)."""
    return exc.exit_code if isinstance(exc, Interrupted) else 128 + signal.SIGINT


_state = threading.local()
_held: list[int] = []


def _depth() -> int:
    return getattr(_state, "depth", 0)


def _handler(signum: int, frame: FrameType | None) -> None:
    """Raise :class:`Interrupted`, or hold the signal while a critical section runs."""
    if _depth() > 0:
        _held.append(signum)
        return
    raise Interrupted(signum)


@contextmanager
def critical_section() -> Iterator[None]:
    """Hold stop signals (of :func:`stop_signals_interrupt`) until the block ends."""
    _state.depth = _depth() + 1
    try:
        yield
    finally:
        _state.depth -= 1
        if _state.depth == 0 and _held:
            signum = _held.pop(0)
            _held.clear()
            raise Interrupted(signum)


@contextmanager
def stop_signals_interrupt() -> Iterator[None]:
    """Within the block, SIGINT and SIGTERM raise :class:`Interrupted` in the main thread.

    Outside the main thread (where signal handlers cannot be set) the block runs unchanged.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, _handler) for sig in STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
