"""What the broker's own process sets for itself at start (``broker.ha.run``)."""

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


#: In a child: what the export does to the heap, as page faults (``ru_minflt``).  The
#: loop encodes a few chunks of ~0.5 MB, the writer thread frees them once written, and
#: again: 40 rounds of 4 chunks.
CHUNKS_PROBE = """
import resource, sys
from broker.app import tune_malloc
tune_malloc(export=sys.argv[1] == "on")
def rounds(n):
    for _ in range(n):
        chunks = [b"x" * 600_000 for _ in range(4)]
        del chunks
rounds(3)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
rounds(40)
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def page_faults(export: str) -> int:
    done = subprocess.run(
        [sys.executable, "-c", CHUNKS_PROBE, export], capture_output=True, text=True, check=True
    )
    return int(done.stdout)


def test_with_the_export_on_freed_chunks_stay_in_the_heap_for_the_next_ones() -> None:
    # 40 rounds of 4 x 600 KB: 23,000 pages each time the heap gives them back.
    assert page_faults("off") > 5_000
    assert page_faults("on") < 500


def test_the_broker_raises_its_file_descriptor_limit_to_the_hard_one_and_says_so() -> None:
    # In a child whose soft limit starts low: each connection is a descriptor.
    probe = (
        "import logging, resource, sys; logging.basicConfig(level=logging.INFO, stream=sys.stdout); "
        "soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE); "
        "resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard)); "
        "from broker.app import raise_fd_limit; got = raise_fd_limit(); "
        "print('LIMIT', got, resource.getrlimit(resource.RLIMIT_NOFILE)[0], hard)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    got, now, hard = out.split("LIMIT")[1].split()
    assert got == now == hard
    assert f"file descriptors: limit raised from 256 to {hard}" in out
