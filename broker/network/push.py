"""Push: this broker's messages to the remote, over one connection of a bridge.

For each destination the remote has consumers for (its consumer advisories,
``demand.Demand``) and each statically included one, a network subscription here
(``wire.push_subscription``).  Each MESSAGE it gets becomes a SEND to the remote; the
local ACK waits for the RECEIPT that covers it, so the message stays stored here until
the remote has stored it.  To a stompd remote over STOMP 1.2 the SEND is made of the
MESSAGE's pieces, bytes for bytes (``wire.send_pieces``); to any other, of its headers.
"""

from __future__ import annotations

import itertools
import logging
import time
from collections import deque
from typing import TYPE_CHECKING, Final

from broker.network import wire
from broker.network.demand import ADVISORY_DESTINATIONS, QUEUE, Demand, Want
from protocol.escaping import escape
from protocol.frames import V1_2, Frame
from wildcards import is_wildcard

if TYPE_CHECKING:
    import asyncio
    from collections.abc import Callable

    from broker.core.base.pieces import MessagePieces
    from broker.core.engine import Engine
    from broker.network.link import Link
    from broker.network.local import LocalClient
    from broker.network.status import BridgeSettings, BridgeStatus
    from config.model import NetworkDestination

log = logging.getLogger("stompd.network")

#: A forwarded SEND asks for a receipt at least this often (and the last of a turn).
RECEIPT_EVERY: Final = 100
#: The subscriptions, on the remote, to its consumer advisories (queues, then topics).
REMOTE_ADVISORIES: Final = ("adv-q", "adv-t")
#: What a push receipt starts with (``s`` and the SEND's number).
RECEIPT_PREFIX: Final = "s"


class Refusals:
    """Destinations the remote refused (an ERROR for a SEND, say not authorized), and until
    when they are not forwarded: kept across a bridge's connections, or the link would
    fail the same way at once each time it came back."""

    __slots__ = ("_clock", "_until")

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._until: dict[str, float] = {}

    def refuse(self, destination: str, seconds: float) -> None:
        self._until[destination] = self._clock() + seconds

    def left(self, destination: str) -> float:
        """Seconds until ``destination`` may be forwarded again (0: now; a refusal that is
        over is forgotten)."""
        until = self._until.get(destination)
        if until is None:
            return 0.0
        left = until - self._clock()
        if left > 0:
            return left
        del self._until[destination]
        return 0.0


class Push:
    """This broker's messages to the remote, while a connection lasts (``crossing``)."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        engine: Engine,
        settings: BridgeSettings,
        status: BridgeStatus,
        refusals: Refusals,
        link: Link,
        local: LocalClient,
        *,
        stompd: bool,
        rabbitmq: bool,
    ) -> None:
        self._loop = loop
        self._engine = engine
        self._settings = settings
        self._connector = settings.connector
        self._status = status
        self._refusals = refusals
        self._link = link
        self._local = local
        #: The remote is stompd (it has advisories and takes the SEND made of pieces),
        #: or RabbitMQ (it reads a relative ``expiration``, not ActiveMQ's ``expires``).
        self._stompd = stompd
        self._rabbitmq = rabbitmq
        self._ids = itertools.count(1)
        #: Local subscription id -> its destination and want (None: statically included).
        self._subscriptions: dict[str, tuple[str, Want | None]] = {}
        self._by_key: dict[tuple[str, ...], str] = {}
        connector = self._connector
        self._demand = Demand(
            settings.broker_name,
            connector.consumer_ttl,
            connector.conduit_subscriptions,
            publisher=status.remote_name,
            excluded=connector.excluded,
            included=connector.dynamically_included,
            static=connector.statically_included,
        )
        #: Subscriptions waiting for their destination's refusal to be over.
        self._deferred: list[tuple[str, str, tuple[str, ...], Want | None]] = []
        self._retry: asyncio.TimerHandle | None = None
        #: SENDs to the remote waiting for their RECEIPT: (SEND number, local
        #: subscription, local ack id, cumulative), in the order they went.
        self._sends: deque[tuple[int, str, str, bool]] = deque()
        self._send_destinations: dict[int, str] = {}
        #: SENDs of this turn, written together (``_write_sends``): a frame, or pieces.
        self._out: list[tuple[int, str, Frame | list[bytes]]] = []
        self._local_name = escape(settings.broker_name, V1_2).encode()
        #: Destinations a receipted SEND went to on this connection.
        self._announced: set[str] = set()
        #: Destination -> whether the connector's lists let it over this link.
        self._allowed: dict[str, bool] = {}

    def start(self) -> None:
        """The statically included destinations' subscriptions, and the remote's advisories."""
        for destination in self._connector.statically_included:
            self._static(destination)
        if self._stompd:
            for sub_id, topic in zip(REMOTE_ADVISORIES, ADVISORY_DESTINATIONS, strict=True):
                self._link.send(Frame("SUBSCRIBE", {"id": sub_id, "destination": topic, "ack": "auto"}))

    def close(self) -> None:
        """The connection is over: what was sent and not receipted goes back to its queue
        with the local session (the remote may have it: its audit drops the copy sent again)."""
        if self._retry is not None:
            self._retry.cancel()
            self._retry = None
        self._sends.clear()

    # -- what to subscribe to here -------------------------------------------------------

    def advisory(self, frame: Frame) -> None:
        """A consumer advisory of the remote's."""
        for change in self._demand.advisory(frame):
            self._change(change.added, change.want)

    def _static(self, destination: NetworkDestination) -> None:
        if destination.kind == QUEUE and is_wildcard(destination.pattern):
            log.warning(
                "network bridge %s: staticallyIncludedDestinations queue %r is a wildcard: queues are "
                "forwarded by name (a wildcard queue is forwarded on its consumers' demand only)",
                self._settings.label,
                destination.pattern,
            )
            return
        self._subscribe(f"/{destination.kind}/{destination.pattern}", "", (), None)

    def _change(self, added: bool, want: Want) -> None:
        if added:
            if want.key not in self._by_key:
                sub_id = self._subscribe(want.destination, want.selector, want.path, want)
                if sub_id is not None:
                    self._by_key[want.key] = sub_id
            return
        self._deferred = [entry for entry in self._deferred if entry[3] is not want]
        sub_id = self._by_key.pop(want.key, None)
        if sub_id is not None:
            self._subscriptions.pop(sub_id, None)
            self._local.offer("UNSUBSCRIBE", {"id": sub_id})

    def _subscribe(
        self, destination: str, selector: str, path: tuple[str, ...], want: Want | None
    ) -> str | None:
        """A network subscription here for ``destination`` (None: the remote refused it
        lately; it is made once that pause is over)."""
        left = self._refusals.left(destination)
        if left:
            self._deferred.append((destination, selector, path, want))
            if self._retry is None:
                self._retry = self._loop.call_later(left, self._retry_deferred)
            return None
        sub_id = f"p{next(self._ids)}"
        headers = wire.push_subscription(
            sub_id, destination, selector, self._connector, self._status.remote_name, path, want
        )
        self._subscriptions[sub_id] = (destination, want)
        if not self._local.offer("SUBSCRIBE", headers):
            self._subscriptions.pop(sub_id, None)
            return None
        return sub_id

    def _retry_deferred(self) -> None:
        self._retry = None
        deferred, self._deferred = self._deferred, []
        for destination, selector, path, want in deferred:
            sub_id = self._subscribe(destination, selector, path, want)
            if sub_id is not None and want is not None:
                self._by_key[want.key] = sub_id

    # -- forwarding --------------------------------------------------------------------

    def forwards(self, sub_id: str) -> bool:
        """Is ``sub_id`` one of its subscriptions here?"""
        return sub_id in self._subscriptions

    def forward(self, pieces: MessagePieces) -> None:
        """A MESSAGE from one of its subscriptions: to the remote, acked here once a
        RECEIPT covers it.  A stompd remote over 1.2 gets the SEND made of its pieces."""
        if self._stompd and self._link.version == V1_2:
            destination = wire.destination_of(pieces.head)
            if self._forwarding(destination, pieces.ack):
                send = wire.send_pieces(pieces, self._local_name)
                self._queue_send(pieces.subscription, pieces.ack, destination, send)
            return
        # A remote that is not stompd (its headers may need translating, its STOMP may
        # be older): the frame, parsed.
        self.forward_frame(wire.parsed(pieces))

    def forward_frame(self, frame: Frame) -> None:
        """The same, for a MESSAGE parsed."""
        headers = frame.headers
        ack = headers.get("ack", "")
        destination = headers.get("destination", "")
        if self._forwarding(destination, ack):
            out = wire.forwarded(headers, self._settings.broker_name, self._rabbitmq)
            send = Frame("SEND", out, frame.body)
            self._queue_send(headers.get("subscription", ""), ack, destination, send)

    def _forwarding(self, destination: str, ack: str) -> bool:
        if self._forwardable(destination):
            return True
        # A topic's copy for the remote is dropped.  A queue's message (its destination
        # refused just now) is held until the connection ends and then goes back: never
        # acked, even by a later ACK, since every later one of its subscription is held
        # the same way.
        if not destination.startswith("/queue/"):
            self._local.offer("ACK", {"id": ack})
        return False

    def _forwardable(self, destination: str) -> bool:
        if self._refusals.left(destination):
            return False
        allowed = self._allowed.get(destination)
        if allowed is None:
            allowed = self._allowed[destination] = wire.allows(self._connector, destination)
        return allowed

    def _queue_send(self, sub_id: str, ack: str, destination: str, send: Frame | list[bytes]) -> None:
        n = next(self._ids)
        self._sends.append((n, sub_id, ack, destination.startswith("/queue/")))
        out_frames = self._out
        if not out_frames:
            self._loop.call_soon(self._write_sends)
        out_frames.append((n, destination, send))

    def _write_sends(self) -> None:
        """The SENDs of one turn to the link.  A stompd remote handles a connection's
        frames in order and a RECEIPT waits for everything stored before it: one on the
        last SEND of the turn (and every ``RECEIPT_EVERY``) says the remote has them all.
        The first SEND to each destination has one too, so that a refusal (an ERROR
        names the receipt) says which destination.  Any other broker: one each."""
        out_frames, self._out = self._out, []
        link = self._link
        every = not self._stompd
        last = len(out_frames) - 1
        announced = self._announced
        for index, (n, destination, send) in enumerate(out_frames):
            receipt = every or index == last or not n % RECEIPT_EVERY or destination not in announced
            if receipt:
                self._send_destinations[n] = destination
                announced.add(destination)
            if isinstance(send, Frame):
                if receipt:
                    send.headers["receipt"] = f"{RECEIPT_PREFIX}{n}"
                link.send(send)
            else:
                if receipt:
                    send.insert(1, b"receipt:s%d\n" % n)
                link.send_pieces(send)

    def receipted(self, n: int) -> None:
        """The remote has everything sent up to SEND ``n``: ACK it here."""
        sends = self._sends
        last: dict[str, str] = {}
        singles: list[str] = []
        forwarded = 0
        while sends and sends[0][0] <= n:
            number, sub_id, ack, cumulative = sends.popleft()
            self._send_destinations.pop(number, None)
            forwarded += 1
            if sub_id not in self._subscriptions:
                continue  # unsubscribed meanwhile: what it held went back already
            if cumulative:
                last[sub_id] = ack
            else:
                singles.append(ack)
        self._status.forwarded += forwarded
        for ack in last.values():
            self._local.offer("ACK", {"id": ack})
        for ack in singles:
            self._local.offer("ACK", {"id": ack})

    def refused(self, receipt: str, text: str) -> str:
        """The remote sent an ERROR (``text``; it names ``receipt``, if any), and the bridge
        closes the connection: why, in the bridge's words.  A refused SEND's destination is not
        forwarded again for a while."""
        number = receipt[len(RECEIPT_PREFIX) :]
        destination = None
        if receipt.startswith(RECEIPT_PREFIX) and number.isdigit():
            destination = self._send_destinations.get(int(number))
        label = self._settings.label
        if destination is None:
            error = "the remote broker sent an ERROR: " + text
            log.error("network bridge %s: %s", label, error)
            return error
        pause = self._connector.max_reconnect_delay / 1000
        self._refusals.refuse(destination, pause)
        error = f"the remote broker refused a message for {destination}: {text}"
        log.error("network bridge %s: %s; %s is not forwarded for %.0f s", label, error, destination, pause)
        return error

    # -- figures -----------------------------------------------------------------------

    @property
    def in_flight(self) -> int:
        """SENDs made whose RECEIPT has not come back (those of this turn included)."""
        return len(self._sends)

    @property
    def unwritten(self) -> int:
        """SENDs of this turn not written to the link yet."""
        return len(self._out)

    def pending(self) -> int:
        """Messages here waiting to be forwarded: the depth of the queues it forwards, and
        what waits in its topic subscriptions."""
        total = 0
        subscriptions = self._local.session.subscriptions
        for sub_id, (destination, _) in self._subscriptions.items():
            depth = self._engine.queue_depth(destination)
            if depth is not None:
                total += depth
            else:
                sub = subscriptions.get(sub_id)
                if sub is not None:
                    total += sub.cursor.count
        return total

    def destinations(self) -> tuple[str, ...]:
        return tuple(sorted({destination for destination, _ in self._subscriptions.values()}))
