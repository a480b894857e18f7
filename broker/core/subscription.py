"""A consumer: one SUBSCRIBE, its ack mode, prefetch credit and in-flight messages.

A subscription consumes from the queues its destination names (competing with other
consumers there) and, for topic destinations, from its own cursor, which topics fill.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from broker.core.cursor import Cursor, MemoryCursor
from protocol.encoder import FRAME_END, encode_headers

if TYPE_CHECKING:
    from collections.abc import Callable

    from broker.core.durable import Durable
    from broker.core.message import Message
    from broker.core.persistence import Persistence
    from broker.core.queue import Queue
    from broker.core.session import Session

AUTO: Final = "auto"
CLIENT: Final = "client"
CLIENT_INDIVIDUAL: Final = "client-individual"
ACK_MODES: Final = frozenset({AUTO, CLIENT, CLIENT_INDIVIDUAL})

REDELIVERED_HEADER: Final = b"redelivered:true\n"


class Subscription:
    __slots__ = (
        "_sub_header",
        "_sub_header_version",
        "ack",
        "auto",
        "cursor",
        "delivered",
        "destination",
        "durable",
        "exclusive",
        "id",
        "inflight",
        "key",
        "no_local",
        "persistence",
        "prefetch",
        "pumping",
        "queues",
        "selector",
        "session",
        "topic_patterns",
    )

    def __init__(
        self,
        session: Session,
        sub_id: str,
        key: int,
        destination: str,
        *,
        ack: str = AUTO,
        prefetch: int = 1000,
        selector: Callable[[Message], bool] | None = None,
        no_local: bool = False,
        exclusive: bool = False,
    ) -> None:
        self.session = session
        self.id = sub_id
        self.key = key
        self.destination = destination
        self.ack = ack
        self.auto = ack == AUTO
        self.prefetch = prefetch
        self.selector = selector
        self.no_local = no_local
        self.exclusive = exclusive
        self.queues: list[Queue] = []
        #: Set for a durable topic subscription: its record, and the store it acks in.
        self.durable: Durable | None = None
        self.persistence: Persistence | None = None
        self.topic_patterns: list[tuple[str, str]] = []
        #: Where topic messages wait for this subscriber (the engine may give it a swap log).
        self.cursor: Cursor = MemoryCursor()
        # Dispatch order is ack order for cumulative (client) acks: a dict keeps it.
        self.inflight: dict[int, Message] = {}
        self.delivered = 0
        self.pumping = False
        self._sub_header = b""
        self._sub_header_version = ""

    @property
    def ready(self) -> bool:
        """Can take a message now: has credit and its connection is not backed up."""
        return self.session.writable and (self.auto or len(self.inflight) < self.prefetch)

    def accepts(self, message: Message) -> bool:
        if self.no_local and message.origin == self.session.id:
            return False
        selector = self.selector
        return selector is None or selector(message)

    def deliver(self, message: Message) -> None:
        session = self.session
        version = session.version
        head, tail = message.wire(version)
        if self._sub_header_version != version:
            self._sub_header = encode_headers([("subscription", self.id)], version)
            self._sub_header_version = version
        message.delivery_count += 1
        self.delivered += 1
        if message.store_size and self.durable is not None:
            assert self.persistence is not None
            self.persistence.dispatched_shared(message, self.durable.store_id, session, self.auto)
        outbox = session.outbox
        if self.auto:
            if message.redelivered:
                outbox.push((head, self._sub_header, REDELIVERED_HEADER, tail, message.body, FRAME_END))
            else:
                outbox.push((head, self._sub_header, tail, message.body, FRAME_END))
            return
        # The hold the caller passed in stays with the message while it is in flight.
        message.hold()
        self.inflight[message.seq] = message
        ack_header = b"ack:%d-%d\n" % (self.key, message.seq) if version == "1.2" else b""
        if message.redelivered:
            outbox.push(
                (head, self._sub_header, ack_header, REDELIVERED_HEADER, tail, message.body, FRAME_END)
            )
        else:
            outbox.push((head, self._sub_header, ack_header, tail, message.body, FRAME_END))

    def take_acked(self, seq: int, cumulative: bool) -> list[Message]:
        """Remove and return what an ACK/NACK of ``seq`` covers (empty if unknown)."""
        inflight = self.inflight
        if seq not in inflight:
            return []
        if not cumulative:
            return [inflight.pop(seq)]
        taken: list[Message] = []
        for key in list(inflight):
            taken.append(inflight.pop(key))
            if key == seq:
                break
        return taken

    def pump(self) -> None:
        """Deliver what this subscription can take: its topic cursor, then its queues."""
        if self.pumping:
            return
        self.pumping = True
        try:
            self._pump()
        finally:
            self.pumping = False

    def _pump(self) -> None:
        cursor = self.cursor
        if cursor.count:
            while self.ready:
                message = cursor.pop()
                if message is None:
                    break
                if not (message.expires and message.expires <= self.session.clock.ms):
                    self.deliver(message)
                message.drop()
        for queue in self.queues:
            if not self.ready:
                return
            queue.dispatch()
