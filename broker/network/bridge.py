"""One bridge: this broker joined to one remote broker over one STOMP connection.

A ``Bridge`` keeps the connection up (reconnecting with ActiveMQ's back-off) and, while
it is up, a ``Crossing`` does the work between a ``LocalClient`` (this broker's engine,
an internal session) and a ``Link`` (the remote broker, as a STOMP client of it):

* **push**: for each destination the remote has consumers for (its consumer advisories,
  ``demand.Demand``) and each statically included one, a network subscription here
  (``stompd.network``: never a message that was on the remote, none past the TTL; on
  standby or at a low priority behind this broker's own consumers).  Each MESSAGE it
  gets becomes a SEND to the remote with a receipt; the local ACK waits for that
  RECEIPT, so the message stays stored here until the remote has stored it.
* **pull** (duplex, and ``pulledDestinations``): a subscription on the remote for what
  this broker's consumers want (its own advisories) or for the named queues; each
  MESSAGE becomes a SEND here with a receipt, and the remote is ACKed once this
  broker's RECEIPT says the message is stored.

What crosses keeps its id (``_STOMPD_ID``: copies re-sent after a failure are dropped
by the receiver's audit), its path (``_STOMPD_PATH``), ``redelivered``, priority,
expiry, time stamp, group and every other header.  docs/network.md has the whole design.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import logging
import time
from collections import OrderedDict, deque
from typing import TYPE_CHECKING, Final

from broker.core.base import bridging
from broker.core.delivery.subscription import REDELIVERED_HEADER as REDELIVERED_LINE
from broker.core.handlers.advisory import PREFIX as ADVISORY_PREFIX
from broker.network.demand import ADVISORY_DESTINATIONS, NETWORK_PRIORITY, QUEUE, TOPIC, Demand, Want
from broker.network.link import Link
from broker.network.local import LocalClient
from protocol.encoder import FRAME_END
from protocol.errors import StompError
from protocol.escaping import escape, unescape
from protocol.frames import CONNECTED, ERROR, MESSAGE, RECEIPT, V1_0, V1_2, Frame
from protocol.parser import FrameParser
from wildcards import is_wildcard, matches

if TYPE_CHECKING:
    import ssl

    from broker.core.engine import Engine
    from config.model import NetworkConnector, NetworkDestination, NetworkUri

log = logging.getLogger("stompd.network")

CONNECTING: Final = "connecting"
CONNECTED_STATE: Final = "connected"
WAITING: Final = "waiting"
STOPPED: Final = "stopped"
#: How long a CONNECT may take (the TCP connect, TLS, the CONNECTED frame).
CONNECT_TIMEOUT_S = 10.0
#: A forwarded SEND asks for a receipt at least this often (and the last of a turn).
RECEIPT_EVERY = 100
#: A MESSAGE's headers that are the broker's, not the message's: not copied to a SEND.
_BROKER_ONLY = frozenset(
    {
        "subscription",
        "ack",
        "message-id",
        "redelivered",
        "destination",
        "receipt",
        "transaction",
        bridging.REDELIVERED_HEADER,
    }
)
_REMOTE_ADVISORIES = ("adv-q", "adv-t")
# Pieces of a MESSAGE as the engine writes it, and of the SEND made of it.
_MESSAGE_ID_AT: Final = len(b"MESSAGE\nmessage-id:")
_SUBSCRIPTION_AT: Final = len(b"subscription:")
_SEND_ID: Final = b"SEND\n" + bridging.ID_HEADER.encode() + b":"
_DEFAULTS: Final = b"\nexpires:0\npriority:4\n"
_PATH_LINE: Final = b"\n" + bridging.PATH_HEADER.encode() + b":"
_PATH_START: Final = bridging.PATH_HEADER.encode() + b":"
_REDELIVERED_LINE: Final = bridging.REDELIVERED_HEADER.encode() + b":true\n"
_LOCAL_ADVISORIES = ("a-q", "a-t")


class Bridge:
    """The bridge to one broker of a networkConnector's list: its state and its counts."""

    def __init__(
        self,
        engine: Engine,
        connector: NetworkConnector,
        uri: NetworkUri,
        broker_name: str,
        ssl_context: ssl.SSLContext | None,
        max_frame_size: int,
    ) -> None:
        self.engine = engine
        self.connector = connector
        self.uri = uri
        self.broker_name = broker_name
        self.ssl_context = ssl_context
        self.max_frame_size = max_frame_size
        self.state = STOPPED
        #: What the remote says it is (its brokerName; ``host:port`` for a broker that
        #: is not stompd), and its ``server`` header.
        self.remote_name = ""
        self.remote_server = ""
        #: Epoch seconds of the current connection's start (None: not connected).
        self.connected_since: float | None = None
        #: Messages this bridge sent to the remote and the remote receipted.
        self.forwarded = 0
        #: Messages it took from the remote and stored here.
        self.received = 0
        #: Connections made, and failed or lost.
        self.connects = 0
        self.failures = 0
        self.last_error = ""
        #: Destinations the remote refused (an ERROR for a SEND): not forwarded until then.
        self.refused: dict[str, float] = {}
        #: Fingerprints of the last messages pulled from a remote that is not stompd
        #: (``_fingerprint``), and the copies it sent again that they caught.
        self.pulled: OrderedDict[bytes, None] = OrderedDict()
        self.pulled_again = 0
        self.crossing: Crossing | None = None
        self._task: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()

    @property
    def label(self) -> str:
        return f"{self.connector.name} -> {self.uri}"

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name=f"bridge {self.label}")

    async def stop(self) -> None:
        self._stopping.set()
        crossing = self.crossing
        if crossing is not None:
            crossing.close("this broker is stopping")
        task = self._task
        if task is not None:
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass
        self.state = STOPPED

    async def _run(self) -> None:
        connector = self.connector
        delay = connector.initial_reconnect_delay / 1000
        while not self._stopping.is_set():
            self.state = CONNECTING
            crossing = self.crossing = Crossing(self)
            try:
                await crossing.run()
            except asyncio.CancelledError:
                crossing.close("this broker is stopping")
                raise
            except (OSError, TimeoutError) as exc:
                self.last_error = _describe(exc)
            except Exception as exc:
                log.exception("network bridge %s failed", self.label)
                self.last_error = f"the bridge failed: {exc!r}"
            finally:
                self.crossing = None
                self.connected_since = None
            if self._stopping.is_set():
                return
            self.failures += 1
            if crossing.established:
                delay = connector.initial_reconnect_delay / 1000
            self.state = WAITING
            log.warning("network bridge %s: %s; reconnecting in %.1f s", self.label, self.last_error, delay)
            await asyncio.sleep(delay)
            if crossing.established or not connector.use_exponential_back_off:
                continue
            delay = min(delay * connector.back_off_multiplier, connector.max_reconnect_delay / 1000)

    def remember_pulled(self, fingerprint: bytes) -> None:
        """Kept for as many messages as can be in flight twice over: what the remote may
        redeliver after a dropped link (its prefetch window) is among them."""
        pulled = self.pulled
        pulled[fingerprint] = None
        if len(pulled) > 4 * self.connector.prefetch_size:
            pulled.popitem(last=False)

    def status(self) -> dict[str, object]:
        crossing = self.crossing
        return {
            "connector": self.connector.name,
            "remote": str(self.uri),
            "remote_broker": self.remote_name or None,
            "state": self.state,
            "connected_since": self.connected_since,
            "duplex": self.connector.duplex,
            "forwarded": self.forwarded,
            "received": self.received,
            "in_flight": crossing.in_flight if crossing is not None else 0,
            "pending": crossing.pending() if crossing is not None else 0,
            "forwarding": crossing.forwarding() if crossing is not None else [],
            "pulling": crossing.pulling() if crossing is not None else [],
            "connects": self.connects,
            "failures": self.failures,
            "last_error": self.last_error or None,
        }


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
        headers = {"accept-version": "1.2,1.1,1.0", "host": "/"}
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
            self.error = "the remote broker refused the connection: " + _error_text(frame)
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
        queue = destination.startswith("/queue/")
        connector = self.connector
        remote = self.bridge.remote_name
        headers = {
            "id": sub_id,
            "destination": destination,
            # A queue's messages are forwarded in order and receipted in order: one ACK
            # covers every earlier one.  A topic's may be passed over (an advisory under
            # a wildcard), so each is acked on its own.
            "ack": "client" if queue else "client-individual",
            "activemq.prefetchSize": str(connector.prefetch_size),
            bridging.NETWORK: remote,
            bridging.NETWORK_TTL: str(connector.message_ttl),
            bridging.NETWORK_PATH: ",".join((*path, remote)),
        }
        if queue:
            _consumer_priority(headers, connector.decrease_network_consumer_priority, want)
        if selector:
            headers["selector"] = selector
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
        out = {name: value for name, value in headers.items() if name not in _BROKER_ONLY}
        out["destination"] = destination
        out[bridging.ID_HEADER] = headers.get("message-id", "")
        path = headers.get(bridging.PATH_HEADER)
        out[bridging.PATH_HEADER] = f"{path},{self.local_name}" if path else self.local_name
        if headers.get("redelivered") == "true":
            out[bridging.REDELIVERED_HEADER] = "true"
        if self._rabbitmq:
            _rabbitmq_expiration(out)
        self._queue_send(sub_id, ack, destination, Frame("SEND", out, frame.body))

    def _forward_pieces(self, sub_id: str, pieces: list[bytes]) -> None:
        """The same, to a stompd remote, for a MESSAGE still in the pieces the engine
        wrote (``LocalClient``): the SEND is made of them, bytes for bytes, without
        parsing the frame.

        ``pieces``: the head (``MESSAGE``, message-id, destination, timestamp, expires,
        priority, then the message's own headers, all escaped as STOMP 1.2 escapes them,
        which is what the link speaks), ``subscription``, ``ack``, maybe
        ``redelivered:true``, the end of the headers, and the body."""
        head = pieces[0]
        index = 2
        ack = ""
        piece = pieces[index]
        if piece.startswith(b"ack:"):
            ack = piece[4:-1].decode()
            index += 1
        redelivered = pieces[index] == REDELIVERED_LINE
        if redelivered:
            index += 1
        start = head.index(b"\ndestination:") + 13
        raw = head[start : head.index(b"\n", start)].decode()
        destination = unescape(raw, V1_2) if "\\" in raw else raw
        if not self._forwarding(destination, ack):
            return
        # "MESSAGE\nmessage-id:ID\n..." becomes "SEND\n_STOMPD_ID:ID\n...": the message's
        # id is its id on the next broker too.
        rest = head[_MESSAGE_ID_AT:]
        # No expiry and the default priority go without saying (two headers fewer to read).
        defaults = rest.find(_DEFAULTS)
        if defaults >= 0:
            rest = rest[:defaults] + rest[defaults + len(_DEFAULTS) - 1 :]
        local = self._local_name_bytes
        at = rest.find(_PATH_LINE)
        if at < 0:
            rest += _PATH_START + local + b"\n"
        else:
            end = rest.index(b"\n", at + len(_PATH_LINE))
            rest = rest[:end] + b"," + local + rest[end:]
        prefix = _SEND_ID + rest
        if redelivered:
            prefix += _REDELIVERED_LINE
        self._queue_send(sub_id, ack, destination, [prefix, pieces[index], pieces[index + 1], FRAME_END])

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
            allowed = self._allowed[destination] = self._allows(destination)
        return allowed

    def _allows(self, destination: str) -> bool:
        """Whether the connector's lists let ``destination`` over this link."""
        kind, _, name = destination[1:].partition("/")
        if kind == TOPIC and name.startswith(ADVISORY_PREFIX):
            return False
        connector = self.connector
        if any(d.kind == kind and matches(d.pattern, name) for d in connector.excluded):
            return False
        if any(d.kind == kind and matches(d.pattern, name) for d in connector.statically_included):
            return True
        included = connector.dynamically_included
        return not included or any(d.kind == kind and matches(d.pattern, name) for d in included)

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
        text = _error_text(frame)
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
        connector = self.connector
        prefetch = str(connector.prefetch_size)
        headers = {
            "id": sub_id,
            "destination": destination,
            "ack": "client-individual",
            "activemq.prefetchSize": prefetch,
            # RabbitMQ's name for it.
            "prefetch-count": prefetch,
        }
        if self._stompd:
            headers[bridging.NETWORK] = self.local_name
            headers[bridging.NETWORK_TTL] = str(connector.message_ttl)
            headers[bridging.NETWORK_PATH] = ",".join((*path, self.local_name))
            if not static and destination.startswith("/queue/"):
                _consumer_priority(headers, connector.decrease_network_consumer_priority, want)
        else:
            # A broker that is not stompd cannot tell a message that came from here: a
            # selector keeps those there (RabbitMQ ignores selectors; then they are
            # dropped here, see _pull_message).
            here = self.local_name.replace("'", "''")
            headers["selector"] = (
                f"{bridging.PATH_HEADER} IS NULL OR NOT ({bridging.PATH_HEADER} = '{here}' OR "
                f"{bridging.PATH_HEADER} LIKE '{here},%' OR {bridging.PATH_HEADER} LIKE '%,{here}' OR "
                f"{bridging.PATH_HEADER} LIKE '%,{here},%')"
            )
        if selector:
            headers["selector"] = (
                f"({headers['selector']}) AND ({selector})" if "selector" in headers else selector
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
        ack = _remote_ack(headers, link.version)
        path = headers.get(bridging.PATH_HEADER)
        nodes = bridging.split_path(path)
        if self.local_name in nodes:
            # It was here before (a broker that is not stompd sent it back): already
            # delivered from here, so not taken again.
            link.send(Frame("ACK", ack))
            return
        out = {name: value for name, value in headers.items() if name not in _BROKER_ONLY}
        out["destination"] = headers.get("destination", "")
        redelivered = headers.get("redelivered") == "true"
        fingerprint = None
        if not self._stompd:
            # Its message-id may not survive a redelivery (RabbitMQ's names the session):
            # what it sends again after a dropped link is known by its content instead.
            fingerprint = _fingerprint(out, frame.body)
            if redelivered and fingerprint in self.bridge.pulled:
                self.bridge.pulled_again += 1
                link.send(Frame("ACK", ack))
                return
        out[bridging.ID_HEADER] = headers.get(bridging.ID_HEADER) or headers.get("message-id", "")
        remote = self.bridge.remote_name
        out[bridging.PATH_HEADER] = f"{path},{remote}" if path else remote
        if redelivered:
            out[bridging.REDELIVERED_HEADER] = "true"
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


def _consumer_priority(headers: dict[str, str], decrease: bool, want: Want | None) -> None:
    """On standby behind this broker's own consumers, or (decreaseNetworkConsumerPriority)
    at a priority below theirs, lower the further away the consumer."""
    if decrease:
        headers[bridging.PRIORITY] = str(want.priority if want is not None else NETWORK_PRIORITY)
    else:
        headers[bridging.NETWORK_STANDBY] = "true"


def _rabbitmq_expiration(headers: dict[str, str]) -> None:
    """RabbitMQ expires a message by ``expiration`` (ms from now), not ``expires``."""
    text = headers.get("expires", "0")
    expires = int(text) if text.isdigit() else 0
    if expires and "expiration" not in headers:
        headers["expiration"] = str(max(expires - int(time.time() * 1000), 1))


def _fingerprint(headers: dict[str, str], body: bytes) -> bytes:
    """A message's content (its destination, headers and body): how a copy the remote
    sends again is known when its message-id is not the same."""
    digest = hashlib.blake2b(body, digest_size=16)
    for name, value in sorted(headers.items()):
        digest.update(f"\n{name}:{value}".encode())
    return digest.digest()


def _remote_ack(headers: dict[str, str], version: str) -> dict[str, str]:
    """The ACK frame's headers for a MESSAGE, as the remote's STOMP version names it."""
    if version == V1_2:
        return {"id": headers.get("ack", "")}
    ack = {"message-id": headers.get("message-id", "")}
    if version != V1_0:
        ack["subscription"] = headers.get("subscription", "")
    return ack


def _error_text(frame: Frame) -> str:
    message = frame.headers.get("message", "")
    body = frame.body.decode(errors="replace").strip()
    return f"{message}: {body}" if message and body and body != message else message or body or "(no message)"


def _describe(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return "the connection timed out"
    if isinstance(exc, OSError) and exc.strerror:
        return f"cannot connect: {exc.strerror}"
    return f"cannot connect: {exc}"
