"""STOMP queue browsing: SUBSCRIBE with ``browser:true``.

As ActiveMQ's queue browser (``StompQueueBrowserSubscription``): the subscriber gets
the messages the queue holds, without consuming them, then one MESSAGE with
``browser:end`` (and ``message-id:0``, no body) says the snapshot is over.  Unlike
ActiveMQ's it is not capped at a prefetch's worth: it walks the whole queue, memory,
swapped and stored parts (``admin.Browse``), and messages routed after the SUBSCRIBE
are not part of it.

It pumps like any subscription: while its connection is writable it writes a batch,
then lets the loop run (a no-op job on the disk worker comes back as the next turn),
so a deep queue never fills the outbox in one go; a connection that backs up resumes
it through ``Engine.set_writable``.  UNSUBSCRIBE stops it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.core.admin import Browse
from broker.core.subscription import REDELIVERED_HEADER, Subscription
from protocol.encoder import FRAME_END, encode_frame, encode_headers
from protocol.frames import Frame

if TYPE_CHECKING:
    from collections.abc import Callable

    from broker.core.channel import Channel
    from broker.core.message import Message
    from broker.core.persistence import Persistence
    from broker.core.queue import Queue
    from store.api import Outcome


class QueueBrowser(Subscription):
    """A subscription that browses ``queue`` once, then ends its snapshot with ``browser:end``."""

    __slots__ = ("_browse", "_busy", "_inline", "_queue", "done")

    def __init__(
        self,
        session: Channel,
        sub_id: str,
        key: int,
        queue: Queue,
        persistence: Persistence,
        selector: Callable[[Message], bool] | None,
        top: int,
    ) -> None:
        super().__init__(session, sub_id, key, queue.name, persistence, selector=selector)
        self._queue = queue
        self._browse = Browse(queue, selector, 1 << 62, top=top)
        #: A disk read or a turn of the loop is awaited: ``pump`` waits for it.
        self._busy = False
        self._inline = False
        self.done = False

    @property
    def _active(self) -> bool:
        # UNSUBSCRIBE (or the connection's end) closes a subscription's own cursor.
        return not self.done and not self.cursor.closed

    def pump(self) -> None:
        browse = self._browse
        while not self._busy and self._active and self.session.writable:
            finished = browse.step(self._resumed)
            sent = self._send(browse.messages)
            browse.messages.clear()
            if finished:
                self.done = True
                if browse.error is None:
                    self._end()
                return
            if browse.waiting:
                self._busy = True
                return
            if sent:
                # Let the loop write what this batch queued before the next one.
                self._yield()

    def _yield(self) -> None:
        """Come back on a later turn of the loop (unless the worker runs jobs inline)."""
        self._busy = True
        self._inline = True
        self._queue.cursor.disk().submit(_nothing, self._turned)
        self._inline = False

    def _turned(self, outcome: Outcome[None]) -> None:
        self._busy = False
        if not self._inline:
            self.pump()

    def _resumed(self) -> None:
        self._busy = False
        self.pump()

    def _send(self, messages: list[Message]) -> int:
        """MESSAGE frames for ``messages``, left as they are (nothing counted, nothing held)."""
        session = self.session
        version = session.version
        sub_header = encode_headers([("subscription", self.id)], version)
        push = session.outbox.push
        for message in messages:
            head, tail = message.wire(version)
            if message.redelivered:
                push((head, sub_header, REDELIVERED_HEADER, tail, message.body, FRAME_END))
            else:
                push((head, sub_header, tail, message.body, FRAME_END))
        self.delivered += len(messages)
        return len(messages)

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
