"""Persistent messages: what the engine writes to the message store, and when.

Everything one batch of work changes (a read's worth of frames, a store completion)
goes into one ``Batch``, handed to the store at ``submit``: producers and consumers
share the group committer's fsyncs.  Three rules make a ``kill -9`` at any moment safe:

* A persistent SEND's RECEIPT, and anything after it on that connection, goes out
  only once the batch holding the message is durable: the connection's outbox is
  held until then (so receipts also stay in order with everything else).
* A stored message is marked dispatched (one small key, holding its delivery count)
  before its MESSAGE leaves: the consumer's outbox is held until the mark is durable.
  After a crash a message comes back ``redelivered:true`` exactly when it may have
  been seen, and its delivery count goes on from where it was (maximumRedeliveries
  cannot be dodged by crashing the broker).
* An auto-acknowledged message is deleted in a batch after the one with its mark: a
  crash in between redelivers it, flagged, rather than losing it.

Acks need no wait: their deletes ride along with the next batch.

Only the end of a unit of work (``Engine.flush``) submits the batch, so that a read
never cuts it short: a read of the store (a page-in, a scan, a walk, the scheduler's)
goes through ``read``, which runs it at once if nothing is built, and otherwise right
after the batch is submitted, so it sees what was built before it was asked for.

That a batch became durable comes back as a value: the store's ``on_durable`` only
notes it, and ``settle`` (the engine calls it at the top of its work, never from
inside a dispatch) releases what waited for it.  So does a store that failed for good.

When the store cannot write (a full disk), the committer keeps the batch and retries
it (``store.commit``): what waits for it (RECEIPTs, MESSAGEs) simply waits longer,
and ``stalled`` holds producers of persistent messages back meanwhile.  Only a store
that fails for good (``store_failed``) answers the waiting connections with an ERROR,
and then the frames that waited for durability are dropped, never sent: a RECEIPT
means durable.
"""

from __future__ import annotations

import functools
import logging
import struct
from typing import TYPE_CHECKING, Final, TypeVar

from broker.core.base.message import STORE_DEST_SHIFT
from broker.core.storage.jobs import Job
from broker.core.storage.message_codecs import (
    BadRecord,
    dispatched_record,
    from_store,
    stored_deliveries,
    to_store,
)
from store.api import Batch, Failed

if TYPE_CHECKING:
    from collections.abc import Callable

    from broker.core.base.channel import Outbox
    from broker.core.base.message import Message
    from broker.core.base.usage import UsageMeter
    from broker.core.storage.disk import Disk
    from store.api import MessageStore, Outcome, Recovery

log = logging.getLogger("stompd.persistence")
T = TypeVar("T")

QUEUE_KIND: Final = "queue"
TOPIC_KIND: Final = "topic"
#: Pointers a removed durable subscription releases per batch.
DRAIN_PAGE = 1000
# A scheduled job's record: priority, period ms, repeats left, len(destination); then
# the destination and the message as ``message_codecs.to_store`` encodes it.
_JOB = struct.Struct(">BqIH")
_FAR_FUTURE = 1 << 62

#: What waited for one batch: the outboxes held, and the auto-acked messages (queue;
#: durable subscription's) to delete once their dispatch marks are durable.
Waiting = tuple[list["Outbox"], list["Message"], list[tuple[int, "Message"]]]


class Persistence:
    __slots__ = (
        "_adds",
        "_batch",
        "_drain_failures",
        "_durable_batches",
        "_failing",
        "_held",
        "_later",
        "_later_shared",
        "_reads",
        "_removes",
        "_removes_unmarked",
        "_waiting",
        "disk",
        "failed",
        "meter",
        "stalled",
        "store",
    )

    def __init__(self, store: MessageStore, meter: UsageMeter, disk: Disk) -> None:
        self.store = store
        #: ``storeUsage``: bytes of stored message records.
        self.meter = meter
        #: Where cursors read stored messages back (the store's worker thread).
        self.disk = disk
        self._batch = Batch()
        # Per destination, gathered until ``submit``: one counters update per batch, not per message.
        self._adds: dict[int, list[tuple[int, int, bytes]]] = {}
        self._removes: dict[int, list[tuple[int, int, int]]] = {}
        #: Removals of messages with no dispatch mark to delete (``Message.unmarked``).
        self._removes_unmarked: dict[int, list[tuple[int, int, int]]] = {}
        self._held: list[Outbox] = []
        self._later: list[Message] = []
        self._later_shared: list[tuple[int, Message]] = []
        #: Submitted and not yet durable (failed on a store error).
        self._waiting: list[Waiting] = []
        #: Durable now, for ``settle`` to release.
        self._durable_batches: list[Waiting] = []
        #: Held outboxes whose writes will never be durable, for ``settle`` to fail.
        self._failing: list[Outbox] = []
        #: Reads asked for while a batch was being built: run once it is submitted.
        self._reads: list[
            tuple[Callable[[], object], Callable[[Outcome[object]], None], Callable[[], None] | None]
        ] = []
        #: The write error that keeps failing now (the committer retries), if one does.
        self.stalled: BaseException | None = None
        #: The error that stopped the store for good, if one did.
        self.failed: BaseException | None = None
        self._drain_failures = 0

    def recover(self) -> Recovery:
        """What the store holds (its records and counters; no message is read), charged."""
        recovery = self.store.recover()
        self.meter.charge(recovery.used_bytes)
        return recovery

    # -- destinations ------------------------------------------------------------

    def destination_id(self, kind: str, name: str) -> int:
        """A destination's id in the store (recorded with its first stored message)."""
        return self.store.add_destination(self._batch, kind, name)

    def forget_destination(self, dest_id: int) -> None:
        """A deleted queue: its record goes with the next batch, so that a restart does
        not make it again (it holds nothing by now)."""
        if self._adds or self._removes or self._removes_unmarked:
            # Its last removals may still be gathered here: the store must count them.
            self._gather()
        try:
            self.store.remove_destination(self._batch, dest_id)
        except ValueError:
            # A message of it is still on its way out (an auto-ack waits for its batch to
            # be durable): the record stays, and a restart finds the queue empty.
            log.warning("destination %d deleted with a message still in the store: its record stays", dest_id)

    def queue_reader(self, dest_id: int) -> QueueStoreReader:
        return QueueStoreReader(self, dest_id)

    def subscription_reader(self, sub_id: int) -> SubscriptionStoreReader:
        return SubscriptionStoreReader(self, sub_id)

    # -- durable subscriptions ---------------------------------------------------

    def put_subscription(self, client_id: str, name: str, data: bytes) -> int:
        return self.store.put_subscription(self._batch, client_id, name, data)

    def pending_of(self, sub_id: int) -> tuple[int, ...]:
        return self.store.pending_of(sub_id)

    def remove_subscription(self, client_id: str, name: str) -> None:
        """Forget a durable subscription, and release what it was still owed."""
        draining = self.store.remove_subscription(self._batch, client_id, name)
        if draining is not None:
            self.drain(draining)

    def drain(self, sub_id: int) -> None:
        """Release a removed subscription's pointers, a page at a time (off the loop's reads)."""
        job = functools.partial(self.store.pointers, sub_id, DRAIN_PAGE)
        self.read(job, functools.partial(self._drained, sub_id))

    def _drained(self, sub_id: int, outcome: Outcome[list[tuple[int, int, int]]]) -> None:
        if isinstance(outcome, Failed):
            self._drain_failures += 1
            what = f"releasing the messages of removed durable subscription {sub_id}"
            self.disk.failed(what, outcome.error, self._drain_failures, functools.partial(self.drain, sub_id))
            return
        self._drain_failures = 0
        refs = outcome.value
        before = self.store.used_bytes
        self.store.ack_shared(self._batch, sub_id, refs)
        self.meter.release(before - self.store.used_bytes)
        if len(refs) == DRAIN_PAGE:
            self.drain(sub_id)

    # -- messages ----------------------------------------------------------------

    def add(self, dest_id: int, message: Message, sender: Outbox | None) -> None:
        """Store a persistent message routed to queue ``dest_id``; its ``sender`` waits for it."""
        # (``add_messages`` claims its sequence, at ``submit``.)
        value = to_store(message)
        adds = self._adds.get(dest_id)
        if adds is None:
            adds = self._adds[dest_id] = []
        adds.append((message.level, message.seq, value))
        message.store_size = len(value)
        message.store_dest = dest_id
        self.meter.charge(len(value))
        if sender is not None:
            self.hold(sender)

    def add_shared(self, topic: str, message: Message, sub_ids: list[int], sender: Outbox | None) -> None:
        """Store a topic message once for the durable subscriptions ``sub_ids``."""
        dest_id = self.destination_id(TOPIC_KIND, topic)
        value = to_store(message)
        self.store.claim(message.seq)
        self.store.add_shared(self._batch, dest_id, message.level, message.seq, value, sub_ids)
        message.store_size = len(value)
        message.store_dest = dest_id
        self.meter.charge(len(value))
        if sender is not None:
            self.hold(sender)

    def dispatched_shared(self, message: Message, sub_id: int, consumer: Outbox, auto: bool) -> None:
        """A stored topic message goes to durable subscription ``sub_id`` (its count just went up)."""
        self.store.mark_pointer(
            self._batch, sub_id, message.store_dest, message.level, message.seq, message.delivery_count
        )
        self.hold(consumer)
        if auto:
            self._later_shared.append((sub_id, message))

    def ack_shared(self, sub_id: int, message: Message) -> None:
        """Durable subscription ``sub_id`` is done with a stored topic message."""
        before = self.store.used_bytes
        self.store.ack_shared(self._batch, sub_id, ((message.store_dest, message.level, message.seq),))
        self.meter.release(before - self.store.used_bytes)

    def dispatched(self, message: Message, consumer: Outbox, auto: bool, stored_now: bool) -> None:
        """``message`` is about to be written to ``consumer`` (its delivery count just went
        up): record that first.  ``stored_now``: its record is in the batch being built
        (added to its queue in this unit of work)."""
        if stored_now and message.delivery_count == 1:
            # Its record is still to be written, with this batch (the last added to its
            # queue: routing hands it over at once): the record says it, and no mark is
            # written, nor later deleted.  A persistent 1 -> 1 batch is half the keys:
            # records and their deletes (benchmarks/README.md).
            # (Its flags read here, not ``store_dest``: a property call costs ~1,000
            # instructions, and a persistent 1 -> 1 message comes this way.)
            adds = self._adds[message._flags >> STORE_DEST_SHIFT]
            priority, seq, value = adds[-1]
            if seq != message.seq:
                raise AssertionError(f"message {message.seq} is not the last stored on its queue ({seq})")
            adds[-1] = (priority, seq, dispatched_record(value))
            message.unmarked = True
        else:
            self.store.mark_dispatched(
                self._batch, message.store_dest, message.level, message.seq, message.delivery_count
            )
            message.unmarked = False
        self.hold(consumer)
        if auto:
            # Deleted only once this batch (and so its mark) is durable: ``submit`` passes
            # ``_later`` to the batch's completion (the hold above gives it one).
            self._later.append(message)

    def remove(self, message: Message) -> None:
        """Acknowledged (or dead-lettered, or expired): delete it with the next batch."""
        size = message.store_size
        if not size:
            return
        message.store_size = 0
        gathered = self._removes_unmarked if message.unmarked else self._removes
        removes = gathered.get(message.store_dest)
        if removes is None:
            removes = gathered[message.store_dest] = []
        removes.append((message.level, message.seq, size))
        self.meter.release(size)

    def hold(self, outbox: Outbox) -> None:
        """Nothing more goes out on ``outbox`` until the current batch is durable."""
        # Held once per batch: one release per batch comes back (a list: few per batch).
        held = self._held
        if held and held[-1] is outbox:
            # The one held last (a producer's run of SENDs, a consumer's of MESSAGEs).
            return
        if outbox not in held:
            outbox.hold()
            held.append(outbox)

    # -- scheduled jobs ------------------------------------------------------------

    def schedule(
        self, due_ms: int, seq: int, destination: str, job: Message, period: int, repeats: int
    ) -> None:
        """Keep ``job`` for ``destination`` until ``due_ms`` (with ``period`` and ``repeats`` left)."""
        name = destination.encode()
        value = _JOB.pack(job.priority, period, repeats, len(name)) + name + to_store(job)
        self.store.claim(seq)
        self.store.add_scheduled(self._batch, due_ms, seq, value)
        self.meter.charge(len(value))

    def read_due(self, until_ms: int, limit: int) -> tuple[list[tuple[int, int, bytes]], int | None]:
        """Worker thread: up to ``limit`` (due ms, seq, record) due by ``until_ms``, and when
        the first one after them is due (None: none is)."""
        rows = self.store.scheduled(until_ms, limit)
        later = self.store.scheduled(_FAR_FUTURE, len(rows) + 1)
        return rows, later[len(rows)][0] if len(later) > len(rows) else None

    def read_jobs(
        self, after: tuple[int, int] | None, until_ms: int, limit: int
    ) -> list[tuple[int, int, bytes]]:
        """Worker thread: up to ``limit`` (due ms, seq, record) due by ``until_ms``, past
        ``after`` (the last of an earlier page)."""
        return self.store.scheduled(until_ms, limit, after)

    def take_due(self, due_ms: int, seq: int, value: bytes) -> Job | None:
        """Delete a job read by ``read_due``; the job, or None if it cannot be read (logged)."""
        job = self.job(due_ms, seq, value)
        if job is None:
            self.store.remove_scheduled(self._batch, due_ms, seq, len(value))
            self.meter.release(len(value))
        else:
            self.drop_job(job)
        return job

    def job(self, due_ms: int, seq: int, value: bytes) -> Job | None:
        """A job's record, read (None if it cannot be: logged)."""
        priority, period, repeats, n = _JOB.unpack_from(value)
        head = _JOB.size
        destination = value[head : head + n].decode()
        try:
            message = from_store(0, priority, value[head + n :])
        except BadRecord:
            log.exception("an unreadable scheduled message due at %d", due_ms)
            return None
        message.persistent = message.headers.get("persistent") == "true"
        return Job(message.id, due_ms, seq, destination, message, period, repeats, len(value))

    def drop_job(self, job: Job) -> None:
        """Delete ``job`` from the store (with the next batch)."""
        self.store.remove_scheduled(self._batch, job.due, job.seq, job.size)
        self.meter.release(job.size)

    # -- batches -----------------------------------------------------------------

    def read(
        self, job: Callable[[], T], done: Callable[[Outcome[T]], None], wake: Callable[[], None] | None = None
    ) -> None:
        """Run a read ``job`` on the worker once what is built so far is submitted: now if
        nothing is, else behind the batch at the end of the work under way.  ``wake`` runs
        after ``done`` if the read went well (``Disk.submit``)."""
        if not (self._batch or self._held or self._adds or self._removes or self._removes_unmarked):
            self.disk.submit(job, done, wake)
            return
        self._reads.append((job, done, wake))  # type: ignore[arg-type]

    def submit(self) -> None:
        """Hand what was built so far to the store (from then on its reads see it), then
        run the reads that waited for it (``read``); the end of a unit of work calls it."""
        self._submit()
        if self._reads:
            reads, self._reads = self._reads, []
            for job, done, wake in reads:
                self.disk.submit(job, done, wake)

    def _submit(self) -> None:
        if self._adds or self._removes or self._removes_unmarked:
            self._gather()
        if not self._batch and not self._held:
            return
        batch, self._batch = self._batch, Batch()
        held, self._held = self._held, []
        later, self._later = self._later, []
        later_shared, self._later_shared = self._later_shared, []
        if self.failed is not None:
            self._failing.extend(held)
            return
        if held:
            waiting = (held, later, later_shared)
            self._waiting.append(waiting)
            self.store.submit(batch, functools.partial(self._made_durable, waiting))
        else:
            self.store.submit(batch)

    def _made_durable(self, waiting: Waiting) -> None:
        # Noted only: ``settle`` releases it, at the top of the engine's work.
        self._durable_batches.append(waiting)

    def _gather(self) -> None:
        # Adds before removes: a message stored and expired in one batch ends deleted.
        batch, store = self._batch, self.store
        for dest_id, adds in self._adds.items():
            store.add_messages(batch, dest_id, adds)
        for dest_id, removes in self._removes.items():
            store.remove_messages(batch, dest_id, removes)
        for dest_id, removes in self._removes_unmarked.items():
            store.remove_messages(batch, dest_id, removes, marks=False)
        self._adds = {}
        self._removes = {}
        self._removes_unmarked = {}

    def settle(self) -> bool:
        """Release what waited for batches that are durable now, and fail what waited for a
        store that failed; False if there was nothing to do."""
        if not (self._durable_batches or self._failing):
            return False
        durable, self._durable_batches = self._durable_batches, []
        # The held outboxes first: a persistent 1 -> 1 producer waits for its RECEIPT, and
        # the auto-acked messages' deletes (about 1 us each, a batch's worth) only go into
        # the next batch, so they need not delay it.
        for waiting in durable:
            self._waiting.remove(waiting)
            for outbox in waiting[0]:
                outbox.release()
        for _, later, later_shared in durable:
            for message in later:
                self.remove(message)
            for sub_id, message in later_shared:
                self.ack_shared(sub_id, message)
        if self._failing:
            failing, self._failing = self._failing, []
            self._fail_held(failing)
        return True

    def store_stalled(self, exc: BaseException | None) -> None:
        """The committer's writes fail (``exc``: it retries them), or work again (None)."""
        self.stalled = exc

    def store_failed(self, exc: BaseException) -> None:
        """The committer stopped for good: nothing more can be made durable."""
        log.critical("the message store failed; persistent messages are refused from now on: %s", exc)
        self.failed = exc
        self.stalled = None
        waiting, self._waiting = self._waiting, []
        self._failing.extend(outbox for held, _, _ in waiting for outbox in held)

    def _fail_held(self, held: list[Outbox]) -> None:
        """What these outboxes hold waited for writes that will never be durable: drop it
        (a RECEIPT must never say otherwise), then end each connection with an ERROR."""
        exc = self.failed
        assert exc is not None
        for outbox in dict.fromkeys(held):
            outbox.drop_held()
        for outbox in held:
            outbox.release()
        for outbox in dict.fromkeys(held):
            outbox.fail(exc)


class _StoreReader:
    """Stored messages read back into a cursor, on the worker thread (``swap.StoreSource``)."""

    __slots__ = ("disk", "persistence")

    def __init__(self, persistence: Persistence) -> None:
        self.persistence = persistence
        self.disk = persistence.disk

    def submit(
        self, job: Callable[[], T], done: Callable[[Outcome[T]], None], wake: Callable[[], None] | None
    ) -> None:
        self.persistence.read(job, done, wake)


def _restored(seq: int, priority: int, value: bytes, dest_id: int, deliveries: int) -> Message:
    message = from_store(seq, priority, value)
    if not deliveries:
        # No mark: the record may say it was dispatched once (``dispatched_record``).
        deliveries = stored_deliveries(value)
    message.store_size = len(value)
    message.store_dest = dest_id
    if deliveries:
        message.redelivered = True
        message.delivery_count = deliveries
    return message


class QueueStoreReader(_StoreReader):
    """A queue's stored messages."""

    __slots__ = ("dest_id",)

    def __init__(self, persistence: Persistence, dest_id: int) -> None:
        super().__init__(persistence)
        self.dest_id = dest_id

    def read(self, priority: int, lo: int, hi: int, limit: int) -> list[Message]:
        dest_id = self.dest_id
        rows = self.persistence.store.page_marked(dest_id, priority, lo, hi, limit)
        return [_restored(seq, priority, value, dest_id, deliveries) for seq, value, deliveries in rows]


class SubscriptionStoreReader(_StoreReader):
    """A durable subscription's stored messages (its pointers)."""

    __slots__ = ("sub_id",)

    def __init__(self, persistence: Persistence, sub_id: int) -> None:
        super().__init__(persistence)
        self.sub_id = sub_id

    def read(self, priority: int, lo: int, hi: int, limit: int) -> list[Message]:
        rows = self.persistence.store.page_subscription_marked(self.sub_id, priority, lo, hi, limit)
        return [
            _restored(seq, priority, value, dest_id, deliveries) for seq, dest_id, value, deliveries in rows
        ]
