"""`python -m perf`: the same as the `stompd-perf` console script."""

import sys

from perf.cli import main

sys.exit(main())
