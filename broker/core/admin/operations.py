"""Admin operations over a whole queue: count, move, copy, remove, purge.

One pass over what the queue held when the operation started (messages routed later
are not part of it), memory part then disk part, in batches:

1. **memory**: the cursor's messages in RAM, a batch per step (``Cursor.pending_after``
   resumes where the last batch stopped, by sequence, so a step costs its batch only);
2. **disk**: the swapped part (temp log) and the stored part (message store) of each
   priority level, read on the store's worker thread (``DiskPart.walk``), never on the
   loop; the selector runs there too, so only the matching messages come back;
3. **memory again**: what a page-in brought from disk into memory while the disk part
   was walked (the disk walk never saw it), and nothing the disk walk already counted.

Each step changes at most ``BATCH`` messages, and other clients' work runs between
steps (the operation is a chore), so producers and consumers go on meanwhile.  A moved persistent message is
deleted from its queue and added to its target in the same store batch (the delete is
queued before the add, and nothing submits between the two), so a ``kill -9`` finds it
in exactly one of them.  Dispatched-but-unacknowledged messages are not in the cursor,
so they are left alone, as ActiveMQ does.

Taking a message out of the disk part follows the queue's own disk scan (the cursor's
``DiskPart`` does both): a swapped record is deleted on the worker, in the job that read
it, so a page-in queued behind the job cannot bring it back; a stored one is marked
taken in the disk part before its delete is queued, so a page-in skips it.

``QueueOperation.steps`` is the pass, a batch a step, a chore (``base.chores``) that the
admin service runs (``run``); browsing is ``handlers.browsing.Browse``.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Protocol

from broker.core.admin.errors import AdminError
from broker.core.base.chores import Wait
from broker.core.handlers.browsing import BATCH, TOP, DiskReadFailed, Pending, cost_of
from broker.core.storage.message_codecs import swap_needle
from store.api import Failed

if TYPE_CHECKING:
    from collections.abc import Callable

    from broker.core.admin.views import Progress
    from broker.core.base.chores import Steps
    from broker.core.base.message import Message
    from broker.core.base.selector import Predicate, Selector
    from broker.core.delivery.destinations import Destination
    from broker.core.delivery.durable import DurableSubscription
    from broker.core.delivery.routing import Routing
    from broker.core.handlers.browsing import Browse
    from broker.core.storage.cursor import Cursor
    from broker.core.storage.persistence import Persistence
    from store.api import Outcome

#: Records one disk job reads before it reports back: under 10 ms of the worker, so the
#: page-ins other queues wait for behind it are not held up longer than that.
DISK_BUDGET = 5_000


class Action(enum.Enum):
    COUNT = "count"
    MOVE = "move"
    COPY = "copy"
    REMOVE = "remove"


class Backlog(Pending, Protocol):
    """What an operation walks: a queue (``queue.Queue``), or a durable subscription's
    pending messages (``DurableBacklog``)."""

    def forget(self, message: Message, moved: bool) -> None:
        """``message`` (taken out of the cursor) leaves for good, ``moved`` or removed:
        counted, and its stored copy deleted with the next store batch."""


class DurableBacklog:
    """A durable subscription's pending messages, as an operation walks them.

    A subscription that has had no subscriber in this broker's lifetime has no cursor
    (what it is owed is only in the store): the operation gets one of its own, over the
    store, closed when it is done (``close``).
    """

    __slots__ = ("_own", "cursor", "durable", "name", "persistence")

    def __init__(
        self, durable: DurableSubscription, persistence: Persistence, cursor: Cursor, last_seq: int
    ) -> None:
        self.durable = durable
        self.persistence = persistence
        self.name = f"{durable.destination} (durable subscription {durable.client_id}/{durable.name})"
        self._own = durable.cursor is None
        self.cursor = durable.cursor if durable.cursor is not None else cursor
        if self._own:
            owed = persistence.pending_of(durable.store_id)
            cursor.recovered(persistence.subscription_reader(durable.store_id), owed, last_seq)

    def forget(self, message: Message, moved: bool) -> None:
        # Not counted (the topic's counters are its subscribers' deliveries and acks), and
        # so no event: a durable subscription's backlog is no destination of its own.
        if message.store_size:
            self.persistence.ack_shared(self.durable.store_id, message)

    def close(self) -> None:
        if self._own:
            for message in self.cursor.close():
                message.drop()


class QueueOperation:
    """One admin operation over ``queue``; see the module's docstring."""

    __slots__ = (
        "_after",
        "_counted",
        "_level",
        "_positions",
        "_span",
        "_top",
        "action",
        "applied",
        "backlog",
        "error",
        "limit",
        "match",
        "matched",
        "needle",
        "plain",
        "routing",
        "scanned",
        "target",
        "total",
    )

    def __init__(
        self,
        backlog: Backlog,
        action: Action,
        selector: Selector | None,
        routing: Routing,
        *,
        target: Destination | None = None,
        limit: int | None = None,
    ) -> None:
        if action in (Action.MOVE, Action.COPY) and target is None:
            raise ValueError(f"{action.value} needs a target")
        self.backlog = backlog
        self.action = action
        self.match: Predicate | None = selector.matches if selector is not None else None
        # A selector that names no JMS property reads headers only: a swapped record's
        # decoded headers are then all it needs (``disk_reads.walk``).
        self.plain = selector is None or "JMS" not in selector.text
        #: Bytes a swapped record holds if it has every header the selector needs.
        self.needle = swap_needle(selector.needs) if selector is not None else None
        self.routing = routing
        self.target = target
        self.limit = limit
        self.scanned = 0
        self.matched = 0
        self.applied = 0
        cursor = backlog.cursor
        self.total = cursor.count
        self.error: BaseException | None = None
        # Messages routed after the start are not part of this pass.
        self._top = routing.seq
        # The disk part as it was at the start, per level (an empty range where none).
        self._span = cursor.disk_part.span()
        self._positions = list(self._span.starts)
        #: Sequences counted as matching while they were on disk (a count or a copy leaves
        #: them in place; a page-in may bring them into memory before the last phase).
        self._counted: set[int] = set()
        self._level = TOP
        self._after = -1

    @property
    def destructive(self) -> bool:
        return self.action in (Action.MOVE, Action.REMOVE)

    def _wanted(self) -> int:
        if self.limit is None:
            return BATCH
        return min(BATCH, self.limit - self.matched)

    def _over(self) -> bool:
        return self.error is not None or self.backlog.cursor.closed or self._wanted() <= 0

    def steps(self) -> Steps[None]:
        """The pass, a batch a step (``error`` says if it failed): the memory part, the disk
        part (a job of the worker a step), what a page-in brought into memory meanwhile."""
        while not self._over():
            memory_done, looked = self._memory_step(again=False)
            yield cost_of(looked)
            if memory_done:
                break
        while not self._over():
            wait = self._disk_step()
            if wait is None:
                break
            yield wait
        self._level = TOP
        self._after = -1
        while not self._over():
            memory_done, looked = self._memory_step(again=True)
            if memory_done:
                return
            yield cost_of(looked)

    # -- memory ---------------------------------------------------------------------

    def _memory_step(self, *, again: bool) -> tuple[bool, int]:
        """One batch of the memory part: whether every level is done, and how many
        messages it looked at."""
        cursor = self.backlog.cursor
        budget = BATCH
        while self._level >= 0:
            level = self._level
            looked = cursor.pending_after(level, self._after, budget)
            if looked:
                self._after = looked[-1].seq
            if again:
                span = self._span
                counted = self._counted
                batch = [m for m in looked if span.holds(level, m.seq) and m.seq not in counted]
            else:
                top = self._top
                batch = [m for m in looked if m.seq <= top]
            self._apply_memory(batch)
            if self._wanted() <= 0:
                return True, BATCH - budget + len(looked)
            if len(looked) < budget:
                self._level -= 1
                self._after = -1
            budget -= len(looked)
            if budget <= 0:
                return False, BATCH
        return True, BATCH - budget

    def _apply_memory(self, batch: list[Message]) -> None:
        match = self.match
        cursor = self.backlog.cursor
        for message in batch:
            self.scanned += 1
            if match is not None and not match(message):
                continue
            if self._wanted() <= 0:
                return
            self.matched += 1
            if self.destructive:
                cursor.remove(message)
                self._take(message)
                message.drop()
            else:
                seq = message.seq
                if self._span.holds(message.level, seq):
                    # A message given back into memory with a sequence inside the disk
                    # range: the last phase must not count it again.
                    self._counted.add(seq)
                self._keep(message)

    # -- disk -----------------------------------------------------------------------

    def _disk_step(self) -> Wait | None:
        """Ask for the next disk job (a ``Wait`` for it); None once the disk part is done."""
        wait = Wait()

        def done(outcome: Outcome[tuple[list[Message], list[int], int]]) -> None:
            self._walked(outcome)
            wait.resume()

        started = self.backlog.cursor.disk_part.walk(
            self._span,
            self._positions,
            DISK_BUDGET,
            self.match,
            self.destructive,
            self._wanted(),
            self.plain,
            self.needle,
            done,
        )
        return wait if started else None

    def _walked(self, outcome: Outcome[tuple[list[Message], list[int], int]]) -> None:
        if isinstance(outcome, Failed):
            self.error = DiskReadFailed(
                f"reading the disk part of {self.backlog.name} failed: {outcome.error}"
            )
            return
        found, positions, read = outcome.value
        self._positions = positions
        self.scanned += read
        for message in found:
            self.matched += 1
            if self.destructive:
                self._take(message)
            else:
                self._counted.add(message.seq)
                self._keep(message)

    # -- what happens to a matching message ----------------------------------------------

    def _take(self, message: Message) -> None:
        """``message`` left the queue (moved or removed)."""
        # The delete is queued before the target's add: both land in one store batch.
        self.backlog.forget(message, self.action is Action.MOVE)
        if self.action is Action.MOVE:
            self._send(message)
        self.applied += 1

    def _keep(self, message: Message) -> None:
        """``message`` stays (a count, a copy)."""
        if self.action is Action.COPY:
            self._send(message)
            self.applied += 1

    def _send(self, message: Message) -> None:
        target = self.target
        assert target is not None
        # As ActiveMQ's moveMatchingMessagesTo and copyMatchingMessagesTo (BrokerSupport.resend):
        # the same message id, its original destination said.
        headers = message.headers
        headers["original-destination"] = message.destination
        copy = message.copy_to(0, message.id, target.name, headers)
        # Its end-to-end latency still counts from the producer's SEND.
        copy.arrived = message.arrived
        if self.action is Action.MOVE:
            events = self.routing.observer.events
            if events is not None:
                events.moved(message, self.backlog.name, target.name)
            self.routing.route(target, copy)
        else:
            # A copy is a new message at the target (ActiveMQ's resend is a send): an
            # enqueue there, as the target's counters have it.
            self.routing.route(target, copy, sent=True)


def run(
    operation: QueueOperation | Browse, progress: Progress | None, flush: Callable[[], None]
) -> Steps[None]:
    """``operation`` to its end (or until ``progress.cancelled``), its counters kept in
    ``progress``: each step's store batch goes to the store at its end (``flush``, the
    engine's: the end of a unit of work).  Raises ``AdminError`` if it failed."""
    steps = operation.steps()
    try:
        while progress is None or not progress.cancelled:
            step = next(steps, None)
            flush()
            if progress is not None and isinstance(operation, QueueOperation):
                progress.scanned = operation.scanned
                progress.matched = operation.matched
                progress.applied = operation.applied
            if step is None:
                break
            yield step
    finally:
        steps.close()
    if operation.error is not None:
        raise AdminError(str(operation.error))
