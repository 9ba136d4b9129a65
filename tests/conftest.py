"""Session-wide test settings: headless SDL, deterministic torch, shared fixtures."""

from __future__ import annotations

import os

# SDL must be configured before pygame is imported anywhere (headless CI, virtual joystick).
os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
os.environ.setdefault("SDL_JOYSTICK_ALLOW_BACKGROUND_EVENTS", "1")
os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")

import pytest  # noqa: E402
import torch  # noqa: E402
from path_helpers import make_circle, make_straight  # noqa: E402

from gym_s3.tracks.path import ReferencePath  # noqa: E402

# One intra-op thread: the tests use small tensors, for which thread hand-offs cost more than they
# save (and results do not depend on the thread count).
torch.set_num_threads(1)

#: Most workers ``-n auto`` starts (``addopts`` in pyproject.toml): each imports torch and its
#: fixtures (about 0.5 GiB), and more than four gain little on the suite's longest files.
MAX_TEST_WORKERS = 4
#: Test folders whose files share a session fixture that starts processes of its own (the
#: two-rank gloo job of ``tests/distributed``): their files run on one worker, so the job starts
#: once and its timing tests never overlap a second copy of it.
ONE_WORKER_FOLDERS = ("tests/distributed/",)


@pytest.hookimpl(wrapper=True)
def pytest_xdist_auto_num_workers(config: pytest.Config):
    """Workers of ``-n auto``: pytest-xdist's count, at most :data:`MAX_TEST_WORKERS`.

    ``PYTEST_XDIST_AUTO_NUM_WORKERS`` set by the user is taken as it is.
    """
    workers = yield
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return workers
    return max(1, min(MAX_TEST_WORKERS, workers))


def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """Send whole files to workers (``--dist loadfile``), and :data:`ONE_WORKER_FOLDERS` whole."""
    from xdist.scheduler import LoadScopeScheduling

    class FileScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return next((f for f in ONE_WORKER_FOLDERS if path.startswith(f)), path)

    return FileScheduling(config, log)


@pytest.fixture
def circle() -> ReferencePath:
    """A closed circle of radius 50 m."""
    return make_circle()


@pytest.fixture
def straight() -> ReferencePath:
    """An open 300 m straight."""
    return make_straight()
