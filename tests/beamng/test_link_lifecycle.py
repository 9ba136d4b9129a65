"""SimLink's lifecycle against a simulator that was already running (the real beamngpy client)."""

from __future__ import annotations

import pytest

pytest.importorskip("beamngpy")

from standin_support import FAST_WORLD  # noqa: E402

from gym_s3.beamng.client.link import BeamNGConfig, SimLink  # noqa: E402
from gym_s3.beamng.standin.server import StandInServer  # noqa: E402
from gym_s3.tracks.surfaces import SurfaceLayout  # noqa: E402

pytestmark = pytest.mark.timeout(120)


def test_close_does_not_quit_a_simulator_the_link_did_not_launch(tmp_path):
    """``launch=True`` connects to a running simulator first; closing must not send it ``Quit``.

    The server stops on ``Quit`` here (``exit_on_quit``), so a link that quit it would leave
    ``wait`` returning True and the second link unable to connect.
    """
    server = StandInServer(world_config=FAST_WORLD, exit_on_quit=True)
    port = server.start()
    try:
        sim = BeamNGConfig(port=port, launch=True, home=str(tmp_path), socket_timeout=20.0)
        layout = SurfaceLayout.uniform("asphalt")
        link = SimLink(sim, layout, (0.0, 0.0, 0.0), purpose="the lifecycle test")
        link.open()
        assert link.bng.process is None  # beamngpy connected, it did not start anything
        link.close()
        assert not server.wait(timeout=0.5), "the link quit a simulator it did not launch"
        again = SimLink(sim, layout, (0.0, 0.0, 0.0), purpose="the lifecycle test")
        again.open()
        again.close()
    finally:
        server.stop()
