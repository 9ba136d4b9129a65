"""``Quit`` with ``exit_on_quit``: the client gets its acknowledgement before the server stops.

The old order (stop in a background thread started by the handler, reply sent afterwards) lost
the race whenever the stopping thread shut the socket before the reply went out, and beamngpy
raised ``BNGDisconnectedError``. Here the reply is held back for a moment (an injected delay in
its encoding), which made that race certain on the old order.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from standin_support import FAST_WORLD

from gym_s3.beamng.standin.server import StandInServer

#: How long the reply to ``Quit`` is held back [s] (the old order's stop took ~1 ms).
REPLY_DELAY_S = 0.3


def test_quit_is_acknowledged_before_the_server_stops(
    bngpy: Any, connect: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A slow reply to ``Quit`` still reaches the client; the server then stops."""
    encode = StandInServer._encode_reply

    def slow_quit_reply(self, conn, message, reply):
        if message.get("type") == "Quit":
            time.sleep(REPLY_DELAY_S)
        return encode(self, conn, message, reply)

    monkeypatch.setattr(StandInServer, "_encode_reply", slow_quit_reply)
    srv = StandInServer(exit_on_quit=True, world_config=FAST_WORLD)
    srv.start()
    try:
        bng = connect(srv)
        bng.control.quit_beamng()  # raised BNGDisconnectedError on the old order
        assert srv.wait(5.0)
    finally:
        srv.stop()
