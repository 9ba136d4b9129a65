"""The ``s3`` command line: one entry point, one subcommand per stage of the method.

Each subcommand lives next to the code it drives and exposes ``register(subparsers)``; this
module only lists them, so ``s3 --help`` stays fast (heavy imports happen inside each command's
run function).

The library never imports its applications: the subcommands of ``wheel_collector`` (``collect``)
and ``policies`` (``train``, ``evaluate``, ``scorecard``, ``pipeline``, ...) are looked up by
module name when the parser is built, and an application that is not installed is left out of
``s3 --help`` with a note saying what to install.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from gym_s3.cli_parser import S3ArgumentParser
from gym_s3.errors import S3Error
from gym_s3.interrupts import interrupt_exit_code, stop_signals_interrupt

#: subcommand modules, in the order they appear in ``s3 --help``; those outside ``gym_s3``
#: belong to the applications and are optional (see :data:`APPLICATIONS`)
COMMAND_MODULES: tuple[str, ...] = (
    "gym_s3.tracks.cli",
    "gym_s3.beamng.standin.cli",
    "wheel_collector.cli",
    "gym_s3.data.cli",
    "gym_s3.distill.cli",
    "policies.cli",
    "policies.rollouts",
    "policies.scorecard",
    "policies.pipeline.cli",
)

#: the application packages whose subcommands ``s3`` offers when they are importable
APPLICATIONS: tuple[str, ...] = ("wheel_collector", "policies")


def _command_module(name: str):
    """Import a subcommand module; ``None`` when it belongs to an application that is absent."""
    package = name.partition(".")[0]
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        missing = (exc.name or "").partition(".")[0]
        if package in APPLICATIONS and missing == package:
            return None
        raise


def build_parser() -> argparse.ArgumentParser:
    """Build the ``s3`` parser with every registered subcommand."""
    parser = S3ArgumentParser(
        prog="s3",
        description=(
            "Sim2Sim2Sim: distil a high-fidelity driving simulator into fast batched dynamics, "
            "train PPO in the distilled environment and validate in the high-fidelity one."
        ),
    )
    from gym_s3 import __version__

    parser.add_argument("--version", action="version", version=f"sim2sim2sim {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    absent: list[str] = []
    for name in COMMAND_MODULES:
        module = _command_module(name)
        if module is None:
            absent.append(name.partition(".")[0])
        else:
            module.register(sub)
    if absent:
        names = ", ".join(sorted(set(absent)))
        parser.epilog = (
            f"Not available here: the subcommands of {names} (application packages of "
            "sim2sim2sim that this installation lacks; install the full sim2sim2sim package)."
        )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``s3`` command line; returns the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        with stop_signals_interrupt():  # SIGTERM (a service stop) ends a command like Ctrl-C
            result = args.func(args)
    except S3Error as exc:
        print(f"s3 {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        print(f"s3 {args.command}: interrupted ({exc or 'SIGINT'})", file=sys.stderr)
        return interrupt_exit_code(exc)
    except OSError as exc:  # e.g. an output folder that cannot be created or written
        where = f" '{exc.filename}'" if exc.filename else ""
        print(
            f"s3 {args.command}: error: cannot write or read{where} ({exc.strerror or exc}); "
            "choose a writable folder and an existing input path",
            file=sys.stderr,
        )
        return 2
    return int(result or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
