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
counted again from its delivery, as ActiveMQ's ``SchedulerBroker`` does.

Every job waits in the message store (``Persistence.schedule``), whichever store the
broker runs on: jobs survive restarts and cost no RAM while they wait, and only the
earliest due time is in memory.  A job names its destinations as they were resolved
when it was sent, so one for a temporary destination finds it while its connection
lives (and is dropped, logged, once it is gone).

A job has an id for life (``jobs``: its deliveries carry it as ``scheduledJobId``).
ActiveMQ's management requests (``jobs.Request``) and the admin API browse and remove
jobs by walking the store's jobs a page at a time on the worker thread (``_Walk``):
one walk or one read of due jobs at a time, so a job is never fired and removed at once.
"""

from __future__ import annotations

import logging
from collections import deque
from typing import TYPE_CHECKING, Final, NamedTuple

from broker.core.base import bridging
from broker.core.base.cron import BadCron, Cron
from broker.core.base.errors import LONG_MAX, InvalidHeader, shown
from broker.core.storage import jobs
from broker.core.storage.jobs import BROWSE, JOB_ID, REMOVE, Job, Request, Window, browsed_copy
from protocol.errors import StompError
from store.api import Failed, Ok

if TYPE_CHECKING:
    from collections.abc import Callable
    from datetime import tzinfo

    from broker.core.base.audit import ProducerAudit
    from broker.core.base.clock import Clock
    from broker.core.base.message import Message
    from broker.core.delivery.destinations import Destination, Destinations
    from broker.core.delivery.routing import Routing
    from broker.core.delivery.session import Session
    from broker.core.storage.persistence import Persistence
    from store.api import Outcome

log = logging.getLogger("stompd.scheduler")

#: Later than any job is due (epoch ms; ``_add`` keeps them so): a read "until" that
#: takes them all.
_FAR_FUTURE: Final = LONG_MAX
#: The most repeats a job may ask for: a Java int, as ActiveMQ reads ``_REPEAT``.
MAX_REPEAT: Final = (1 << 31) - 1
DELAY = "AMQ_SCHEDULED_DELAY"
PERIOD = "AMQ_SCHEDULED_PERIOD"
REPEAT = "AMQ_SCHEDULED_REPEAT"
CRON = "AMQ_SCHEDULED_CRON"
SCHEDULING_HEADERS = frozenset({DELAY, PERIOD, REPEAT, CRON})
ACTION = jobs.ACTION
#: A SEND with none of these is not scheduled: ``HEADERS.isdisjoint(headers)`` is the
#: hot path's one check (a single C call).
HEADERS = SCHEDULING_HEADERS | {ACTION}
#: What every name in ``HEADERS`` starts with (tests/broker/test_scheduler.py checks).
PREFIX: Final = b"AMQ_SCHEDULE"


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
    timing_of(headers)


def timing_of(headers: dict[str, str]) -> Timing | None:
    """The schedule a SEND asks for, or None for a message to deliver now."""
    if SCHEDULING_HEADERS.isdisjoint(headers):
        return None
    delay = _non_negative(headers, DELAY)
    period = _non_negative(headers, PERIOD)
    repeat = _non_negative(headers, REPEAT, MAX_REPEAT)
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


def _non_negative(headers: dict[str, str], name: str, most: int = LONG_MAX) -> int:
    text = headers.get(name)
    if text is None:
        return 0
    try:
        value = int(text)
    except ValueError:
        raise InvalidHeader(f"header {name!r} must be a whole number, got {shown(text)}") from None
    if value < 0:
        raise InvalidHeader(f"header {name!r} must not be negative, got {shown(text)}")
    if value > most:
        raise InvalidHeader(f"header {name!r} must be at most {most}, got {shown(text)}")
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
    headers = job.headers
    if CRON not in headers:
        if repeats_left:
            return Firing(True, due + period, repeats_left - 1, None)
        return Firing(True, None, 0, None)
    cron = cron_of(headers)
    assert cron is not None
    again = _next(cron, now, tz)
    if not repeats_left:
        return Firing(True, again, 0, None)
    delay = _non_negative(headers, DELAY)
    return Firing(False, again, repeats_left, now + (delay or period))


def _next(cron: Cron, ms: int, tz: tzinfo | None) -> int:
    due = cron.next_after(ms, tz)
    assert due is not None, "Cron.parse refuses entries that name no time"
    return due


def plain_job(job: Message) -> Message:
    """The plain job a cron job starts: the same message without its cron header, and
    the same job id (removing the cron job removes it too)."""
    headers = {name: value for name, value in job.headers.items() if name != CRON}
    return job.copy_to(0, job.id, job.destination, headers)


def delivery(job: Message, now: int) -> Message:
    """One delivery of a job: a message of its own, without the scheduling headers but
    with its job's id (``scheduledJobId``), its time to live (if it has one) counted
    from now."""
    headers = {name: value for name, value in job.headers.items() if name not in SCHEDULING_HEADERS}
    headers[JOB_ID] = job.id
    message = job.copy_to(0, "", job.destination, headers)
    if message.expires > 0 and message.timestamp > 0:
        expires = now + message.expires - message.timestamp
        if expires > message.expires:
            # No later than the store can keep (expires and timestamp may be anything).
            message.expires = min(expires, LONG_MAX)
            message.timestamp = now
    return message


#: Jobs read from the store per poll.
DUE_PAGE = 200

Due = tuple[list[tuple[int, int, bytes]], int | None]


class _Walk:
    """One pass over the jobs, a page at a time: a management request or the admin API's."""

    __slots__ = ("after", "done", "found", "job_id", "reply", "window")

    def __init__(
        self,
        job_id: str | None,
        window: Window,
        reply: str | None,
        done: Callable[[int], None],
    ) -> None:
        #: Only this job (None: every one in ``window``).
        self.job_id = job_id
        self.window = window
        #: BROWSE: where copies go (a ``reply-to``); None: the jobs are removed.
        self.reply = reply
        #: Told how many jobs it found, once it is over.
        self.done = done
        #: The last job looked at (due ms, seq): the next page starts past it.
        self.after: tuple[int, int] | None = None if window is None else (window[0], -1)
        self.found = 0


class Scheduler:
    """SENDs to route now, or to keep as jobs until they are due."""

    __slots__ = (
        "_added_min",
        "_busy",
        "_walks",
        "audit",
        "clock",
        "destinations",
        "next_due",
        "persistence",
        "routing",
    )

    def __init__(
        self,
        clock: Clock,
        persistence: Persistence,
        destinations: Destinations,
        routing: Routing,
        audit: ProducerAudit,
    ) -> None:
        self.clock = clock
        #: The ids of the forwarded messages stored here (``deliver`` records them).
        self.audit = audit
        self.persistence = persistence
        self.destinations = destinations
        self.routing = routing
        #: When the earliest job is due (None: there is none), from the store at recovery.
        self.next_due: int | None = None
        #: A read of the store's jobs (due ones, or a walk's page) is under way.
        self._busy = False
        #: Management requests and admin removals, in the order they came.
        self._walks: deque[_Walk] = deque()
        #: The earliest due time added while a read was under way (it may not have seen it).
        self._added_min: int | None = None

    def recovered(self, next_due: int | None) -> None:
        self.next_due = next_due

    def deliver(
        self, message: Message, targets: tuple[Destination, ...], sender: Session | None = None
    ) -> None:
        """Route a SEND now, or keep it until its scheduling headers say it is due;
        ``sender``'s later frames wait until what it stored is durable."""
        if message.id_prefix:
            # Forwarded by a bridge (it came with its id; any other SEND gets one when
            # routed): stored now, so a copy of it is one from now on, and not before.
            self.audit.record(bridging.origin_of(message), message.id_prefix)
        # Every scheduling header's name starts so: one C-level find over the header
        # block, and no dict built, for the SENDs (nearly all) that have none.
        if message.header_block.find(PREFIX) >= 0 and not HEADERS.isdisjoint(headers := message.headers):
            timing = timing_of(headers)
            if timing is not None:
                due = timing.first_due(self.clock.ms, self.clock.tz)
                self._add(
                    due, message, ",".join(target.name for target in targets), timing.period, timing.repeat
                )
                if sender is not None:
                    self.persistence.hold(sender.outbox)
                return
        self.routing.route_all(message, targets, sender)

    def _add(self, due: int, job: Message, destination: str, period: int, repeats: int) -> None:
        # A delay or period near the most a header may say (LONG_MAX) would be due later
        # than a window or a read can name: then as late as they can (292 million years).
        due = min(due, LONG_MAX)
        seq = self.routing.next_seq()
        if not job.id_prefix:
            # A new job: named for good by its first sequence (a message's id, never used by one).
            self.routing.name(job, seq)
        self.persistence.schedule(due, seq, destination, job, period, repeats)
        if self.next_due is None or due < self.next_due:
            self.next_due = due
        if self._busy and (self._added_min is None or due < self._added_min):
            self._added_min = due

    def tick(self) -> None:
        """Walk the jobs for a request that waits, or if a job is due, read the due ones
        (worker thread) and fire each, in due order."""
        if self._busy:
            return
        if self._walks:
            self._walk()
            return
        now = self.clock.ms
        if self.next_due is None or self.next_due > now:
            return
        self._busy = True
        self._added_min = None
        persistence = self.persistence
        persistence.read(lambda: persistence.read_due(now, DUE_PAGE), lambda outcome: self._due(now, outcome))

    def _due(self, now: int, outcome: Outcome[Due]) -> None:
        self._busy = False
        if isinstance(outcome, Failed):
            # Read again at the next tick: nothing was taken.
            log.warning("reading due scheduled messages failed: %s", outcome.error)
            return
        rows, next_due = outcome.value
        added = self._added_min
        self.next_due = next_due if added is None else min(added, next_due or added)
        if len(rows) == DUE_PAGE:
            self.next_due = now
        for due, seq, value in rows:
            job = self.persistence.take_due(due, seq, value)
            if job is not None:
                self._fire(due, job.message, job.destination, job.period, job.repeats)
        if self._walks:
            self._walk()

    # -- management: browse and remove jobs --------------------------------------------

    def manage(self, request: Request, reply: str | None, done: Callable[[int], None]) -> None:
        """Carry out an ``ActiveMQ.Scheduler.Management`` request (``reply``: where BROWSE's
        copies go); ``done`` is told how many jobs it found, once it is over (what it
        removed is in the store's open batch then)."""
        job_id = request.job_id if request.action == REMOVE else None
        window = None if request.action == REMOVE else request.window
        self._walks.append(_Walk(job_id, window, reply if request.action == BROWSE else None, done))
        self.tick()

    def list_jobs(
        self, after: tuple[int, int] | None, limit: int, done: Callable[[Outcome[list[Job]]], None]
    ) -> None:
        """Up to ``limit`` jobs past ``after`` (due ms, seq), soonest first, read on the
        worker thread; nothing is changed, so this needs no turn."""
        persistence = self.persistence

        def listed(outcome: Outcome[list[tuple[int, int, bytes]]]) -> None:
            if isinstance(outcome, Failed):
                done(outcome)
                return
            jobs = [persistence.job(due, seq, value) for due, seq, value in outcome.value]
            done(Ok([job for job in jobs if job is not None]))

        persistence.read(lambda: persistence.read_jobs(after, _FAR_FUTURE, limit), listed)

    def _walk(self) -> None:
        """Read the next page of the first walk's jobs (worker thread)."""
        walk = self._walks[0]
        self._busy = True
        persistence = self.persistence
        after = walk.after
        until = _FAR_FUTURE if walk.window is None else walk.window[1]
        persistence.read(lambda: persistence.read_jobs(after, until, DUE_PAGE), self._walked)

    def _walked(self, outcome: Outcome[list[tuple[int, int, bytes]]]) -> None:
        self._busy = False
        walk = self._walks[0]
        if isinstance(outcome, Failed):
            # Read again at the next tick, from where it stopped.
            log.warning("reading scheduled messages failed: %s", outcome.error)
            return
        rows = outcome.value
        targets = self._reply_targets(walk)
        for due, seq, value in rows:
            walk.after = (due, seq)
            job = self.persistence.job(due, seq, value)
            if job is None or (walk.job_id is not None and job.id != walk.job_id):
                continue
            walk.found += 1
            if walk.reply is None:
                self.persistence.drop_job(job)
            elif targets:
                self.routing.route_all(browsed_copy(job, walk.reply), targets)
        if len(rows) < DUE_PAGE:
            self._walks.popleft()
            walk.done(walk.found)
        self.tick()

    def _reply_targets(self, walk: _Walk) -> tuple[Destination, ...]:
        """Where a BROWSE's copies go, looked up again for each page (a temporary queue
        may have gone with its connection: then they go nowhere)."""
        if walk.reply is None:
            return ()
        try:
            return self.destinations.send_targets(None, walk.reply)
        except StompError as exc:
            log.info("browsing scheduled messages: the reply-to %s: %s", walk.reply, exc)
            return ()

    def _fire(self, due: int, job: Message, destination: str, period: int, repeats: int) -> None:
        """A job came due (the store has deleted it): keep what comes next, route this delivery."""
        clock = self.clock
        now = clock.ms
        try:
            firing = fire(job, period, repeats, due, now, clock.tz)
            if firing.start_plain is not None:
                self._add(firing.start_plain, plain_job(job), destination, period, repeats)
            if firing.again is not None:
                self._add(firing.again, job, destination, period, firing.repeats_left)
            if firing.deliver:
                self.routing.route_all(delivery(job, now), self.destinations.send_targets(None, destination))
        except StompError as exc:
            log.warning("dropping a scheduled message for %s: %s", destination, exc)
