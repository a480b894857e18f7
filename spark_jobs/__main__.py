"""``python -m spark_jobs`` and ``spark-submit spark_jobs/__main__.py``: the stompd-report command.

Run as a file by spark-submit, this module is not part of a package and Python has put
``spark_jobs/`` itself first on the path: put the directory that holds it there instead.
"""

from __future__ import annotations

import sys
from pathlib import Path


def _run() -> int:
    if not __package__:
        sys.path[0] = str(Path(__file__).resolve().parents[1])
    from spark_jobs.cli import main

    return main()


if __name__ == "__main__":
    sys.exit(_run())
