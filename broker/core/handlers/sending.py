"""SEND: the message a frame carries, where it goes, and whether it goes now.

A SEND becomes one ``Message`` (the broker's headers stripped, priority, expiry and
time stamp read, a temporary ``reply-to`` named as other connections see it) and the
destinations it names.  Then, in order: a SEND in a transaction waits for COMMIT; one
that does not fit waits (flow control) or is refused; any other goes to the
scheduler, which routes it now or keeps it as a job.
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import TYPE_CHECKING, Final

from mypy_extensions import mypyc_attr

from broker.core.base import bridging, jms_headers, names
from broker.core.base.audit import ProducerAudit
from broker.core.base.errors import LONG_MAX, StoreFailed, int_header
from broker.core.base.guard import WRITE
from broker.core.base.jms_headers import JMS_HEADERS
from broker.core.base.message import BROKER_OWN, DEFAULT_PRIORITY, NOT_THE_SENDERS, USER_HEADER, Message
from broker.core.delivery import transforming
from broker.core.delivery.session import FanningOut, ParkedCreate, ParkedSend
from broker.core.handlers import scheduler
from broker.core.handlers.flow import DEFERRED
from broker.core.storage import jobs
from protocol import frames as f
from protocol.errors import MissingHeader, StompError
from store.api import LEVELS

if TYPE_CHECKING:
    from broker.core.base.clock import Clock
    from broker.core.base.plugins import SendPlugins
    from broker.core.base.settings import CoreSettings
    from broker.core.delivery.destinations import Destination, Destinations
    from broker.core.delivery.session import Session
    from broker.core.handlers.advisory import Advisories
    from broker.core.handlers.flow import Deferred, FlowControl
    from broker.core.handlers.scheduler import Scheduler
    from broker.core.handlers.statistics import Statistics
    from broker.core.handlers.transactions import Transactions
    from broker.core.storage.persistence import Persistence

log = logging.getLogger("stompd.engine")


@mypyc_attr(native_class=False)
class _Management(tuple):  # type: ignore[type-arg]
    """``prepare``'s targets for a request to the scheduler's management destination."""

    __slots__ = ()


MANAGEMENT: Final[tuple[Destination, ...]] = _Management()

#: The destinations a connection is counted as a producer of (the first it sent to).
SENT_TO_KEPT: Final = 1024
#: The headers ``_build`` does not take as they are: one ``isdisjoint`` finds any.
_NOT_AS_GIVEN: Final = NOT_THE_SENDERS | JMS_HEADERS


class Sending:
    __slots__ = (
        "_counted",
        "advisories",
        "audit",
        "clock",
        "destinations",
        "flow",
        "persistence",
        "plugins",
        "producers",
        "scheduler",
        "settings",
        "statistics",
        "transactions",
    )

    def __init__(
        self,
        settings: CoreSettings,
        clock: Clock,
        destinations: Destinations,
        persistence: Persistence,
        scheduler: Scheduler,
        flow: FlowControl,
        transactions: Transactions,
        audit: ProducerAudit | None = None,
    ) -> None:
        #: The forwarded messages this broker has (their ids), to drop copies.
        self.audit = audit if audit is not None else ProducerAudit()
        self.settings = settings
        self.clock = clock
        self.destinations = destinations
        self.persistence = persistence
        self.scheduler = scheduler
        self.flow = flow
        self.transactions = transactions
        #: Per destination name, the open connections that have sent to it (ActiveMQ's
        #: ProducerCount: STOMP registers no producer), kept as each session's ``sent_to``.
        self.producers: Counter[str] = Counter()
        #: Told of a SEND that found no room (FULL, FastProducer; set by the engine).
        self.advisories: Advisories | None = None
        #: Per open session that has sent, the names it is counted in ``producers`` for.
        self._counted: dict[Session, set[str]] = {}
        #: With ``<statisticsBrokerPlugin/>``: what answers statistics requests.
        self.statistics: Statistics | None = None
        #: With ``<timeStampingBrokerPlugin>`` or ``<forcePersistencyModeBrokerPlugin>``.
        self.plugins: SendPlugins | None = None

    def on_send(self, session: Session, frame: f.Frame) -> Deferred | None:
        headers = frame.headers
        statistics = self.statistics
        if statistics is not None and "reply-to" in headers and statistics.request(session, frame):
            return None
        # Before anything of the frame is taken: a SEND that would make a destination there
        # is no room for yet waits (NoRoomToCreate), and is run again as it came.  (Known
        # routes to an open broker need no look: one dict lookup on the hot path.)
        destination = headers.get("destination")
        destinations = self.destinations
        if destinations.guard.authorizing or destination not in destinations.routes:
            self._may_send(session, destination)
        receipt = headers.get("receipt")
        tx_id = headers.pop("transaction", None)
        message, targets = self.prepare(session, frame)
        if targets is MANAGEMENT:
            # At once, in a transaction too, as ActiveMQ's SchedulerBroker does.
            self._manage(session, message)
            return None
        if message.id_prefix and self._copy_of_known(session, message):
            return None
        if targets is not session.last_sent:
            self._sent(session, targets)
        if message.persistent and self.persistence.failed is not None:
            raise StoreFailed(f"persistent messages cannot be stored: {self.persistence.failed}")
        flow = self.flow
        if tx_id is not None:
            tx = self.transactions.get(session, tx_id)
            if tx.abandoned:
                return None  # its ABORT waits behind it: dropped, as the ABORT drops it
            # Held in RAM until COMMIT, charged to memory from now (transactions.py).
            if not flow.room_in_memory(message, targets):
                return self._wait(session, ParkedSend(message, targets, receipt, 0, tx))
            tx.add(message, targets)
            return None
        if not flow.fits(message, targets):
            return self._wait(session, ParkedSend(message, targets, receipt, 0))
        self.scheduler.deliver(message, targets, session)
        return None

    def _wait(self, session: Session, send: ParkedSend) -> Deferred:
        """``send`` does not fit: it waits for room (its RECEIPT and the connection's later
        frames with it), or is refused."""
        flow = self.flow
        message = send.message
        if self.advisories is not None:
            # Before it waits or is refused: ActiveMQ's send tells of a full destination first.
            self.advisories.full(session, send.targets)
        if self.settings.send_fail_if_no_space:
            raise flow.refusal(message)
        # A destination whose producers must never wait: swapping had no room either.
        if not all(target.policy.producer_flow_control for target in send.targets):
            raise flow.refusal(message, 'producerFlowControl="false"')
        timeout = self.settings.send_fail_if_no_space_after_timeout
        send.deadline = float(self.clock.ms + timeout) if timeout else 0.0
        flow.park(session, send)
        return DEFERRED

    def _copy_of_known(self, session: Session, message: Message) -> bool:
        """Whether a forwarded message (it came with its id) is one this broker has already
        stored (``Scheduler.deliver`` records it): then it is dropped, and its RECEIPT waits
        until the batch that holds whatever else is stored now is durable (the first copy
        is in it, or in one before it).  A first copy not stored yet (in a transaction,
        waiting for room) is not known: the second is kept too, a duplicate, never a loss."""
        audit = self.audit
        if not audit.seen(bridging.origin_of(message), message.id_prefix):
            return False
        audit.duplicates += 1
        self.persistence.hold(session.outbox)
        return True

    def prepare(self, session: Session, frame: f.Frame) -> tuple[Message, tuple[Destination, ...]]:
        """The message a SEND carries, and where it goes."""
        headers = frame.headers
        destination = headers.pop("destination", None)
        if not destination:
            raise MissingHeader("SEND requires a 'destination' header")
        message = self._build(session, destination, headers, frame.body)
        if not scheduler.HEADERS.isdisjoint(headers):
            if jobs.ACTION in headers and _is_management(destination):
                return message, MANAGEMENT
            scheduler.check(headers)
        return message, self.destinations.send_targets(session, destination)

    def _sent(self, session: Session, targets: tuple[Destination, ...]) -> None:
        """For the producers gauge: where ``session`` sends (route tuples are cached and
        shared; the last one is known at once), a bounded number of them, so a producer
        that sends to ever new names does not grow without end.  A route new to it counts
        it in ``producers`` for each name it had not sent to yet."""
        session.last_sent = targets
        sent_to = session.sent_to
        if len(sent_to) < SENT_TO_KEPT and targets not in sent_to and not session.closing:
            sent_to.add(targets)
            counted = self._counted.get(session)
            if counted is None:
                counted = self._counted[session] = set()
            new = [target.name for target in targets if target.name not in counted]
            counted.update(new)
            self.producers.update(new)

    def has_sent(self, session: Session, name: str) -> bool:
        """Whether ``session`` is counted a producer of destination ``name`` (one lookup)."""
        counted = self._counted.get(session)
        return counted is not None and name in counted

    def closed(self, session: Session) -> None:
        """``session`` is no longer open: it is a producer of nothing now."""
        producers = self.producers
        for name in self._counted.pop(session, ()):
            left = producers[name] - 1
            if left > 0:
                producers[name] = left
            else:
                del producers[name]

    def _may_send(self, session: Session, destination: str | None) -> None:
        """Raise unless ``session`` may send to ``destination`` (write, and create what does
        not exist yet) and there is room to make what does not exist yet."""
        if not destination:
            return
        destinations = self.destinations
        if destinations.guard.authorizing:
            destinations.authorize(session, WRITE, destination)
        destinations.make_room(session, destination, sending=True)

    def _manage(self, session: Session, message: Message) -> None:
        """A request to ``ActiveMQ.Scheduler.Management`` (``jobs``): nothing more goes out
        on the connection (its RECEIPT included) until it is carried out, and what it
        removed is durable."""
        request = jobs.request_of(message.headers)
        reply = None
        if request.action == jobs.BROWSE:
            reply = message.headers["reply-to"]
            # Stricter than ActiveMQ: the copies go only where the requester may write.
            if self.destinations.guard.authorizing:
                self.destinations.authorize(session, WRITE, reply)
            self.destinations.send_targets(session, reply)
        outbox = session.outbox
        outbox.hold()

        def done(found: int) -> None:
            log.info("scheduler management: %s by %s: %d jobs", request.action, session.id, found)
            self.persistence.hold(outbox)
            outbox.release()

        self.scheduler.manage(request, reply, done)

    def close(self, session: Session) -> None:
        """``session`` is gone.  Its parked SENDs were received, and a client that did not
        wait for their receipts (or for DISCONNECT's) still expects them delivered: they
        go on waiting for space without their connection.  Other parked frames die with it."""
        orphans = []
        for item in session.parked:
            if isinstance(item, FanningOut):
                continue
            if isinstance(item, ParkedCreate):
                # It would make a destination there is no room for: not without its connection.
                log.info(
                    "dropping a %s from closed connection %s: no room to make its destination",
                    item.frame.command,
                    session.id,
                )
                continue
            if isinstance(item, ParkedSend) and item.tx is not None:
                continue  # its transaction was aborted with the connection
            orphan = item if isinstance(item, ParkedSend) else self._orphan(session, item)
            if orphan is not None:
                orphans.append(orphan)
        self.flow.close(session, orphans)

    def _orphan(self, session: Session, frame: f.Frame) -> ParkedSend | None:
        """A SEND parked behind another, from a connection that has closed, or None."""
        headers = frame.headers
        destination = headers.get("destination", "")
        # A closed connection's own temporary destinations are gone with it.
        if frame.command != f.SEND or "transaction" in headers or "/temp-" in destination:
            return None
        try:
            self._may_send(session, destination)
            message, targets = self.prepare(session, frame)
        except StompError as exc:
            log.info("dropping a parked SEND from closed connection %s: %s", session.id, exc)
            return None
        if targets is MANAGEMENT:
            return None  # a request whose requester is gone
        return ParkedSend(message, targets, None, 0)

    def _build(self, session: Session, destination: str, headers: dict[str, str], body: bytes) -> Message:
        pop = headers.pop
        pop("receipt", None)
        content_length = pop("content-length", None) is not None
        if transforming.TRANSFORMATION in headers and not content_length:
            body = transforming.sent(headers, body)
        network_id = None
        redelivered = False
        # What a client may not set (the one list), and JMS names that set a field of the
        # message: one C-level check on the hot path, the rest only when one is there; a
        # bridge's connection keeps the network's.
        if not _NOT_AS_GIVEN.isdisjoint(headers):
            if not NOT_THE_SENDERS.isdisjoint(headers):
                if session.network is not None:
                    # A bridge's: the id and redelivered the message had where it came from.
                    network_id = pop(bridging.ID_HEADER, None)
                    bridge = session.bridge
                    if bridge is not None:
                        bridge.received += 1
                    redelivered = network_id is not None and pop(bridging.REDELIVERED_HEADER, None) == "true"
                for name in NOT_THE_SENDERS if session.network is None else BROKER_OWN:
                    pop(name, None)
            if not JMS_HEADERS.isdisjoint(headers):
                jms_headers.translate(headers)
        if self.settings.populate_jmsx_user_id:
            # ActiveMQ's populateJMSXUserID: who sent it, as the broker authenticated them
            # (an anonymous client's name where users are configured; none without a login).
            user = session.principal.user
            if user and session.network is None:
                headers[USER_HEADER] = user
        now = self.clock.ms
        priority = DEFAULT_PRIORITY
        text = pop("priority", None)
        if text is not None:
            # Out of range is clamped, as ActiveMQ's setJMSPriority does (10 is 9, -1 is 0).
            priority = min(max(int_header("priority", text), 0), LEVELS - 1)
        expires = 0
        text = pop("expires", None)
        if text is not None:
            # 0 or less: it never expires (ActiveMQ's Message.isExpired: expiration > 0).
            expires = max(int_header("expires", text), 0)
        text = pop("ttl", None)
        if text is not None:
            # What now + ttl can be: an expiry the store holds.
            ttl = int_header("ttl", text, hi=LONG_MAX - now)
            if ttl > 0:
                expires = now + ttl
        timestamp = now
        text = pop("timestamp", None)
        if text is not None:
            timestamp = int_header("timestamp", text)
        plugins = self.plugins
        if plugins is not None:
            timestamp, expires = plugins.apply(headers, timestamp, expires, now, session.network is not None)
        reply_to = headers.get("reply-to")
        if reply_to is not None and reply_to.startswith((names.TEMP_QUEUE, names.TEMP_TOPIC)):
            headers["reply-to"] = self.destinations.advertise_temp(session, reply_to)
        # Sequence and id are given when it is routed (``Routing.route``), not now.
        message = Message(
            0,
            "",
            destination,
            headers,
            body,
            priority=priority,
            expires=expires,
            timestamp=timestamp,
            persistent=headers.get("persistent") == "true",
            group=headers.get("JMSXGroupID"),
            content_length=content_length,
            origin=session.id,
            redelivered=redelivered,
        )
        if network_id:
            # A forwarded message keeps the id its first broker gave it (``str``, not an
            # ``IdPrefix``: ``Message.id`` is then the whole of it).
            message.id_prefix = str(network_id)
        message.arrived = now
        return message


def _is_management(destination: str) -> bool:
    """One ``/queue/`` or ``/topic/`` destination, ``ActiveMQ.Scheduler.Management``."""
    parts = names.split_destination(destination)
    return len(parts) == 1 and parts[0][0] in (names.QUEUE, names.TOPIC) and jobs.is_management(parts[0][1])
