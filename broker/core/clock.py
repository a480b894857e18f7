"""The broker's notion of now, set by whoever drives the core (the IO edge, or a test)."""

from __future__ import annotations

import time


class Clock:
    """Wall-clock milliseconds, as STOMP's ``expires`` and ``timestamp`` headers use.

    The core never reads the system clock itself: the edge calls ``set`` once per batch
    of frames, and tests set it to whatever they like.
    """

    __slots__ = ("ms",)

    def __init__(self, ms: int | None = None) -> None:
        self.ms = int(time.time() * 1000) if ms is None else ms

    def set(self, now: float) -> None:
        self.ms = int(now * 1000)
