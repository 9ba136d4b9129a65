"""Lazy imports of heavy optional dependencies with an install hint on failure."""

from __future__ import annotations

import importlib
from types import ModuleType

from gym_s3.errors import MissingDependencyError

#: optional module -> extra of the ``sim2sim2sim`` distribution that installs it
EXTRAS: dict[str, str] = {
    "beamngpy": "beamng",
    "pygame": "render",
    "moviepy": "video",
    "torchrl": "rl",
    "tensordict": "rl",
    "skrl": "skrl",
    "tensorboard": "skrl",
    "stable_baselines3": "sb3",
}


def require(module: str, *, purpose: str, extra: str | None = None) -> ModuleType:
    """Import ``module`` or raise :class:`MissingDependencyError` naming the extra to install.

    Args:
        module: top-level module name, e.g. ``"beamngpy"``.
        purpose: what the caller needs it for, shown in the message.
        extra: the extra to name in the hint (default: :data:`EXTRAS` of the module); e.g.
            pygame is in both ``wheel`` and ``render``.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        extra = extra or EXTRAS.get(module.split(".")[0])
        hint = f'pip install "sim2sim2sim[{extra}]"' if extra else f"pip install {module}"
        raise MissingDependencyError(
            f"{purpose} needs the optional package '{module}', which is not installed "
            f"({exc}). Install it with: {hint}"
        ) from exc
