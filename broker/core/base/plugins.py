"""The broker plugins that change what happens to a message: ActiveMQ's
TimeStampingBrokerPlugin and ForcePersistencyModeBroker as it is sent, DiscardingDLQBroker
when it would be dead-lettered.

``Sending`` calls ``SendPlugins.apply`` only when one of the first two is configured (the
SEND path otherwise pays one None check); ``Settlement`` asks ``Discarding`` only of a
dead letter.
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING, TypeVar

from broker.core.base import names

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from broker.core.base.channel import Channel as Session
    from broker.core.base.settings import DiscardingDLQ, LoggingFlags, TimeStamping
    from protocol.frames import Frame

R = TypeVar("R")
S = TypeVar("S", bound="Session")

log = logging.getLogger("stompd.engine")


class SendPlugins:
    __slots__ = ("persistence_flag", "time_stamping")

    def __init__(self, time_stamping: TimeStamping | None, persistence_flag: bool | None) -> None:
        self.time_stamping = time_stamping
        #: ``<forcePersistencyModeBrokerPlugin persistenceFlag>``; None: not configured.
        self.persistence_flag = persistence_flag

    def apply(
        self, headers: dict[str, str], timestamp: int, expires: int, now: int, networked: bool
    ) -> tuple[int, int]:
        """A SEND's message before it is made (its user ``headers``, its ``timestamp``
        and ``expires``), received at ``now`` (``networked``: over a network bridge):
        the headers rewritten in place, the time stamp and expiry it gets returned."""
        flag = self.persistence_flag
        if flag is not None:
            # ActiveMQ's MESSAGE says persistent:true only of a persistent message.
            if flag:
                headers["persistent"] = "true"
            else:
                headers.pop("persistent", None)
        stamping = self.time_stamping
        if stamping is not None and (stamping.process_network_messages or not networked):
            return _stamp(stamping, timestamp, expires, now)
        return timestamp, expires


def _stamp(stamping: TimeStamping, timestamp: int, expires: int, now: int) -> tuple[int, int]:
    """ActiveMQ's rules: a message with a time stamp gets the broker's, and keeps the time
    to live it was sent with (``expires - timestamp``), or gets ``zeroExpirationOverride``
    if it had none, at most ``ttlCeiling``.  With ``futureOnly`` nothing changes unless
    the new expiry is later than the old (a broker clock behind the producer's)."""
    if timestamp <= 0:
        return timestamp, expires
    ttl = expires - timestamp if expires > 0 else stamping.zero_expiration_override
    ceiling = stamping.ttl_ceiling
    if ttl > 0 and 0 < ceiling < ttl:
        ttl = ceiling
    stamped = ttl + now
    if stamping.future_only and stamped <= expires:
        return timestamp, expires
    return now, stamped if ttl > 0 and stamped > 0 else expires


class Discarding:
    """``<discardingDLQBrokerPlugin>``: which dead letters are dropped, and how many were."""

    __slots__ = ("_only", "dropped", "settings")

    def __init__(self, settings: DiscardingDLQ) -> None:
        self.settings = settings
        self._only = tuple(re.compile(pattern) for pattern in settings.drop_only)
        self.dropped = 0

    def drops(self, destination: str, message_id: str) -> bool:
        """Whether a dead letter from ``destination`` is dropped; if so, it is logged and
        counted as ActiveMQ does (a debug line each, a total every reportInterval)."""
        reason = self._reason(destination)
        if reason is None:
            return False
        log.debug("Discarding DLQ BrokerFilter[%s] - skipping message: %s", reason, message_id)
        self.dropped += 1
        interval = self.settings.report_interval
        if interval > 0 and self.dropped % interval == 0:
            log.info(
                "Total of %d messages were discarded, since their destination was the target of a DLQ",
                self.dropped,
            )
        return True

    def _reason(self, destination: str) -> str | None:
        """ActiveMQ's order of tests, named as its log names them."""
        settings = self.settings
        if settings.drop_all:
            return "dropAll"
        kind, bare = names.split_destination(destination)[0]
        temporary = kind not in (names.QUEUE, names.TOPIC)
        queue = kind in names.QUEUE_KINDS
        if settings.drop_temporary_topics and temporary and not queue:
            return "dropTemporaryTopics"
        if settings.drop_temporary_queues and temporary and queue:
            return "dropTemporaryQueues"
        if any(pattern.fullmatch(bare) for pattern in self._only):
            return "dropOnly"
        return None


#: Where ``<loggingBrokerPlugin>`` writes (ActiveMQ's is its class name).
BROKER_LOG = "stompd.LoggingBrokerPlugin"


class BrokerLog:
    """``<loggingBrokerPlugin>``: the broker's events as ActiveMQ's LoggingBrokerPlugin
    writes them, one INFO line each on the ``stompd.LoggingBrokerPlugin`` logger.

    The engine wraps the frame handlers of the kinds of event that are on (``wrap``), so a
    broker without the plugin, or with a kind off, runs exactly the code it ran before;
    a connection's end and a destination's birth and death call it where they happen,
    only when it is there.  What ActiveMQ prints of its OpenWire commands
    (``ConnectionInfo {...}``) is shown with the fields a STOMP connection has.
    """

    __slots__ = ("_open", "flags", "log")

    def __init__(self, flags: LoggingFlags) -> None:
        self.flags = flags
        self.log = logging.getLogger(BROKER_LOG)
        #: The connections whose CONNECT it logged: their end is logged too.
        self._open: set[str] = set()

    # -- connections and sessions (each STOMP connection is one of each, and a producer) --

    def connected(self, session_id: str, address: str, headers: Mapping[str, str]) -> None:
        flags = self.flags
        info = self.log.info
        client_id = headers.get("client-id") or session_id
        self._open.add(session_id)
        if flags.connections:
            info(
                "Adding Connection: ConnectionInfo {connectionId = %s, clientId = %s, clientIp = %s, "
                "userName = %s}",
                session_id,
                client_id,
                address,
                headers.get("login"),
            )
        if flags.sessions:
            info("Adding Session: SessionInfo {sessionId = %s:1}", session_id)
        if flags.producers:
            info("Adding Producer: ProducerInfo {producerId = %s:1:1}", session_id)

    def disconnected(self, session_id: str, address: str, client_id: str | None) -> None:
        if session_id not in self._open:
            return
        self._open.discard(session_id)
        flags = self.flags
        info = self.log.info
        if flags.producers:
            info("Removing Producer: ProducerInfo {producerId = %s:1:1}", session_id)
        if flags.sessions:
            info("Removing Session: SessionInfo {sessionId = %s:1}", session_id)
        if flags.connections:
            info(
                "Removing Connection: ConnectionInfo {connectionId = %s, clientId = %s, clientIp = %s}",
                session_id,
                client_id or session_id,
                address,
            )

    # -- frames ------------------------------------------------------------------

    def wrap(self, command: str, handler: Callable[[S, Frame], R]) -> Callable[[S, Frame], R]:
        """``handler`` for ``command``, with its line first if its kind is on."""
        line = self._line_for(command)
        if line is None:
            return handler

        def logged(session: S, frame: Frame) -> R:
            line(session, frame)
            return handler(session, frame)

        return logged

    def _line_for(self, command: str) -> Callable[[Session, Frame], None] | None:
        flags = self.flags
        if command == "SEND" and flags.producers:
            return self._send
        if command in ("SUBSCRIBE", "UNSUBSCRIBE", "ACK") and flags.consumers:
            return {"SUBSCRIBE": self._subscribe, "UNSUBSCRIBE": self._unsubscribe, "ACK": self._ack}[command]
        if command in ("BEGIN", "COMMIT", "ABORT") and flags.transactions:
            return {"BEGIN": self._begin, "COMMIT": self._commit, "ABORT": self._abort}[command]
        return None

    def _send(self, session: Session, frame: Frame) -> None:
        headers = frame.headers
        destination = headers.get("destination", "")
        logger = self.log
        if self.flags.per_destination_logger:
            kind, bare = names.split_destination(destination)[0] if destination else ("", "")
            kind_name = "Queue" if kind in names.QUEUE_KINDS else "Topic"
            logger = logging.getLogger(f"{BROKER_LOG}.{kind_name}.{bare}")
        logger.info(
            "Sending message: ActiveMQMessage {producerId = %s:1:1, destination = %s, persistent = %s, "
            "priority = %s, size = %d, properties = %s}",
            session.id,
            _amq(destination),
            headers.get("persistent") == "true",
            headers.get("priority", "4"),
            len(frame.body),
            _properties(headers),
        )

    def _subscribe(self, session: Session, frame: Frame) -> None:
        headers = frame.headers
        self.log.info(
            "Adding Consumer: ConsumerInfo {consumerId = %s:1:?, destination = %s, selector = %s, ack = %s}",
            session.id,
            _amq(headers.get("destination", "")),
            headers.get("selector"),
            headers.get("ack", "auto"),
        )

    def _unsubscribe(self, session: Session, frame: Frame) -> None:
        self.log.info(
            "Removing Consumer: ConsumerInfo {connectionId = %s, subscription = %s}",
            session.id,
            frame.headers.get("id") or frame.headers.get("destination"),
        )

    def _ack(self, session: Session, frame: Frame) -> None:
        headers = frame.headers
        self.log.info(
            "Acknowledging message for client ID: %s, %s",
            session.client_id or session.id,
            headers.get("id") or headers.get("message-id"),
        )

    def _begin(self, session: Session, frame: Frame) -> None:
        self.log.info("Beginning transaction: %s", _tx(session, frame))

    def _commit(self, session: Session, frame: Frame) -> None:
        self.log.info("Committing transaction: %s", _tx(session, frame))

    def _abort(self, session: Session, frame: Frame) -> None:
        self.log.info("Rolling back Transaction: %s", _tx(session, frame))

    # -- the broker's own (logInternalEvents) ---------------------------------------

    def destination_added(self, name: str) -> None:
        if self.flags.internal:
            kind, bare = names.split_destination(name)[0]
            self.log.info(
                "Adding destination: %s:%s", "Queue" if kind in names.QUEUE_KINDS else "Topic", bare
            )

    def destination_removed(self, name: str) -> None:
        if self.flags.internal:
            kind, bare = names.split_destination(name)[0]
            self.log.info(
                "Removing destination: %s:%s", "Queue" if kind in names.QUEUE_KINDS else "Topic", bare
            )


def _amq(destination: str) -> str:
    """A destination as ActiveMQ prints one (``queue://orders``)."""
    if not destination:
        return "null"
    kind, bare = names.split_destination(destination)[0]
    return ("queue://" if kind in names.QUEUE_KINDS else "topic://") + bare


def _tx(session: Session, frame: Frame) -> str:
    # ActiveMQ's LocalTransactionId key: connection id and the transaction's number; a
    # STOMP transaction is known by its name.
    return f"TX:{session.id}:{frame.headers.get('transaction')}"


#: What a SEND's line does not list as a property: the frame's own headers.
_NOT_PROPERTIES = frozenset(
    {"destination", "persistent", "priority", "receipt", "content-length", "transaction", "expires"}
)


def _properties(headers: Mapping[str, str]) -> str:
    return "{" + ", ".join(f"{k}={v}" for k, v in headers.items() if k not in _NOT_PROPERTIES) + "}"
