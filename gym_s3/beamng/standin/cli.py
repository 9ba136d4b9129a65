"""``s3 standin``: serve the open BeamNG stand-in until Ctrl-C.

Also runnable on its own as ``python -m gym_s3.beamng.standin.cli`` (same options).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from gym_s3.beamng.protocol import PROTOCOL_VERSION
from gym_s3.cli_parser import S3ArgumentParser
from gym_s3.errors import ConfigError, S3Error

#: BeamNG.tech's usual GE port
DEFAULT_PORT = 25252
BANNER = "sim2sim2sim OPEN STAND-IN (not BeamNG)"


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``standin`` subcommand to the ``s3`` command line."""
    parser = subparsers.add_parser(
        "standin",
        help="serve the open stand-in simulator that speaks BeamNG's protocol (not BeamNG)",
        description=(
            "Serve BeamNG's wire protocol (beamngpy 1.36, protocol v1.27) on a TCP port, "
            "simulating the world with the project's own vehicle physics. Point "
            "BeamNGpy(host, port).open(launch=False) at it. This is an open stand-in, not BeamNG."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    add_arguments(parser)
    parser.set_defaults(func=run)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of the stand-in server (shared by ``s3 standin`` and ``python -m``)."""
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to bind; anything but loopback exposes an unauthenticated simulator port "
        "to the network and is warned about",
    )
    parser.add_argument(
        "--port",
        type=int,
        default=DEFAULT_PORT,
        help="TCP port of the game-engine socket [port number, 0 = any free port]",
    )
    parser.add_argument(
        "--steps-per-second",
        type=int,
        default=60,
        help="simulated frames per second until a client sends FPSLimit [1/s]; Step{n} "
        "advances n / steps-per-second seconds",
    )
    parser.add_argument(
        "--physics-rate",
        type=float,
        default=1000.0,
        help="target physics rate; each frame is a whole number of physics steps [Hz]",
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="log unknown requests as errors and exit with status 3 if any were received",
    )
    parser.add_argument(
        "--exit-on-quit",
        action="store_true",
        help="stop when a client sends Quit (bng.close() sends it even to simulators it did "
        "not launch, so the default is to keep serving)",
    )
    parser.add_argument(
        "--log-level",
        default="INFO",
        choices=("DEBUG", "INFO", "WARNING", "ERROR"),
        help="logging level of the server [level name]",
    )


def run(args: argparse.Namespace) -> int:
    """Serve until Ctrl-C (or ``Quit`` with ``--exit-on-quit``); returns the exit status."""
    from gym_s3.beamng.standin.config import WorldConfig
    from gym_s3.beamng.standin.server import StandInServer

    logging.basicConfig(
        level=getattr(logging, args.log_level),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    config = WorldConfig(steps_per_second=args.steps_per_second, physics_rate_hz=args.physics_rate)
    server = StandInServer(
        args.host,
        args.port,
        strict=args.strict,
        exit_on_quit=args.exit_on_quit,
        world_config=config,
    )
    try:
        port = server.start()
    except OSError as exc:
        raise ConfigError(
            f"cannot listen on {args.host}:{args.port} ({exc}); is BeamNG or another stand-in "
            "using that port? Choose another --port"
        ) from exc
    print(
        f"{BANNER}: serving BeamNG protocol {PROTOCOL_VERSION} on {args.host}:{port} "
        "(Ctrl-C to stop)",
        flush=True,
    )
    try:
        server.wait()
    except KeyboardInterrupt:
        print(f"{BANNER}: stopping", flush=True)
    finally:
        server.stop()
    if args.strict and server.unknown_requests:
        print(f"{BANNER}: unknown requests received: {sorted(set(server.unknown_requests))}")
        return 3
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m gym_s3.beamng.standin.cli``."""
    parser = S3ArgumentParser(
        prog="python -m gym_s3.beamng.standin.cli",
        description=f"{BANNER}: serve BeamNG's protocol with the project's vehicle physics.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return run(args)
    except S3Error as exc:
        print(f"standin: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover - exercised through a subprocess in the tests
    sys.exit(main())
