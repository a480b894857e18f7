"""Compactions of key ranges on a thread of their own.

LevelDB's ``compact_range`` returns only when the merge is done; run on the store's
worker thread it would hold up every swap read and write behind it (a drain ran a
fifth slower that way).  Ranges asked for while one runs are merged with those still
waiting, so the queue never holds more than one range per stretch of the key space.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

from store.errors import StoreError

if TYPE_CHECKING:
    from collections.abc import Iterable

    from store.database import Database

log = logging.getLogger("stompd.store")


class Compactor:
    __slots__ = ("_busy", "_closed", "_cond", "_db", "_name", "_pending", "_thread")

    def __init__(self, db: Database, name: str) -> None:
        self._db = db
        self._name = name
        self._cond = threading.Condition(threading.Lock())
        self._pending: list[tuple[bytes, bytes]] = []
        self._busy = False
        self._closed = False
        self._thread: threading.Thread | None = None

    def submit(self, ranges: Iterable[tuple[bytes, bytes]]) -> None:
        """Compact each [start, stop) soon (any thread)."""
        with self._cond:
            if self._closed:
                return
            self._pending = coalesce([*self._pending, *ranges])
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()
            self._cond.notify()

    def wait_idle(self) -> None:
        """Until nothing is waiting or running (tests, and ``close``)."""
        with self._cond:
            while self._pending or self._busy:
                self._cond.wait()

    def close(self) -> None:
        """Finish what was asked for, then stop the thread."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._pending and not self._closed:
                    self._cond.wait()
                if not self._pending:
                    return
                ranges, self._pending, self._busy = self._pending, [], True
            try:
                for start, stop in ranges:
                    self._db.compact(start, stop)
            except StoreError as exc:
                log.warning(
                    "%s: compaction failed (the space comes back at the next one): %s", self._name, exc
                )
            finally:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()


def coalesce(ranges: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """``ranges`` sorted, with those that overlap or touch merged into one."""
    merged: list[tuple[bytes, bytes]] = []
    for start, stop in sorted(ranges):
        if merged and start <= merged[-1][1]:
            if stop > merged[-1][1]:
                merged[-1] = (merged[-1][0], stop)
        else:
            merged.append((start, stop))
    return merged
