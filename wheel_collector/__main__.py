"""``python -m wheel_collector``: the collection session command line (same as ``s3 collect``)."""

import sys

from wheel_collector.cli import main

if __name__ == "__main__":
    sys.exit(main())
