"""The broker's notion of now, set by whoever drives the core (the IO edge, or a test)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from datetime import tzinfo


class Clock:
    """Wall-clock milliseconds, as STOMP's ``expires`` and ``timestamp`` headers use.

    The core never reads the system clock itself: the edge calls ``set`` once per batch
    of frames, and tests set it to whatever they like.  ``tz`` is the time zone cron
    entries are read in (None: the machine's).
    """

    __slots__ = ("ms", "tz")

    def __init__(self, ms: int | None = None, tz: tzinfo | None = None) -> None:
        self.ms = int(time.time() * 1000) if ms is None else ms
        self.tz = tz

    def set(self, now: float) -> None:
        self.ms = int(now * 1000)
