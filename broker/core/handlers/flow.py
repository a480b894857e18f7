"""Producer flow control: a SEND that does not fit waits, without stalling its connection.

When the memory limit and (for messages that would swap) the temp limit leave no
room, or the store is full for a persistent message, the SEND is parked: its RECEIPT
is held back and every later frame from that connection waits behind it, except ACK
and NACK, which keep flowing so that a connection that both produces and consumes
cannot deadlock itself.  Parked SENDs are retried in arrival order whenever space
frees; with ``sendFailIfNoSpace`` they fail at once, with
``sendFailIfNoSpaceAfterTimeout`` after that long.  Past a cap of parked bytes the
connection stops being read.  Each block and release is logged once, counted and timed.

The frames parked behind a SEND are run, when their turn comes, by the ``FrameRunner``
this was handed (the engine's dispatcher); parked SENDs are delivered through the
scheduler, as any SEND.
"""

from __future__ import annotations

import logging
from collections import deque
from typing import TYPE_CHECKING, Final, Protocol

from broker.core.base.errors import NoSpace, StoreFull, closes
from broker.core.base.message import FIFO_LEVEL
from broker.core.delivery.queue import Queue
from broker.core.delivery.session import (
    CLOSING,
    FANNING_OUT,
    FanningOut,
    ParkedCreate,
    ParkedSend,
    frame_size,
)
from broker.core.delivery.topic import Topic
from protocol import frames as f

if TYPE_CHECKING:
    from collections.abc import Iterator

    from broker.core.base.clock import Clock
    from broker.core.base.message import Message
    from broker.core.base.observe import Observer
    from broker.core.base.settings import CoreSettings
    from broker.core.base.usage import SystemUsage
    from broker.core.delivery.destinations import Destination
    from broker.core.delivery.durable import DurableSubscriptions
    from broker.core.delivery.session import Parked, Session
    from broker.core.delivery.topic import FanOut, TopicRouter
    from broker.core.handlers.scheduler import Scheduler
    from broker.core.storage.persistence import Persistence

log = logging.getLogger("stompd.flow")

#: Frames that go past parked SENDs, so a blocked producer can still consume.
NEVER_PARKED: Final = frozenset({f.ACK, f.NACK})


class Deferred:
    """A handler's answer meaning "the RECEIPT goes out later" (a parked SEND)."""


DEFERRED: Final = Deferred()


class FrameRunner(Protocol):
    def run_frame(self, session: Session, frame: f.Frame) -> None:
        """Handle a frame that waited behind a parked SEND, as if it had just come in."""


class FlowStats:
    __slots__ = ("blocked_ms", "blocked_now", "blocks", "failed_sends")

    def __init__(self) -> None:
        self.blocks = 0
        self.blocked_now = 0
        self.blocked_ms = 0.0
        self.failed_sends = 0


def no_space_error(why: str, *, store: bool = False, setting: str = "sendFailIfNoSpace") -> NoSpace:
    """The ERROR for a refused SEND; ``store``: the message store is what is full;
    ``setting``: what said to refuse rather than wait."""
    if store:
        why = f"the message store is full ({why})"
    kind = StoreFull if store else NoSpace
    return kind(f"{why}: the SEND was refused ({setting}); nothing else on this connection was lost")


class FlowControl:
    """Room for SENDs, and the connections whose frames wait for it, oldest first."""

    __slots__ = (
        "_blocked_on",
        "_sessions",
        "clock",
        "durables",
        "observer",
        "orphans",
        "persistence",
        "router",
        "runner",
        "scheduler",
        "settings",
        "stats",
        "usage",
    )

    def __init__(
        self,
        settings: CoreSettings,
        clock: Clock,
        usage: SystemUsage,
        router: TopicRouter,
        durables: DurableSubscriptions,
        persistence: Persistence,
        scheduler: Scheduler,
        runner: FrameRunner,
        observer: Observer,
    ) -> None:
        self.settings = settings
        self.clock = clock
        self.usage = usage
        self.router = router
        self.durables = durables
        self.persistence = persistence
        self.scheduler = scheduler
        self.runner = runner
        #: Blocked sessions, oldest first (a dict: one leaves in O(1)).
        self._sessions: dict[Session, None] = {}
        #: Parked SENDs whose connection closed before there was room for them.
        self.orphans: deque[ParkedSend] = deque()
        self.stats = FlowStats()
        self.observer = observer
        #: With events on: what each blocked session's SEND was for (destination, size).
        self._blocked_on: dict[Session, tuple[str, int]] = {}

    def __bool__(self) -> bool:
        return bool(self._sessions or self.orphans)

    def __iter__(self) -> Iterator[Session]:
        return iter(list(self._sessions))

    def targets(self) -> set[Destination]:
        """Where the parked SENDs will go."""
        parked = [item for session in self._sessions for item in session.parked]
        return {
            target
            for item in [*parked, *self.orphans]
            if isinstance(item, ParkedSend)
            for target in item.targets
        }

    # -- is there room? ---------------------------------------------------------------

    def fits(self, message: Message, targets: tuple[Destination, ...]) -> bool:
        """Is there room for this message in every cursor it would be put in?"""
        size = message.size
        temp = self.usage.temp
        for target in targets:
            if message.persistent and type(target) is Queue and target.stores:
                # Stored: past the high-water mark it needs no RAM and no temp space.
                if self.store_full(message):
                    return False
                continue
            if type(target) is Topic and self.durables.records and not self._kept_fits(target, message):
                return False
            meter = target.meter
            # Below the high-water mark (its own and the broker's) it simply goes to memory.
            if meter is not None and meter.fits(size, target.policy.cursor_high_water):
                continue
            level = _level(target, message)
            if type(target) is Queue:
                if not target.cursor.can_take(message, temp, level):
                    return False
                continue
            assert isinstance(target, Topic)
            stored = message.persistent and self.durables
            if stored and self.store_full(message):
                return False
            for sub in self.router.subscribers(target):
                if stored and sub.durable is not None:
                    continue
                if (sub.cursor.count or not sub.ready) and not sub.cursor.can_take(message, temp, level):
                    return False
        return True

    def room_in_memory(self, message: Message, targets: tuple[Destination, ...]) -> bool:
        """Room to hold ``message`` in RAM for each of ``targets`` (a SEND in a transaction,
        held until COMMIT and never swapped): within each destination's memory limit and,
        all the copies together, the broker's."""
        size = message.size
        if not self.usage.memory.fits(size * len(targets)):
            return False
        return all(target.meter is None or target.meter.fits(size) for target in targets)

    def _kept_fits(self, topic: Topic, message: Message) -> bool:
        """Room in the cursors of the durable subscriptions that keep ``message`` while away
        (they take it on disk, below the memory high-water mark too).  A stored message
        needs nothing there: it is a store pointer."""
        if message.persistent:
            return True
        temp = self.usage.temp
        level = _level(topic, message)
        for durable in self.durables.matching(topic.kind, topic.bare):
            cursor = durable.keeping(message)
            if cursor is not None and not cursor.can_take(message, temp, level):
                return False
        return True

    def store_full(self, message: Message) -> bool:
        """No room to store ``message``: storeUsage is at its limit (which the disk's free
        space bounds, see ``UsageMeter.bound``), or the store's writes fail now."""
        if self.persistence.stalled is not None:
            return True
        return not self.usage.store.fits(message.size)

    def why_full(self) -> str:
        usage = self.usage
        why = (
            f"memory usage {usage.memory.percent:.0f}%, store usage {usage.store.percent:.0f}% "
            f"and temp usage {usage.temp.percent:.0f}% of their limits"
        )
        stalled = self.persistence.stalled
        if stalled is not None:
            why = f"the message store cannot write now ({stalled}); {why}"
        return why

    def refusal(self, message: Message, setting: str = "sendFailIfNoSpace") -> NoSpace:
        """The ERROR for a SEND that does not fit under ``sendFailIfNoSpace`` (or a
        destination's producerFlowControl="false")."""
        self.stats.failed_sends += 1
        return no_space_error(self.why_full(), store=self.store_full(message), setting=setting)

    # -- parking ------------------------------------------------------------------------

    def park(self, session: Session, item: Parked) -> None:
        """``item`` waits, behind what ``session`` has parked already."""
        session.parked.append(item)
        session.parked_bytes += _size(item)
        self._block(session, item)
        if session.parked_bytes > self.settings.max_parked_bytes and not session.reading_paused:
            session.reading_paused = True
            session.outbox.pause_reading()

    def wait_to_create(self, session: Session, frame: f.Frame, cost: int) -> bool:
        """``frame`` would make a destination there is no room for: it waits (True), or,
        under sendFailIfNoSpace, is refused (False: the caller raises)."""
        settings = self.settings
        if settings.send_fail_if_no_space:
            self.stats.failed_sends += 1
            return False
        timeout = settings.send_fail_if_no_space_after_timeout
        self.park(session, ParkedCreate(frame, cost, self.clock.ms + timeout if timeout else 0))
        return True

    def await_fan_out(self, session: Session) -> None:
        """What ``session`` just published still goes out to many subscribers: its next
        frames wait behind it (ACKs and NACKs still go), quietly: no producer is blocked
        for want of room."""
        if session.parked and session.parked[0] is FANNING_OUT:
            return
        session.parked.appendleft(FANNING_OUT)
        self._sessions[session] = None

    def fanned_out(self, fan_out: FanOut) -> None:
        """A fan-out is done: its sender's frames may go on, if they waited for it."""
        if fan_out.sender is not None and not fan_out.sender.fanning:
            self.retry()

    def _block(self, session: Session, item: Parked) -> None:
        if session.blocked_since is not None:
            return
        session.blocked_since = self.clock.ms
        self._sessions[session] = None
        self.stats.blocks += 1
        self.stats.blocked_now += 1
        log.info("flow control: blocking producer %s (%s)", session.id, self.why_full())
        events = self.observer.events
        if events is not None and isinstance(item, ParkedSend):
            target = item.targets[0]
            self._blocked_on[session] = blocked = (target.name, item.size)
            events.flow_blocked(*blocked, session.id, self._full_limit(item))

    def _full_limit(self, item: ParkedSend) -> str:
        """Which limit holds ``item`` back, as the event log names it."""
        message = item.message
        if message.persistent and self.store_full(message):
            return "store"
        usage = self.usage
        if not usage.temp.fits(message.size):
            return "temp"
        for target in item.targets:
            meter = target.meter
            if meter is None or meter.parent is None:
                continue
            if not meter.fits(message.size) and meter.parent.fits(message.size):
                return "destination-memory"
        return "memory"

    def _release(self, session: Session, cause: str = "space") -> None:
        self._sessions.pop(session, None)
        since = session.blocked_since
        if since is None:
            return
        session.blocked_since = None
        waited = max(self.clock.ms - since, 0)
        self.stats.blocked_now -= 1
        self.stats.blocked_ms += waited
        log.info("flow control: released producer %s after %d ms", session.id, waited)
        blocked = self._blocked_on.pop(session, None)
        events = self.observer.events
        if events is not None and blocked is not None:
            events.flow_released(*blocked, session.id, cause, waited)

    def retry(self) -> None:
        """Space may have freed: give each blocked connection its parked frames, in order."""
        orphans = self.orphans
        while orphans and self.fits(orphans[0].message, orphans[0].targets):
            item = orphans.popleft()
            self.scheduler.deliver(item.message, item.targets)
        for session in self:
            while True:
                try:
                    self._unpark(session)
                except Exception as exc:
                    # The ERROR; the frames behind a refused one go on (``errors.closes``).
                    session.outbox.fail(exc)
                    if closes(exc) or session.phase is CLOSING:
                        break
                    continue
                break

    def _unpark(self, session: Session) -> None:
        parked = session.parked
        while parked:
            item = parked[0]
            if isinstance(item, FanningOut):
                if session.fanning:
                    return
                parked.popleft()
            elif isinstance(item, ParkedSend):
                tx = item.tx
                if tx is None:
                    if not self.fits(item.message, item.targets):
                        return
                elif not tx.abandoned and not self.room_in_memory(item.message, item.targets):
                    return
                parked.popleft()
                session.parked_bytes -= item.size
                if tx is None:
                    self.scheduler.deliver(item.message, item.targets, session)
                elif not tx.abandoned:
                    tx.add(item.message, item.targets)
                if item.receipt is not None:
                    session.send_receipt(item.receipt)
                if session.fanning:
                    parked.appendleft(FANNING_OUT)
            elif isinstance(item, ParkedCreate):
                if not self.usage.memory.fits(item.cost):
                    return
                parked.popleft()
                session.parked_bytes -= item.size
                self._run_unparked(session, item.frame)
            else:
                assert isinstance(item, f.Frame)
                parked.popleft()
                session.parked_bytes -= frame_size(item)
                self._run_unparked(session, item)
            if session.phase is CLOSING:
                break
        if not parked:
            self._release(session)
        if session.reading_paused and session.parked_bytes <= self.settings.max_parked_bytes // 2:
            session.reading_paused = False
            session.outbox.resume_reading()

    def _run_unparked(self, session: Session, frame: f.Frame) -> None:
        parked = session.parked
        waiting = len(parked)
        self.runner.run_frame(session, frame)
        if len(parked) > waiting:
            # A SEND that still does not fit was parked again: at the head, where it
            # was, not behind the frames that came after it (whose RECEIPTs would
            # otherwise overtake it).
            parked.appendleft(parked.pop())
        if session.phase is CLOSING:
            session.outbox.close()

    def expire_parked(self) -> None:
        """``sendFailIfNoSpaceAfterTimeout``: a SEND parked past its deadline fails."""
        now = self.clock.ms
        for session in self:
            head = session.parked[0] if session.parked else None
            if isinstance(head, (ParkedSend, ParkedCreate)) and head.deadline and head.deadline <= now:
                # Refused: it must not go later, when the closing session's parked SENDs
                # are kept as orphans (the client was told it was not sent).
                session.parked.popleft()
                session.parked_bytes -= head.size
                self.stats.failed_sends += 1
                exc = no_space_error(
                    f"still no room after {self.settings.send_fail_if_no_space_after_timeout} ms"
                )
                exc.receipt_id = head.receipt
                session.outbox.fail(exc)

    def close(self, session: Session, orphans: list[ParkedSend]) -> None:
        """``session`` is gone: its parked SENDs (``orphans``) go on waiting without it."""
        self.orphans.extend(orphans)
        session.parked.clear()
        session.parked_bytes = 0
        self._release(session, "disconnect")


def _size(item: Parked) -> int:
    return frame_size(item) if isinstance(item, f.Frame) else item.size


def _level(target: Destination, message: Message) -> int:
    """The level ``message`` will be kept at in ``target``: routing puts it in arrival
    order there unless the destination is prioritized (``Routing.route``)."""
    return message.level if target.policy.prioritized else FIFO_LEVEL
