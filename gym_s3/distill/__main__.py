"""``python -m gym_s3.distill ...``: the same as ``s3 distill ...``."""

from __future__ import annotations

import argparse
import sys

from gym_s3.distill.cli import register
from gym_s3.errors import S3Error


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` as the arguments of ``s3 distill`` and run the subcommand."""
    parser = argparse.ArgumentParser(prog="python -m gym_s3.distill")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["distill", *(sys.argv[1:] if argv is None else argv)])
    try:
        return int(args.func(args) or 0)
    except S3Error as exc:
        print(f"s3 distill: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
