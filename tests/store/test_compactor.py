"""The compactor: ranges compacted on its own thread, merged while they wait."""

from __future__ import annotations

import itertools
import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from store.compactor import Compactor, coalesce
from store.errors import StoreFull
from store.memory import MemoryDatabase

keys = st.binary(min_size=1, max_size=3)
ranges = st.lists(st.tuples(keys, keys).map(sorted).map(tuple), max_size=20)


def covered(spans: list[tuple[bytes, bytes]], key: bytes) -> bool:
    return any(start <= key < stop for start, stop in spans)


@given(ranges, st.lists(keys, max_size=20))
def test_coalesced_ranges_cover_the_same_keys_sorted_and_apart(
    spans: list[tuple[bytes, bytes]], probes: list[bytes]
) -> None:
    merged = coalesce(list(spans))
    for key in probes + [start for start, _ in spans] + [stop for _, stop in spans]:
        assert covered(merged, key) == covered(spans, key)
    assert all(a[1] < b[0] for a, b in itertools.pairwise(merged))


class Recording(MemoryDatabase):
    """Records each compaction; ``gate`` holds the first one until set."""

    def __init__(self, fail: bool = False) -> None:
        super().__init__("recording")
        self.compacted: list[tuple[bytes, bytes, str]] = []
        self.started = threading.Event()
        self.gate = threading.Event()
        self.fail = fail

    def compact(self, start: bytes = b"", stop: bytes = b"\xff" * 32) -> None:
        self.started.set()
        self.gate.wait(10)
        self.compacted.append((start, stop, threading.current_thread().name))
        if self.fail:
            raise StoreFull("compaction failed: No space left on device")


def test_ranges_asked_for_while_one_runs_are_merged_and_run_on_the_compactor_thread() -> None:
    db = Recording()
    compactor = Compactor(db, "test-compact")
    compactor.submit([(b"a", b"c")])
    assert db.started.wait(10)
    # The first compaction is running (held at the gate): these two wait, and merge.
    compactor.submit([(b"m", b"p")])
    compactor.submit([(b"o", b"r"), (b"x", b"y")])
    db.gate.set()
    compactor.wait_idle()
    assert db.compacted == [
        (b"a", b"c", "test-compact"),
        (b"m", b"r", "test-compact"),
        (b"x", b"y", "test-compact"),
    ]
    compactor.close()


def test_close_finishes_what_was_asked_and_a_failure_is_only_logged(caplog: pytest.LogCaptureFixture) -> None:
    db = Recording(fail=True)
    db.gate.set()
    compactor = Compactor(db, "test-compact")
    compactor.submit([(b"a", b"b")])
    compactor.close()
    assert [start for start, _, _ in db.compacted] == [b"a"]
    assert "compaction failed" in caplog.text
    compactor.submit([(b"c", b"d")])  # closed: ignored, and no thread starts
    assert len(db.compacted) == 1
