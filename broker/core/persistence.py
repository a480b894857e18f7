"""Persistent messages: what the engine writes to the message store, and when.

Everything one batch of work changes (a read's worth of frames, a store completion)
goes into one ``Batch``, submitted at ``flush``: producers and consumers share the
group committer's fsyncs.  Three rules make a ``kill -9`` at any moment safe:

* A persistent SEND's RECEIPT, and anything after it on that connection, goes out
  only once the batch holding the message is durable: the connection's outbox is
  held until then (so receipts also stay in order with everything else).
* A stored message is marked dispatched (one small key) before its MESSAGE leaves:
  the consumer's outbox is held until the mark is durable.  After a crash a message
  comes back ``redelivered:true`` exactly when it may have been seen.
* An auto-acknowledged message is deleted in a batch after the one with its mark: a
  crash in between redelivers it, flagged, rather than losing it.

Acks need no wait: their deletes ride along with the next batch.
"""

from __future__ import annotations

import functools
import logging
from typing import TYPE_CHECKING

from broker.core import stored
from store.commit import Batch

if TYPE_CHECKING:
    from broker.core.message import Message
    from broker.core.queue import Queue
    from broker.core.session import Outbox, Session
    from broker.core.usage import UsageMeter
    from store.api import Worker
    from store.commit import GroupCommitter
    from store.persistent import MessageStore

log = logging.getLogger("stompd.persistence")

QUEUE_KIND = "queue"


class Persistence:
    __slots__ = ("_batch", "_held", "_later", "_waiting", "committer", "failed", "meter", "store", "worker")

    def __init__(
        self, store: MessageStore, committer: GroupCommitter, meter: UsageMeter, worker: Worker
    ) -> None:
        self.store = store
        self.committer = committer
        #: ``storeUsage``: bytes of stored message records.
        self.meter = meter
        #: Where cursors read stored messages back (the temp store's worker thread).
        self.worker = worker
        self._batch = Batch()
        self._held: list[Outbox] = []
        self._later: list[Message] = []
        #: Outboxes held for batches submitted and not yet durable (failed on a store error).
        self._waiting: list[list[Outbox]] = []
        #: The write error that stopped the store, if one did.
        self.failed: BaseException | None = None

    # -- destinations ------------------------------------------------------------

    def attach(self, queue: Queue) -> int:
        """Record ``queue`` in the store (first persistent message); its id there."""
        if not queue.store_id:
            queue.store_id = self.store.add_destination(self._batch, QUEUE_KIND, queue.name)
            queue.cursor.stored = QueueSource(self, queue.store_id)
        return queue.store_id

    # -- messages ----------------------------------------------------------------

    def add(self, queue: Queue, message: Message, session: Session | None) -> None:
        """Store a persistent message routed to ``queue``; ``session`` (its sender) waits for it."""
        dest_id = queue.store_id or self.attach(queue)
        value = stored.encode(message)
        self.store.claim(message.seq)
        self.store.add_messages(self._batch, dest_id, ((message.priority, message.seq, value),))
        message.stored = len(value)
        message.store_dest = dest_id
        self.meter.charge(len(value))
        if session is not None:
            self.hold(session.outbox)

    def dispatched(self, message: Message, session: Session, auto: bool) -> None:
        """``message`` is about to be written to ``session``: record that first."""
        if not message.marked:
            message.marked = True
            self.store.mark_dispatched(self._batch, message.store_dest, message.priority, message.seq)
            self.hold(session.outbox)
        if auto:
            self._later.append(message)

    def remove(self, message: Message) -> None:
        """Acknowledged (or dead-lettered, or expired): delete it with the next batch."""
        size = message.stored
        if not size:
            return
        message.stored = 0
        self.store.remove_messages(self._batch, message.store_dest, ((message.priority, message.seq, size),))
        self.meter.release(size)

    def hold(self, outbox: Outbox) -> None:
        """Nothing more goes out on ``outbox`` until the current batch is durable."""
        held = self._held
        if not held or held[-1] is not outbox:
            if outbox in held:
                return
            outbox.hold()
            held.append(outbox)

    # -- batches -----------------------------------------------------------------

    def flush(self) -> None:
        """Submit what this batch of work changed (the engine calls it at the end of one)."""
        if not self._batch and not self._held and not self._later:
            return
        batch, self._batch = self._batch, Batch()
        held, self._held = self._held, []
        later, self._later = self._later, []
        if self.failed is not None:
            self._fail_held(held)
            return
        if held or later:
            self._waiting.append(held)
            self.committer.submit_batch(batch, functools.partial(self._durable, held, later))
        else:
            self.committer.submit_batch(batch)

    def _durable(self, held: list[Outbox], later: list[Message]) -> None:
        self._waiting.remove(held)
        for message in later:
            self.remove(message)
        for outbox in held:
            outbox.release()

    def store_failed(self, exc: BaseException) -> None:
        """The committer stopped: nothing more can be made durable."""
        log.critical("the message store failed; persistent messages are refused from now on: %s", exc)
        self.failed = exc
        waiting, self._waiting = self._waiting, []
        for held in waiting:
            self._fail_held(held)

    def _fail_held(self, held: list[Outbox]) -> None:
        exc = self.failed
        assert exc is not None
        for outbox in held:
            outbox.release()
            outbox.fail(exc)


class QueueSource:
    """A queue's stored messages, read back into its cursor (on the worker thread)."""

    __slots__ = ("dest_id", "persistence", "worker")

    def __init__(self, persistence: Persistence, dest_id: int) -> None:
        self.persistence = persistence
        self.dest_id = dest_id
        self.worker = persistence.worker

    def read(self, priority: int, lo: int, hi: int, limit: int) -> list[Message]:
        persistence = self.persistence
        # Reads see only what is written: wait for what was submitted before this page-in.
        persistence.committer.flush_wait()
        dest_id = self.dest_id
        out = []
        for seq, value, dispatched in persistence.store.page_marked(dest_id, priority, lo, hi, limit):
            message = stored.decode(seq, priority, value)
            message.stored = len(value)
            message.store_dest = dest_id
            if dispatched:
                message.marked = message.redelivered = True
                message.delivery_count = 1
            out.append(message)
        return out
