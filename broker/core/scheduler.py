"""Scheduled delivery, as ActiveMQ's ``AMQ_SCHEDULED_DELAY``/``_PERIOD``/``_REPEAT``/``_CRON``
headers ask (ActiveMQ needs ``schedulerSupport="true"`` for this; here it is on).

A scheduled SEND is accepted (and receipted) at once and becomes a job, routed when
due, each delivery a new message with its own id.  The timing is ActiveMQ's
(``JobSchedulerImpl``, read from its source):

* A job is first due at the cron entry's next time (or now, without one), plus
  ``_DELAY`` if there is one, or else plus ``_PERIOD``.
* A plain job is delivered, then ``_REPEAT`` more times every ``_PERIOD`` ms.
* A cron job never ends by itself: each time it comes due it is due again at the
  entry's next time.  Without ``_REPEAT`` it is delivered then; with it, it starts a
  plain job instead, due after ``_DELAY`` (or ``_PERIOD``) and repeated ``_REPEAT``
  times every ``_PERIOD``.  (ActiveMQ 5.17 deadlocks its scheduler on this case,
  AMQ-9808; this is the fixed behaviour.)

Deliveries lose the scheduling headers, so that a consumer that sends a message on
does not schedule it again, and a message with an expiry gets its time to live
counted again from its delivery, as ActiveMQ's ``SchedulerBroker`` does.  With a
message store, jobs wait there (``persistence.StoredSchedule``); without one they are
held in memory, charged to the memory limit (``Scheduler``).
"""

from __future__ import annotations

import heapq
import logging
from typing import TYPE_CHECKING, NamedTuple

from broker.core.cron import BadCron, Cron
from broker.core.errors import InvalidHeader
from protocol.errors import StompError

if TYPE_CHECKING:
    from collections.abc import Callable
    from datetime import tzinfo

    from broker.core.clock import Clock
    from broker.core.destinations import Destination
    from broker.core.message import Message
    from broker.core.persistence import StoredSchedule
    from broker.core.session import Session
    from broker.core.usage import UsageMeter

log = logging.getLogger("stompd.scheduler")

DELAY = "AMQ_SCHEDULED_DELAY"
PERIOD = "AMQ_SCHEDULED_PERIOD"
REPEAT = "AMQ_SCHEDULED_REPEAT"
CRON = "AMQ_SCHEDULED_CRON"
SCHEDULING_HEADERS = frozenset({DELAY, PERIOD, REPEAT, CRON})
ACTION = "AMQ_SCHEDULER_ACTION"
#: A SEND with none of these is not scheduled: ``HEADERS.isdisjoint(headers)`` is the
#: hot path's one check (a single C call).
HEADERS = SCHEDULING_HEADERS | {ACTION}


class Timing(NamedTuple):
    """What a SEND's scheduling headers ask for."""

    delay: int
    period: int
    repeat: int
    cron: Cron | None

    def first_due(self, now_ms: int, tz: tzinfo | None) -> int:
        start = now_ms
        if self.cron is not None:
            start = _next(self.cron, now_ms, tz)
        return start + (self.delay or self.period)


def check(headers: dict[str, str]) -> None:
    """Refuse a SEND whose scheduling headers are bad, when it arrives (it may be routed
    later: a transaction's COMMIT, a SEND waiting for space)."""
    if ACTION in headers:
        # ActiveMQ's ActiveMQ.Scheduler.Management requests: not silently published.
        raise InvalidHeader(
            f"{ACTION} (browsing or removing scheduled messages) is not supported by this broker"
        )
    timing_of(headers)


def timing_of(headers: dict[str, str]) -> Timing | None:
    """The schedule a SEND asks for, or None for a message to deliver now."""
    if SCHEDULING_HEADERS.isdisjoint(headers):
        return None
    delay, period, repeat = (_non_negative(headers, name) for name in (DELAY, PERIOD, REPEAT))
    if repeat and not period:
        raise InvalidHeader(f"{REPEAT} needs a positive {PERIOD}")
    cron = cron_of(headers)
    if cron is None and not delay and not period:
        return None
    return Timing(delay, period, repeat, cron)


def cron_of(headers: dict[str, str]) -> Cron | None:
    text = headers.get(CRON)
    if text is None:
        return None
    try:
        return Cron.parse(text)
    except BadCron as exc:
        raise InvalidHeader(f"header {CRON!r}: {exc}") from None


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


class Firing(NamedTuple):
    """What a job coming due does."""

    deliver: bool
    #: When the job is due again (None: it is done), and its repeats left then.
    again: int | None
    repeats_left: int
    #: A cron job with repeats: when the plain job it starts is first due.
    start_plain: int | None


def fire(job: Message, period: int, repeats_left: int, due: int, now: int, tz: tzinfo | None) -> Firing:
    """``job`` came due at ``due`` (it is ``now``).  A cron job is one whose message still
    holds its cron header (``plain_job`` drops it); its ``repeats_left`` stays ``_REPEAT``."""
    if CRON not in job.headers:
        if repeats_left:
            return Firing(True, due + period, repeats_left - 1, None)
        return Firing(True, None, 0, None)
    cron = cron_of(job.headers)
    assert cron is not None
    again = _next(cron, now, tz)
    if not repeats_left:
        return Firing(True, again, 0, None)
    delay = _non_negative(job.headers, DELAY)
    return Firing(False, again, repeats_left, now + (delay or period))


def _next(cron: Cron, ms: int, tz: tzinfo | None) -> int:
    due = cron.next_after(ms, tz)
    assert due is not None, "Cron.parse refuses entries that name no time"
    return due


def plain_job(job: Message) -> Message:
    """The plain job a cron job starts: the same message without its cron header."""
    headers = {name: value for name, value in job.headers.items() if name != CRON}
    return job.copy_to(0, "", job.destination, headers)


def delivery(job: Message, now: int) -> Message:
    """One delivery of a job: a message of its own, without the scheduling headers, its
    time to live (if it has one) counted from now."""
    headers = {name: value for name, value in job.headers.items() if name not in SCHEDULING_HEADERS}
    message = job.copy_to(0, "", job.destination, headers)
    if message.expires > 0 and message.timestamp > 0:
        expires = now + message.expires - message.timestamp
        if expires > message.expires:
            message.expires = expires
            message.timestamp = now
    return message


class Schedule:
    """A job held in memory (a broker without a message store, or for a temporary
    destination, which cannot outlive its connection anyway)."""

    __slots__ = ("message", "period", "repeats_left", "targets")

    def __init__(self, message: Message, targets: tuple[Destination, ...], period: int, repeats: int) -> None:
        self.message = message
        self.targets = targets
        self.period = period
        self.repeats_left = repeats


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


class Jobs:
    """Scheduled SENDs until they come due: in the store when there is one (``stored``,
    set at recovery), else in memory; and what a job does when it comes due."""

    __slots__ = ("_next_seq", "_resolve", "_route", "clock", "memory", "meter", "stored")

    def __init__(
        self,
        clock: Clock,
        meter: UsageMeter,
        route: Callable[[Message, tuple[Destination, ...]], None],
        resolve: Callable[[str], tuple[Destination, ...]],
        next_seq: Callable[[], int],
    ) -> None:
        self.clock = clock
        #: What jobs held in memory are charged to.
        self.meter = meter
        self._route = route
        self._resolve = resolve
        self._next_seq = next_seq
        self.memory = Scheduler()
        self.stored: StoredSchedule | None = None

    def add(
        self, timing: Timing, message: Message, targets: tuple[Destination, ...], sender: Session | None
    ) -> None:
        due = timing.first_due(self.clock.ms, self.clock.tz)
        if self.stored is not None and not any(target.owner is not None for target in targets):
            self.stored.add(due, self._next_seq(), message, timing.period, timing.repeat, sender)
            return
        message.meter = self.meter
        message.hold()
        self.memory.add(due, Schedule(message, targets, timing.period, timing.repeat))

    def tick(self) -> None:
        if self.memory:
            self._run_memory()
        if self.stored is not None:
            self.stored.poll(self.clock.ms, self._fire_stored)

    def _run_memory(self) -> None:
        clock = self.clock
        now = clock.ms
        for due, schedule in self.memory.pop_due(now):
            job = schedule.message
            firing = fire(job, schedule.period, schedule.repeats_left, due, now, clock.tz)
            if firing.start_plain is not None:
                plain = plain_job(job)
                plain.meter = self.meter
                plain.hold()
                self.memory.add(
                    firing.start_plain,
                    Schedule(plain, schedule.targets, schedule.period, schedule.repeats_left),
                )
            if firing.deliver:
                self._route(delivery(job, now), schedule.targets)
            if firing.again is None:
                job.drop()
            else:
                schedule.repeats_left = firing.repeats_left
                self.memory.add(firing.again, schedule)

    def _fire_stored(self, job: Message, destination: str, due: int, period: int, repeats: int) -> None:
        """A stored job came due (the store has deleted it): store what comes next, route
        this delivery."""
        stored = self.stored
        assert stored is not None
        clock = self.clock
        now = clock.ms
        try:
            firing = fire(job, period, repeats, due, now, clock.tz)
            if firing.start_plain is not None:
                stored.add(firing.start_plain, self._next_seq(), plain_job(job), period, repeats, None)
            if firing.again is not None:
                stored.add(firing.again, self._next_seq(), job, period, firing.repeats_left, None)
            if firing.deliver:
                self._route(delivery(job, now), self._resolve(destination))
        except StompError as exc:
            log.warning("dropping a scheduled message for %s: %s", destination, exc)
