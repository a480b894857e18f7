"""Shared counters between the parent and its workers, in one block of shared memory.

Workers publish their running totals here a few dozen times a second; the parent reads
them for the progress line and to decide when the run is over, and writes the start
time and the stop flag.  Each slot has exactly one writer, so no lock is needed: an
aligned 64-bit store is atomic on every platform CPython runs multiprocess on.
"""

from __future__ import annotations

import ctypes
from multiprocessing.sharedctypes import RawArray
from typing import Any

# Global cells, written by the parent.
START_NS = 0  # CLOCK_MONOTONIC time at which producers start (0: not yet)
STOP = 1  # 1: consumers stop, producers stop early, everyone reports
CONSUMERS_GO = 2  # backlog mode: consumers may subscribe now
GLOBALS = 3

# Per-worker cells, written by that worker.
STATE = 0
SENT = 1
RECEIVED = 2  # deliveries of this run's messages, duplicates included
DISTINCT = 3  # first deliveries (as far as this worker can tell)
ERRORS = 4
FOREIGN = 5  # messages not from this run (left on the queue): activity, not progress
FIELDS = 6

# Worker states, in the order a worker goes through them.
STARTING = 0
READY = 1  # connected and subscribed: producers may start
PRODUCERS_DONE = 2  # every producer of this worker has finished (DISCONNECT receipted)
FINISHED = 3
FAILED = 4


class Board:
    def __init__(self, workers: int, cells: Any = None) -> None:
        self.workers = workers
        # RawArray, not Array: no lock, and it pickles into spawned processes.
        self.cells: Any = cells if cells is not None else RawArray(ctypes.c_int64, GLOBALS + workers * FIELDS)

    def __reduce__(self) -> tuple[Any, tuple[int, Any]]:
        return (Board, (self.workers, self.cells))

    def get(self, cell: int) -> int:
        return int(self.cells[cell])

    def set(self, cell: int, value: int) -> None:
        self.cells[cell] = value

    def get_worker(self, slot: int, field: int) -> int:
        return int(self.cells[GLOBALS + slot * FIELDS + field])

    def set_worker(self, slot: int, field: int, value: int) -> None:
        self.cells[GLOBALS + slot * FIELDS + field] = value

    def total(self, field: int) -> int:
        return sum(self.get_worker(slot, field) for slot in range(self.workers))

    def states(self) -> list[int]:
        return [self.get_worker(slot, STATE) for slot in range(self.workers)]
