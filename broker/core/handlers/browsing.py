"""STOMP queue browsing: SUBSCRIBE with ``browser:true``.

As ActiveMQ's queue browser (``StompQueueBrowserSubscription``): the subscriber gets
the messages the queue holds, without consuming them, then one MESSAGE with
``browser:end`` (and ``message-id:0``, no body) says the snapshot is over.  Unlike
ActiveMQ's it is not capped at a prefetch's worth: it walks the whole queue, memory,
swapped and stored parts (``operations.Browse``), and messages routed after the SUBSCRIBE
are not part of it.

It pumps like any subscription: while its connection is writable it writes a batch,
then lets the loop run (a no-op job on the disk worker comes back as the next turn),
so a deep queue never fills the outbox in one go; a connection that backs up resumes
it through ``Engine.set_writable``.  UNSUBSCRIBE stops it.

With ``ack:client`` or ``client-individual``, as in ActiveMQ, at most a prefetch's worth
of browsed messages (the destination's ``queueBrowserPrefetch``, 500, or the SUBSCRIBE's
``activemq.prefetchSize``) may be unacknowledged at a time: the browse goes on as the
client acks them (an ACK here only says "seen": nothing is consumed).  ``ack:auto``
browses on without waiting.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

from broker.core.delivery.subscription import AUTO, REDELIVERED_HEADER, Subscription
from broker.core.handlers.operations import Browse
from protocol.encoder import FRAME_END, encode_frame, encode_headers
from protocol.frames import Frame

if TYPE_CHECKING:
    from collections.abc import Callable

    from broker.core.base.channel import Channel
    from broker.core.base.message import Message
    from broker.core.delivery.queue import Queue
    from broker.core.storage.persistence import Persistence
    from store.api import Outcome


class QueueBrowser(Subscription):
    """A subscription that browses ``queue`` once, then ends its snapshot with ``browser:end``."""

    __slots__ = ("_browse", "_busy", "_pending", "_queue", "_walked", "done")

    def __init__(
        self,
        session: Channel,
        sub_id: str,
        key: int,
        queue: Queue,
        persistence: Persistence,
        selector: Callable[[Message], bool] | None,
        top: int,
        *,
        ack: str = AUTO,
        prefetch: int = 500,
    ) -> None:
        super().__init__(
            session, sub_id, key, queue.name, persistence, ack=ack, prefetch=prefetch, selector=selector
        )
        self._queue = queue
        self._browse = Browse(queue, selector, 1 << 62, top=top)
        #: Browsed and not yet sent (waiting for acks to make room).
        self._pending: deque[Message] = deque()
        #: The browse has been walked to its end (what is pending then goes, then the end).
        self._walked = False
        #: A disk read or a turn of the loop is awaited: ``pump`` waits for it.
        self._busy = False
        self.done = False

    @property
    def _active(self) -> bool:
        # UNSUBSCRIBE (or the connection's end) closes a subscription's own cursor.
        return not self.done and not self.cursor.closed

    def pump(self) -> None:
        browse = self._browse
        pending = self._pending
        while not self._busy and self._active and self.session.writable:
            if pending:
                sent = self._send()
                if pending:
                    return  # unacknowledged: an ACK pumps again
                if sent:
                    # Let the loop write what this batch queued before the next one.
                    self._yield()
                    continue
            if self._walked:
                if not self.auto and len(self.inflight) >= self.window:
                    return  # the end takes room too, as in ActiveMQ
                self.done = True
                if browse.error is None:
                    self._end()
                return
            self._walked = browse.step(self._resumed)
            pending.extend(browse.messages)
            browse.messages.clear()
            if browse.waiting:
                self._busy = True
                return

    def _yield(self) -> None:
        """Come back on a later turn of the loop."""
        self._busy = True
        self._queue.cursor.disk().submit(_nothing, self._turned)

    def _turned(self, outcome: Outcome[None]) -> None:
        self._busy = False
        self.pump()

    def _resumed(self) -> None:
        self._busy = False
        self.pump()

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
            head, tail = message.wire(version)
            parts = [head, sub_header]
            if not self.auto:
                # Only to be named by an ACK (which frees room): never settled.
                inflight[message.seq] = message
                if version == "1.2":
                    parts.append(b"ack:%d-%d\n" % (self.key, message.seq))
            if message.redelivered:
                parts.append(REDELIVERED_HEADER)
            parts += (tail, message.body, FRAME_END)
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


def _nothing() -> None:
    return None
