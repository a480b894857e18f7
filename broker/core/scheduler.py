"""Scheduled delivery, as ActiveMQ's ``AMQ_SCHEDULED_DELAY``/``_PERIOD``/``_REPEAT`` headers ask.

A scheduled SEND is accepted (and receipted) at once and routed when due: after
``AMQ_SCHEDULED_DELAY`` ms, then ``AMQ_SCHEDULED_REPEAT`` more times every
``AMQ_SCHEDULED_PERIOD`` ms, each delivery a new message with its own id.  ActiveMQ
needs ``schedulerSupport="true"`` for this; here it is on by default.  Waiting
messages are held in memory (charged to the memory limit) until the persistent store
takes them over.
"""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING

from broker.core.errors import InvalidHeader

if TYPE_CHECKING:
    from broker.core.destinations import Destination
    from broker.core.message import Message

DELAY = "AMQ_SCHEDULED_DELAY"
PERIOD = "AMQ_SCHEDULED_PERIOD"
REPEAT = "AMQ_SCHEDULED_REPEAT"


class Schedule:
    __slots__ = ("message", "period", "repeats_left", "targets")

    def __init__(self, message: Message, targets: tuple[Destination, ...], period: int, repeats: int) -> None:
        self.message = message
        self.targets = targets
        self.period = period
        self.repeats_left = repeats


def schedule_of(headers: dict[str, str]) -> tuple[int, int, int] | None:
    """(delay, period, repeat) in ms/times, or None for a message to deliver now."""
    if DELAY not in headers and REPEAT not in headers:
        return None
    delay, period, repeat = (_non_negative(headers, name) for name in (DELAY, PERIOD, REPEAT))
    if repeat and not period:
        raise InvalidHeader(f"{REPEAT} needs a positive {PERIOD}")
    if not delay and not repeat:
        return None
    return delay, period, repeat


def _non_negative(headers: dict[str, str], name: str) -> int:
    text = headers.get(name)
    if text is None:
        return 0
    try:
        value = int(text)
    except ValueError:
        raise InvalidHeader(f"header {name!r} must be a whole number, got {text!r}") from None
    if value < 0:
        raise InvalidHeader(f"header {name!r} must not be negative, got {text!r}")
    return value


class Scheduler:
    __slots__ = ("_heap", "_tiebreak")

    def __init__(self) -> None:
        self._heap: list[tuple[int, int, Schedule]] = []
        self._tiebreak = 0

    def __len__(self) -> int:
        return len(self._heap)

    def add(self, due_ms: int, schedule: Schedule) -> None:
        self._tiebreak += 1
        heapq.heappush(self._heap, (due_ms, self._tiebreak, schedule))

    def pop_due(self, now_ms: int) -> list[tuple[int, Schedule]]:
        """Every (due time, schedule) whose time has come, earliest first."""
        due = []
        heap = self._heap
        while heap and heap[0][0] <= now_ms:
            when, _, schedule = heapq.heappop(heap)
            due.append((when, schedule))
        return due
