"""What the broker's own process sets for itself at start (``broker.app.run``)."""

from __future__ import annotations

import subprocess
import sys

from broker.app import GC_YOUNG_THRESHOLD


def test_the_broker_process_collects_garbage_less_often_and_freezes_what_start_up_built() -> None:
    # In a child: the setting is process-wide, and a test run must keep its own.
    probe = (
        "import gc; from broker.app import tune_gc; before = gc.get_threshold(); tune_gc(); "
        "print(before[1:] == gc.get_threshold()[1:], gc.get_threshold()[0], gc.get_freeze_count() > 0)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["True", str(GC_YOUNG_THRESHOLD), "True"]
