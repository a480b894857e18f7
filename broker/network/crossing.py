"""One connection's worth of bridging (``bridge``'s docstring says what it does, push and
pull): while a ``Bridge`` is connected, a ``Crossing`` does the work between a
``LocalClient`` (this broker's engine, an internal session) and a ``Link`` (the remote
broker, as a STOMP client of it), making and reading the frames with ``wire``.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections import deque
from typing import TYPE_CHECKING, Final

from broker.core.base import bridging
from broker.network import wire
from broker.network.demand import ADVISORY_DESTINATIONS, QUEUE, Demand, Want
from broker.network.link import Link
from broker.network.local import LocalClient
from protocol.encoder import FRAME_END
from protocol.errors import StompError
from protocol.escaping import escape
from protocol.frames import CONNECTED, ERROR, MESSAGE, RECEIPT, V1_2, Frame
from protocol.parser import FrameParser
from wildcards import is_wildcard

if TYPE_CHECKING:
    from broker.network.bridge import Bridge
    from config.model import NetworkDestination

log = logging.getLogger("stompd.network")

CONNECTING: Final = "connecting"
CONNECTED_STATE: Final = "connected"
WAITING: Final = "waiting"
STOPPED: Final = "stopped"
#: How long a CONNECT may take (the TCP connect, TLS, the CONNECTED frame).
CONNECT_TIMEOUT_S = 10.0
#: A forwarded SEND asks for a receipt at least this often (and the last of a turn).
RECEIPT_EVERY = 100
_REMOTE_ADVISORIES = ("adv-q", "adv-t")
_LOCAL_ADVISORIES = ("a-q", "a-t")
_SUBSCRIPTION_AT: Final = len(b"subscription:")


class Crossing:
    """One connection's worth of bridging (``link.LinkHandler``); thrown away when it ends."""

    def __init__(self, bridge: Bridge) -> None:
        self.bridge = bridge
        connector = bridge.connector
        self.connector = connector
        self.engine = bridge.engine
        self.local_name = bridge.broker_name
        self.link: Link | None = None
        self.local: LocalClient | None = None
        #: CONNECTED came back: the connection counts as made (the back-off starts over).
        self.established = False
        #: Why it ended, as the remote said it (an ERROR), if it did.
        self.error = ""
        self._closed = False
        #: Is the remote stompd (it has advisories and network subscriptions)?  RabbitMQ
        #: (it reads a relative ``expiration``, not ActiveMQ's absolute ``expires``)?
        self._stompd = False
        self._rabbitmq = False
        self._ids = itertools.count(1)
        # Push: local subscription id -> the want (None: a statically included destination).
        self._push: dict[str, tuple[str, Want | None]] = {}
        self._push_by_key: dict[tuple[str, ...], str] = {}
        self._push_demand: Demand | None = None
        #: Push subscriptions waiting for their destination's refusal to be over.
        self._deferred: list[tuple[str, str, tuple[str, ...], Want | None]] = []
        self._retry: asyncio.TimerHandle | None = None
        #: SENDs to the remote waiting for their RECEIPT: (receipt number, local
        #: subscription, local ack id, cumulative), in the order they went.
        self._sends: deque[tuple[int, str, str, bool]] = deque()
        self._send_destinations: dict[int, str] = {}
        #: SENDs of this turn, written together (``_write_sends``): a frame, or the
        #: pieces of one (``_forward_pieces``).
        self._out: list[tuple[int, str, Frame | list[bytes]]] = []
        self._local_name_bytes = escape(bridge.broker_name, V1_2).encode()
        #: Destinations a receipted SEND went to on this connection.
        self._announced: set[str] = set()
        #: Destination -> whether the connector's lists let it over this link.
        self._allowed: dict[str, bool] = {}
        # Pull: remote subscription id -> (destination, want).
        self._pull: dict[str, tuple[str, Want | None]] = {}
        self._pull_by_key: dict[tuple[str, ...], str] = {}
        self._pull_demand: Demand | None = None
        #: Local SENDs (pulled messages) waiting for this broker's RECEIPT: receipt -> the
        #: remote ACK, and the message's fingerprint (a remote that is not stompd).
        self._pulled: dict[str, tuple[dict[str, str], bytes | None]] = {}
        self._lost = asyncio.get_running_loop().create_future()

    # -- the connection ------------------------------------------------------------------

    async def run(self) -> None:
        """Connect, bridge until the link is lost, then undo what this side did."""
        bridge = self.bridge
        uri = bridge.uri
        link = self.link = await Link.open(
            self, uri.host, uri.port, bridge.ssl_context, bridge.max_frame_size, CONNECT_TIMEOUT_S
        )
        connector = self.connector
        # stompd.network: this is broker local_name's bridge, whose SENDs' _STOMPD_* headers
        # count (a stompd remote lets only its admins say so; other brokers ignore it).
        headers = {"accept-version": "1.2,1.1,1.0", "host": "/", bridging.NETWORK: self.local_name}
        if connector.user_name is not None:
            headers["login"] = connector.user_name
            headers["passcode"] = connector.password or ""
        link.connect(headers)
        loop = asyncio.get_running_loop()
        deadline = loop.call_later(CONNECT_TIMEOUT_S, self._connect_deadline)
        try:
            reason = await self._lost
        finally:
            deadline.cancel()
            self._teardown()
        # What went wrong on this connection, said by the remote if it said anything.
        bridge.last_error = self.error or reason

    def _connect_deadline(self) -> None:
        if not self.established and self.link is not None:
            self.close(f"no CONNECTED from the remote broker within {CONNECT_TIMEOUT_S:.0f} s")

    def close(self, reason: str) -> None:
        link = self.link
        if link is not None:
            link.close(reason)
        elif not self._lost.done():
            self._lost.set_result(reason)

    def _teardown(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._retry is not None:
            self._retry.cancel()
            self._retry = None
        local, self.local = self.local, None
        if local is not None:
            # What was sent and not receipted goes back to its queue (the remote may have
            # it: its audit drops the copy sent again).
            local.close()
        self._sends.clear()
        self._pulled.clear()

    # -- link.LinkHandler ----------------------------------------------------------------

    def on_connected(self, frame: Frame) -> None:
        bridge = self.bridge
        link = self.link
        assert link is not None
        if frame.command == ERROR:
            self.error = "the remote broker refused the connection: " + wire.error_text(frame)
            link.close(self.error)
            return
        if frame.command != CONNECTED:
            link.close(f"the remote broker answered CONNECT with {frame.command}")
            return
        headers = frame.headers
        uri = bridge.uri
        remote = headers.get("broker-name") or f"{uri.host}:{uri.port}"
        if remote == self.local_name:
            self.error = (
                f"the remote broker is named {remote!r} too: every broker of a network needs a "
                "brokerName of its own"
            )
            link.close(self.error)
            return
        self.established = True
        bridge.remote_name = remote
        bridge.remote_server = headers.get("server", "")
        bridge.connects += 1
        bridge.connected_since = time.time()
        bridge.state = CONNECTED_STATE
        self._stompd = bridge.remote_server.startswith("stompd/")
        self._rabbitmq = bridge.remote_server.startswith("RabbitMQ/")
        log.info(
            "network bridge %s: connected to %s (%s)",
            bridge.label,
            remote,
            bridge.remote_server or "unknown server",
        )
        self.local = LocalClient(
            self.engine,
            self._local_frame,
            self._local_failed,
            self._local_reading,
            bridge.max_frame_size,
            f"(network bridge {bridge.label})",
            self._local_message,
        )
        connector = self.connector
        self._push_demand = Demand(
            self.local_name,
            connector.consumer_ttl,
            connector.conduit_subscriptions,
            publisher=remote,
            excluded=connector.excluded,
            included=connector.dynamically_included,
            static=connector.statically_included,
        )
        for destination in connector.statically_included:
            self._push_static(destination)
        if self._stompd:
            for sub_id, advisory_topic in zip(_REMOTE_ADVISORIES, ADVISORY_DESTINATIONS, strict=True):
                link.send(Frame("SUBSCRIBE", {"id": sub_id, "destination": advisory_topic, "ack": "auto"}))
        for destination in connector.pulled:
            self._pull_named(destination)
        if connector.duplex and self._stompd:
            self._pull_demand = Demand(
                remote,
                connector.consumer_ttl,
                connector.conduit_subscriptions,
                publisher=self.local_name,
                excluded=connector.excluded,
                included=connector.dynamically_included,
                static=connector.pulled,
            )
            for sub_id, advisory_topic in zip(_LOCAL_ADVISORIES, ADVISORY_DESTINATIONS, strict=True):
                self._local_send("SUBSCRIBE", {"id": sub_id, "destination": advisory_topic, "ack": "auto"})

    def on_frame(self, frame: Frame) -> None:
        command = frame.command
        if command == RECEIPT:
            receipt = frame.headers.get("receipt-id", "")
            if receipt.startswith("s"):
                self._receipted(int(receipt[1:]))
        elif command == MESSAGE:
            sub_id = frame.headers.get("subscription", "")
            if sub_id in _REMOTE_ADVISORIES:
                assert self._push_demand is not None
                for change in self._push_demand.advisory(frame):
                    self._push_change(change.added, change.want)
            elif sub_id in self._pull:
                self._pull_message(frame)
        elif command == ERROR:
            self._remote_error(frame)

    def on_writable(self, writable: bool) -> None:
        if self.local is not None:
            self.local.set_wanted(writable)

    def on_lost(self, reason: str) -> None:
        if not self._lost.done():
            self._lost.set_result(reason)

    # -- push: local messages to the remote -------------------------------------------------

    def _push_static(self, destination: NetworkDestination) -> None:
        if destination.kind == QUEUE and is_wildcard(destination.pattern):
            log.warning(
                "network bridge %s: staticallyIncludedDestinations queue %r is a wildcard: queues are "
                "forwarded by name (a wildcard queue is forwarded on its consumers' demand only)",
                self.bridge.label,
                destination.pattern,
            )
            return
        self._push_subscribe(f"/{destination.kind}/{destination.pattern}", "", (), None)

    def _push_change(self, added: bool, want: Want) -> None:
        if added:
            if want.key not in self._push_by_key:
                sub_id = self._push_subscribe(want.destination, want.selector, want.path, want)
                if sub_id is not None:
                    self._push_by_key[want.key] = sub_id
            return
        self._deferred = [entry for entry in self._deferred if entry[3] is not want]
        sub_id = self._push_by_key.pop(want.key, None)
        if sub_id is not None:
            self._push.pop(sub_id, None)
            self._local_send("UNSUBSCRIBE", {"id": sub_id})

    def _push_subscribe(
        self, destination: str, selector: str, path: tuple[str, ...], want: Want | None
    ) -> str | None:
        """A network subscription here for ``destination`` (None: the remote refused it
        lately; it is made once that pause is over)."""
        until = self.bridge.refused.get(destination)
        now = time.monotonic()
        if until is not None and until > now:
            self._deferred.append((destination, selector, path, want))
            if self._retry is None:
                self._retry = asyncio.get_running_loop().call_later(until - now, self._retry_deferred)
            return None
        sub_id = f"p{next(self._ids)}"
        headers = wire.push_subscription(
            sub_id, destination, selector, self.connector, self.bridge.remote_name, path, want
        )
        self._push[sub_id] = (destination, want)
        if not self._local_send("SUBSCRIBE", headers):
            self._push.pop(sub_id, None)
            return None
        return sub_id

    def _retry_deferred(self) -> None:
        self._retry = None
        deferred, self._deferred = self._deferred, []
        for destination, selector, path, want in deferred:
            sub_id = self._push_subscribe(destination, selector, path, want)
            if sub_id is not None and want is not None:
                self._push_by_key[want.key] = sub_id

    def _forward(self, sub_id: str, frame: Frame) -> None:
        """A MESSAGE from a push subscription: to the remote (acked here once a RECEIPT
        covers it)."""
        headers = frame.headers
        ack = headers.get("ack", "")
        destination = headers.get("destination", "")
        if not self._forwarding(destination, ack):
            return
        out = wire.forwarded(headers, self.local_name, self._rabbitmq)
        self._queue_send(sub_id, ack, destination, Frame("SEND", out, frame.body))

    def _forward_pieces(self, sub_id: str, pieces: list[bytes]) -> None:
        """The same, to a stompd remote, for a MESSAGE still in the pieces the engine
        wrote (``LocalClient``): the SEND is made of them (``wire.send_pieces``)."""
        destination, ack, redelivered, index = wire.read_pieces(pieces)
        if not self._forwarding(destination, ack):
            return
        send = wire.send_pieces(pieces, index, redelivered, self._local_name_bytes)
        self._queue_send(sub_id, ack, destination, send)

    def _forwarding(self, destination: str, ack: str) -> bool:
        if self.link is not None and self._forwardable(destination):
            return True
        # A topic's copy for the remote is dropped.  A queue's message (its destination
        # refused just now, the link closing) is held until the connection ends and then
        # goes back: never acked, even by a later ACK, since every later one of its
        # subscription is held the same way.
        if not destination.startswith("/queue/"):
            self._local_send("ACK", {"id": ack})
        return False

    def _queue_send(self, sub_id: str, ack: str, destination: str, send: Frame | list[bytes]) -> None:
        n = next(self._ids)
        self._sends.append((n, sub_id, ack, destination.startswith("/queue/")))
        out_frames = self._out
        if not out_frames:
            asyncio.get_running_loop().call_soon(self._write_sends)
        out_frames.append((n, destination, send))

    def _write_sends(self) -> None:
        """The SENDs of one turn to the link.  A stompd remote handles a connection's
        frames in order and a RECEIPT waits for everything stored before it: one on the
        last SEND of the turn (and every ``RECEIPT_EVERY``) says the remote has them all.
        The first SEND to each destination has one too, so that a refusal (an ERROR
        names the receipt) says which destination.  Any other broker: one each."""
        out_frames, self._out = self._out, []
        link = self.link
        if link is None:
            return
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
                    send.headers["receipt"] = f"s{n}"
                link.send(send)
            else:
                if receipt:
                    send.insert(1, b"receipt:s%d\n" % n)
                link.send_pieces(send)

    def _forwardable(self, destination: str) -> bool:
        until = self.bridge.refused.get(destination)
        if until is not None:
            if until > time.monotonic():
                return False
            del self.bridge.refused[destination]
        allowed = self._allowed.get(destination)
        if allowed is None:
            allowed = self._allowed[destination] = wire.allows(self.connector, destination)
        return allowed

    def _receipted(self, n: int) -> None:
        """The remote has everything sent up to SEND ``n``: ACK it here."""
        sends = self._sends
        last: dict[str, str] = {}
        singles: list[str] = []
        forwarded = 0
        while sends and sends[0][0] <= n:
            number, sub_id, ack, cumulative = sends.popleft()
            self._send_destinations.pop(number, None)
            forwarded += 1
            if sub_id not in self._push:
                continue  # unsubscribed meanwhile: what it held went back already
            if cumulative:
                last[sub_id] = ack
            else:
                singles.append(ack)
        self.bridge.forwarded += forwarded
        for ack in last.values():
            self._local_send("ACK", {"id": ack})
        for ack in singles:
            self._local_send("ACK", {"id": ack})

    def _remote_error(self, frame: Frame) -> None:
        """The remote refused something and is closing the connection."""
        bridge = self.bridge
        text = wire.error_text(frame)
        receipt = frame.headers.get("receipt-id", "")
        destination = self._send_destinations.get(int(receipt[1:])) if receipt[1:].isdigit() else None
        if destination is not None and receipt.startswith("s"):
            # Refused (say, not authorized): not forwarded again for a while, or the
            # link would fail the same way at once each time it comes back.
            pause = self.connector.max_reconnect_delay / 1000
            bridge.refused[destination] = time.monotonic() + pause
            self.error = f"the remote broker refused a message for {destination}: {text}"
            log.error(
                "network bridge %s: %s; %s is not forwarded for %.0f s",
                bridge.label,
                self.error,
                destination,
                pause,
            )
        else:
            self.error = "the remote broker sent an ERROR: " + text
            log.error("network bridge %s: %s", bridge.label, self.error)

    # -- pull: the remote's messages to this broker ------------------------------------------

    def _pull_named(self, destination: NetworkDestination) -> None:
        self._pull_subscribe(f"/{destination.kind}/{destination.pattern}", "", (), None, static=True)

    def _pull_change(self, added: bool, want: Want) -> None:
        if added:
            if want.key not in self._pull_by_key:
                self._pull_by_key[want.key] = self._pull_subscribe(
                    want.destination, want.selector, want.path, want, static=False
                )
            return
        sub_id = self._pull_by_key.pop(want.key, None)
        if sub_id is not None and self.link is not None:
            self._pull.pop(sub_id, None)
            self.link.send(Frame("UNSUBSCRIBE", {"id": sub_id}))

    def _pull_subscribe(
        self, destination: str, selector: str, path: tuple[str, ...], want: Want | None, *, static: bool
    ) -> str:
        sub_id = f"l{next(self._ids)}"
        headers = wire.pull_subscription(
            sub_id, destination, selector, self.connector, self.local_name, path, want, self._stompd, static
        )
        self._pull[sub_id] = (destination, want)
        assert self.link is not None
        self.link.send(Frame("SUBSCRIBE", headers))
        return sub_id

    def _pull_message(self, frame: Frame) -> None:
        """A MESSAGE from the remote: stored here, then ACKed there."""
        link = self.link
        if link is None or self.local is None:
            return
        headers = frame.headers
        ack = wire.remote_ack(headers, link.version)
        path = headers.get(bridging.PATH_HEADER)
        nodes = bridging.split_path(path)
        if self.local_name in nodes:
            # It was here before (a broker that is not stompd sent it back): already
            # delivered from here, so not taken again.
            link.send(Frame("ACK", ack))
            return
        fingerprint = None
        if not self._stompd:
            # Its message-id may not survive a redelivery (RabbitMQ's names the session):
            # what it sends again after a dropped link is known by its content instead.
            own = {name: value for name, value in headers.items() if name not in wire.BROKER_ONLY}
            own["destination"] = headers.get("destination", "")
            fingerprint = wire.fingerprint(own, frame.body)
            if headers.get("redelivered") == "true" and fingerprint in self.bridge.pulled:
                self.bridge.pulled_again += 1
                link.send(Frame("ACK", ack))
                return
        out = wire.pulled(headers, path, self.bridge.remote_name, self._stompd)
        receipt = f"r{next(self._ids)}"
        out["receipt"] = receipt
        self._pulled[receipt] = (ack, fingerprint)
        if not self._local_send("SEND", out, frame.body):
            self._pulled.pop(receipt, None)
            self.close("a message from the remote broker could not be stored here")
        elif fingerprint is not None:
            self.bridge.remember_pulled(fingerprint)

    def _local_receipt(self, receipt: str) -> None:
        pulled = self._pulled.pop(receipt, None)
        if pulled is not None and self.link is not None:
            self.bridge.received += 1
            self.link.send(Frame("ACK", pulled[0]))

    # -- the local side ------------------------------------------------------------------

    def _local_send(self, command: str, headers: dict[str, str], body: bytes = b"") -> bool:
        local = self.local
        if local is None:
            return False
        try:
            local.send(command, headers, body)
        except StompError as exc:
            log.error(
                "network bridge %s: %s %s refused here: %s",
                self.bridge.label,
                command,
                headers.get("destination") or headers.get("id"),
                exc,
            )
            return False
        return True

    def _local_message(self, pieces: list[bytes]) -> None:
        """A MESSAGE this broker wrote to the bridge, as the pieces it wrote (``LocalClient``)."""
        sub_id = pieces[1][_SUBSCRIPTION_AT:-1].decode()
        link = self.link
        if sub_id in self._push and link is not None and link.version == V1_2 and self._stompd:
            self._forward_pieces(sub_id, pieces)
            return
        # An advisory, or a remote that is not stompd (its headers may need translating,
        # its STOMP may be older): the frame, parsed.
        parser = FrameParser(max_frame_size=1 << 62)
        parser.version = V1_2
        parser.feed(b"".join(pieces) + FRAME_END)
        frame = parser.next_frame()
        if frame is not None:
            self._local_frame(frame)

    def _local_frame(self, frame: Frame) -> None:
        command = frame.command
        if command == MESSAGE:
            sub_id = frame.headers.get("subscription", "")
            if sub_id in self._push:
                self._forward(sub_id, frame)
            elif sub_id in _LOCAL_ADVISORIES and self._pull_demand is not None:
                for change in self._pull_demand.advisory(frame):
                    self._pull_change(change.added, change.want)
        elif command == RECEIPT:
            self._local_receipt(frame.headers.get("receipt-id", ""))

    def _local_failed(self, exc: BaseException) -> None:
        # What it had not receipted may be lost here: not to be taken for a copy.
        for _, fingerprint in self._pulled.values():
            if fingerprint is not None:
                self.bridge.pulled.pop(fingerprint, None)
        self.close(f"this broker failed the bridge's session: {exc}")

    def _local_reading(self, reading: bool) -> None:
        """This broker stops taking the bridge's SENDs (no room): stop reading the remote."""
        link = self.link
        if link is not None:
            if reading:
                link.resume_reading()
            else:
                link.pause_reading()

    # -- for the console ---------------------------------------------------------------------

    @property
    def in_flight(self) -> int:
        return len(self._sends) + len(self._pulled)

    @property
    def awaiting_receipt(self) -> int:
        """Messages gone out, to the remote or to this broker, whose RECEIPT has not come back."""
        return len(self._sends) - len(self._out) + len(self._pulled)

    def pending(self) -> int:
        """Messages here waiting to be forwarded: the depth of the queues it forwards, and
        what waits in its topic subscriptions."""
        local = self.local
        if local is None:
            return 0
        total = 0
        subscriptions = local.session.subscriptions
        for sub_id, (destination, _) in self._push.items():
            depth = self.engine.queue_depth(destination)
            if depth is not None:
                total += depth
            else:
                sub = subscriptions.get(sub_id)
                if sub is not None:
                    total += sub.cursor.count
        return total

    def forwarding(self) -> list[str]:
        return sorted({destination for destination, _ in self._push.values()})

    def pulling(self) -> list[str]:
        return sorted({destination for destination, _ in self._pull.values()})
