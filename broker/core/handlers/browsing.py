"""Browsing a queue without consuming it: a page of it (``Browse``), and STOMP's queue
browser, SUBSCRIBE with ``browser:true`` (``QueueBrowser``).

``Browse`` is one walk over a queue's pending messages (or a durable subscription's) in
dispatch order, memory and disk parts merged, a batch a step: the admin service's browse
and its look for one message by id, and the STOMP browser's walk.

As ActiveMQ's queue browser (``StompQueueBrowserSubscription``): the subscriber gets
the messages the queue holds, without consuming them, then one MESSAGE with
``browser:end`` (and ``message-id:0``, no body) says the snapshot is over.  Unlike
ActiveMQ's it is not capped at a prefetch's worth: it walks the whole queue, memory,
swapped and stored parts, and messages routed after the SUBSCRIBE are not part of it.

Its walk is a chore (``base.chores``): a batch read, then written to the connection, a
step, between other clients' work, so a deep queue never fills the outbox in one go and
its reads of the disk part wait on the worker, not on the loop.  The walk waits while its
connection is backed up (``Engine.set_writable`` lets it go on) and, with ``ack:client``
or ``client-individual``, as in ActiveMQ, while a prefetch's worth of browsed messages
(the destination's ``queueBrowserPrefetch``, 500, or the SUBSCRIBE's
``activemq.prefetchSize``) is unacknowledged: it goes on as the client acks them (an ACK
here only says "seen": nothing is consumed).  ``ack:auto`` browses on without waiting.
UNSUBSCRIBE stops it.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Protocol

from broker.core.base import names
from broker.core.base.chores import SLICE, STEP, Wait
from broker.core.base.pieces import REDELIVERED_HEADER
from broker.core.delivery import transforming
from broker.core.delivery.subscription import AUTO, Subscription
from protocol.encoder import FRAME_END, encode_frame, encode_headers
from protocol.frames import Frame
from store.api import LEVELS, Failed

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from broker.core.base.channel import Channel
    from broker.core.base.chores import Chore, Chores, Steps
    from broker.core.base.message import Message
    from broker.core.delivery.queue import Queue
    from broker.core.storage.cursor import Cursor
    from broker.core.storage.persistence import Persistence
    from store.api import Outcome

#: Messages one step looks at in memory (and an admin operation's step at most changes):
#: a slice's work (``chores.STEP``).
BATCH = 1000
TOP = LEVELS - 1


def cost_of(looked: int) -> int:
    """What a step that looked at ``looked`` messages in memory costs, in a chore's units."""
    return 1 + looked * STEP // BATCH


class Pending(Protocol):
    """What a walk goes over: a queue (``queue.Queue``), or a durable subscription's
    pending messages (``admin.operations.DurableBacklog``)."""

    name: str
    cursor: Cursor


class DiskReadFailed(Exception):
    """Reading the disk part of a queue failed: the walk stopped (what it did stays done)."""


class Browse:
    """One page of a queue, without consuming: up to ``limit`` pending messages after
    ``position`` ((level, sequence); (9, -1): the head), in dispatch order (priority,
    then arrival), memory and disk merged.

    ``steps`` walks it; when done, ``messages`` is the page and ``next`` where the next
    one starts (None: the end of the queue).  A walker may empty ``messages`` after each
    step (a STOMP browser sends them as they come).
    """

    __slots__ = (
        "_after",
        "_level",
        "backlog",
        "error",
        "limit",
        "match",
        "messages",
        "next",
        "top",
    )

    def __init__(
        self,
        backlog: Pending,
        match: Callable[[Message], bool] | None,
        limit: int,
        position: tuple[int, int] | None = None,
        *,
        top: int | None = None,
    ) -> None:
        self.backlog = backlog
        #: Messages routed after this sequence are not shown (None: whatever is there).
        self.top = top
        self.match = match
        self.limit = limit
        level, after = position if position is not None else (TOP, -1)
        self._level = level
        self._after = after
        self.messages: list[Message] = []
        self.next: tuple[int, int] | None = None
        self.error: BaseException | None = None

    def steps(self) -> Steps[None]:
        """The walk, a batch a step (a read of the disk part waits for the worker)."""
        while self.error is None and not self._full():
            if self.backlog.cursor.closed:
                self.next = None
                return
            read = self._read()
            if isinstance(read, Wait):
                yield read
            elif self._full():
                return
            else:
                yield cost_of(read)

    def _read(self) -> Wait | int:
        """The next batch of the level: what memory holds, merged with the disk part's
        share of the same range, read on the worker (a ``Wait``); or, with nothing of it on
        disk, what memory holds alone (how many messages that was)."""
        cursor = self.backlog.cursor
        level = self._level
        memory = cursor.pending_after(level, self._after, BATCH)
        mem_cut = memory[-1].seq if len(memory) == BATCH else None
        upto = mem_cut
        if self.top is not None:
            upto = self.top if upto is None else min(upto, self.top)
        wait = Wait()

        def done(outcome: Outcome[tuple[list[Message], int, bool]]) -> None:
            if isinstance(outcome, Failed):
                self.error = DiskReadFailed(
                    f"reading the disk part of {self.backlog.name} failed: {outcome.error}"
                )
            else:
                found, cut, to_end = outcome.value
                self._merge(level, found, cut, whole=mem_cut is None and to_end)
            wait.resume()

        if cursor.disk_part.browse(level, self._after, upto, BATCH, done):
            return wait
        self._take(memory, mem_cut)
        return len(memory)

    def _merge(self, level: int, found: list[Message], cut: int, *, whole: bool) -> None:
        """A disk read of ``level`` is back: merge it with what memory holds now (a page-in
        may have brought part of the range in meanwhile) and take the page's share."""
        now = self.backlog.cursor.pending_after(level, self._after, BATCH)
        if len(now) == BATCH:
            cut = min(cut, now[-1].seq)
            whole = False
        seen: dict[int, Message] = {m.seq: m for m in found if whole or m.seq <= cut}
        for m in now:
            if whole or m.seq <= cut:
                seen[m.seq] = m
        self._take([seen[seq] for seq in sorted(seen)], None if whole else cut)

    def _take(self, candidates: Iterable[Message], cut: int | None) -> None:
        """Add the matching ``candidates`` (in order) to the page; ``cut``: the last sequence
        they cover at this level (None: the rest of the level)."""
        match = self.match
        top = self.top
        for message in candidates:
            if top is not None and message.seq > top:
                # Newer than the snapshot, and so is the rest of this level.
                cut = None
                break
            if match is not None and not match(message):
                continue
            self.messages.append(message)
            if len(self.messages) >= self.limit:
                self._after = message.seq
                return
        if cut is None:
            self._level -= 1
            self._after = -1
        else:
            self._after = cut

    def _full(self) -> bool:
        if len(self.messages) >= self.limit:
            self.next = (self._level, self._after) if self._level >= 0 else None
            return True
        if self._level < 0:
            self.next = None
            return True
        return False


# -- STOMP's queue browser -------------------------------------------------------------


class QueueBrowser(Subscription):
    """A subscription that browses ``queue`` once, then ends its snapshot with ``browser:end``."""

    __slots__ = (
        "_browse",
        "_candidates",
        "_chores",
        "_pending",
        "_room",
        "_started",
        "_top",
        "_wanted",
        "done",
        "walk",
    )

    def __init__(
        self,
        session: Channel,
        sub_id: str,
        key: int,
        queue: Queue | None,
        persistence: Persistence,
        selector: Callable[[Message], bool] | None,
        top: int,
        chores: Chores,
        *,
        ack: str = AUTO,
        prefetch: int = 500,
        pattern: str = "",
        candidates: list[Queue] | None = None,
        wanted: Callable[[Queue], bool] | None = None,
    ) -> None:
        super().__init__(
            session,
            sub_id,
            key,
            pattern if queue is None else queue.name,
            persistence,
            ack=ack,
            prefetch=prefetch,
            selector=selector,
        )
        self._top = top
        self._browse = Browse(queue, selector, 1 << 62, top=top) if queue is not None else None
        #: A browser on a wildcard pattern (``queue`` None): the queues to look at, as they
        #: were at its SUBSCRIBE, those ``wanted`` browsed one after the other.
        self._candidates = candidates if candidates is not None else []
        self._wanted = wanted
        self._chores = chores
        #: The walk, once started (the first ``pump``, after the SUBSCRIBE's RECEIPT;
        #: without a wake, the chores run it as it is added: ``_started`` says so first).
        self._started = False
        self.walk: Chore[None] | None = None
        #: Browsed and not yet sent (waiting for acks to make room, or for the connection).
        self._pending: deque[Message] = deque()
        #: What the walk waits for while it may not send: room (``pump`` resumes it).
        self._room: Wait | None = None
        self.done = False

    @property
    def _active(self) -> bool:
        # UNSUBSCRIBE (or the connection's end) closes a subscription's own cursor.
        return not self.done and not self.cursor.closed

    def pump(self) -> None:
        """Start the walk, or let it go on if it waits for room (writable again, an ACK)."""
        if not self._started:
            if self._active:
                self._started = True
                self.walk = self._chores.add(self._walked())
            return
        room = self._room
        if room is not None and self._may_send():
            self._room = None
            room.resume()

    def stop(self) -> None:
        """UNSUBSCRIBE, or its connection's end: the walk is over."""
        if self.walk is not None:
            self.walk.cancel()

    def _may_send(self) -> bool:
        return self.session.writable and (self.auto or len(self.inflight) < self.window)

    def _walked(self) -> Steps[None]:
        pending = self._pending
        browse = self._browse
        walk = browse.steps() if browse is not None else None
        candidates = iter(self._candidates)
        wanted = self._wanted
        walked = False
        while self._active:
            if browse is not None and browse.messages:
                pending.extend(browse.messages)
                browse.messages.clear()
            if pending or walked:
                if not self._may_send():
                    # The end takes room too, as in ActiveMQ.
                    self._room = Wait()
                    yield self._room
                    continue
                if pending:
                    # What the loop writes before the next batch: a frame a unit.
                    yield self._send()
                    continue
                self.done = True
                if browse is None or browse.error is None:
                    self._end()
                return
            if walk is not None:
                try:
                    step = next(walk)
                except StopIteration:
                    walk = None
                    walked = browse is not None and browse.error is not None
                    continue
                yield step
                continue
            # A pattern's next queue: a look at each name, a SLICE of them a step at most.
            following = None
            for looked, queue in enumerate(candidates, 1):
                if wanted is None or wanted(queue):
                    following = queue
                    break
                if looked % SLICE == 0:
                    yield STEP
            if following is None:
                walked = True
                continue
            browse = self._browse = Browse(following, self.selector, 1 << 62, top=self._top)
            walk = browse.steps()

    def _send(self) -> int:
        """MESSAGE frames for what is pending, as many as may be unacknowledged, left as
        they are (nothing counted, nothing held); how many."""
        pending = self._pending
        inflight = self.inflight
        count = len(pending) if self.auto else min(len(pending), self.window - len(inflight))
        session = self.session
        version = session.version
        sub_header = encode_headers([("subscription", self.id)], version)
        push = session.outbox.push
        for _ in range(count):
            message = pending.popleft()
            written = (
                message if self.transformation is None else transforming.view(message, self.transformation)
            )
            head, tail = written.wire(version)
            if self.renames is not None:
                head = names.owners_head(head, self.renames)
            parts = [head, sub_header]
            if not self.auto:
                # Only to be named by an ACK (which frees room): never settled.
                inflight[message.seq] = message
                if version == "1.2":
                    parts.append(b"ack:%d-%d\n" % (self.key, message.seq))
            if message.redelivered:
                parts.append(REDELIVERED_HEADER)
            parts += (tail, written.body, FRAME_END)
            push(tuple(parts))
        self.delivered += count
        return count

    def _end(self) -> None:
        headers = {
            "subscription": self.id,
            "browser": "end",
            "destination": self.destination,
            "message-id": "0",
        }
        self.session.outbox.push((encode_frame(Frame("MESSAGE", headers, b""), self.session.version),))

    def wake(self) -> None:
        self.pump()
