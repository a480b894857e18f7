"""``Tally``: a log line per key per interval, not per event.

An event that can come by the thousand (a dead-lettered message) would flood the log
with a line each.  The first of a quiet key is logged at once, in full; those that follow
within the interval are counted, and when it ends one line sums them up (with the last
one in full).  A key that keeps busy gets one line per interval; one that goes quiet is
forgotten, so its next event is logged at once again.  Time is the core's clock,
advanced by the engine's tick: tests drive it, nothing sleeps.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import logging

    from broker.core.base.clock import Clock


class _Window:
    __slots__ = ("count", "last", "start")

    def __init__(self, start: int) -> None:
        self.start = start
        self.count = 0
        self.last: tuple[str, tuple[object, ...]] = ("", ())


class Tally:
    """``summary`` is a format with the count, the key, the interval in seconds and the last
    event's line, as in ``"%d more from %s in the last %d s (the last: %s)"``."""

    __slots__ = ("_clock", "_interval", "_log", "_open", "_summary")

    def __init__(self, log: logging.Logger, clock: Clock, interval_ms: int, summary: str) -> None:
        self._log = log
        self._clock = clock
        self._interval = interval_ms
        self._summary = summary
        #: Keys with an interval under way, the oldest first.
        self._open: OrderedDict[str, _Window] = OrderedDict()

    def event(self, key: str, message: str, *args: object) -> None:
        """An event of ``key``, whose own line would be ``message % args`` (at INFO)."""
        window = self._open.get(key)
        if window is None:
            self._open[key] = _Window(self._clock.ms)
            self._log.info(message, *args)
            return
        window.count += 1
        window.last = (message, args)

    def tick(self) -> None:
        """Sum up the intervals that are over (the engine's tick)."""
        now = self._clock.ms
        opened = self._open
        while opened:
            key, window = next(iter(opened.items()))
            if now - window.start < self._interval:
                return
            del opened[key]
            if window.count:
                self._sum_up(key, window, now)
                # Still busy: its next events are counted into the next interval's line.
                opened[key] = _Window(now)

    def flush(self) -> None:
        """Sum up every interval under way now, over or not (the broker is stopping)."""
        now = self._clock.ms
        for key, window in self._open.items():
            if window.count:
                self._sum_up(key, window, now)
        self._open.clear()

    def _sum_up(self, key: str, window: _Window, now: int) -> None:
        message, args = window.last
        seconds = (now - window.start) // 1000
        self._log.info(self._summary, window.count, key, seconds, message % args)

    def __len__(self) -> int:
        return len(self._open)
