"""The broker core: every client frame comes in through ``Engine.handle``.

Sans-IO: the engine never touches a socket or an event loop.  A session writes
through its outbox, the clock is set by whoever drives the engine, and errors are
raised as ``StompError`` for the edge to turn into an ERROR frame.
"""

from __future__ import annotations

import itertools
import logging
import time
from collections import deque
from typing import TYPE_CHECKING

from broker.core import names, scheduler
from broker.core.clock import Clock
from broker.core.cursor import Cursor
from broker.core.destinations import Destination, Destinations
from broker.core.disk import Disk
from broker.core.durable import Durable, Durables, decode
from broker.core.errors import (
    AccessDenied,
    DuplicateSubscription,
    InvalidHeader,
    StoreFailed,
    TransactionError,
    UnknownMessage,
    UnknownSubscription,
)
from broker.core.flow import Blocked, ParkedSend, no_space_error
from broker.core.message import DEFAULT_PRIORITY, Message
from broker.core.persistence import (
    TOPIC_KIND,
    Persistence,
    QueueSource,
    StoredSchedule,
    SubscriptionSource,
)
from broker.core.queue import Queue
from broker.core.scheduler import Jobs, timing_of
from broker.core.selector import compile_selector
from broker.core.session import AWAIT_CONNECT, CLOSING, CONNECTED, Session
from broker.core.settings import CoreSettings
from broker.core.subscription import ACK_MODES, AUTO, CLIENT, Subscription
from broker.core.swap import SwapSpace
from broker.core.topic import Topic
from broker.core.transactions import Transaction
from broker.core.usage import SystemUsage, UsageMeter
from protocol import frames as f
from protocol.errors import MissingHeader, StompError, UnexpectedFrame, UnknownCommand
from protocol.negotiation import negotiate_heartbeat, negotiate_version, parse_heartbeat

if TYPE_CHECKING:
    from collections.abc import Callable

    from broker.core.session import Outbox
    from store.api import Stores

log = logging.getLogger("stompd.engine")


class _Deferred:
    """A handler's answer meaning "the RECEIPT goes out later" (a parked SEND)."""


DEFERRED = _Deferred()
#: Frames that go past parked SENDs, so a blocked producer can still consume.
_NEVER_PARKED = frozenset({f.ACK, f.NACK})


class Engine:
    def __init__(
        self, settings: CoreSettings | None = None, clock: Clock | None = None, *, stores: Stores
    ) -> None:
        self.settings = settings = settings or CoreSettings()
        self.clock = clock or Clock()
        self.usage = SystemUsage(settings.memory_limit, settings.store_limit, settings.temp_limit)
        self.disk = Disk(stores.worker, self.clock, stores.temp, self.usage.memory)
        self.swap = SwapSpace(stores.temp, self.disk, self.usage.temp, self.usage.memory, settings.page_size)
        self.persistence = Persistence(stores.messages, self.usage.store, self.disk)
        self.destinations = Destinations(settings, self.clock, self.usage, self.swap, self.persistence)
        self.destinations.on_expired = self._expired
        self.durables = Durables()
        self.queues = self.destinations.queues
        self.router = self.destinations.router
        self.blocked = Blocked()
        self.jobs = Jobs(
            self.clock,
            self.usage.memory,
            self._route_all,
            lambda destination: self.destinations.send_targets(None, destination),
            self._next_seq,
        )
        #: Messages given back, waiting out the redelivery delay: (due ms, queue, messages).
        self._redeliveries: deque[tuple[int, Queue, list[Message]]] = deque()
        self.sessions: dict[str, Session] = {}
        self._seq = 0
        self._session_ids = itertools.count(1)
        # Boot-unique, so ids never repeat across restarts; no ':' so that no STOMP
        # version needs to escape it.
        self._id_prefix = f"ID-{_base36(int(time.time() * 1000))}-"
        self._handlers: dict[str, Callable[[Session, f.Frame], Callable[[], None] | _Deferred | None]] = {
            f.SEND: self._on_send,
            f.ACK: self._on_ack,
            f.NACK: self._on_nack,
            f.SUBSCRIBE: self._on_subscribe,
            f.UNSUBSCRIBE: self._on_unsubscribe,
            f.BEGIN: self._on_begin,
            f.COMMIT: self._on_commit,
            f.ABORT: self._on_abort,
            f.DISCONNECT: self._on_disconnect,
            f.CONNECT: self._on_connect,
            f.STOMP: self._on_connect,
        }

    # -- sessions --------------------------------------------------------------

    def open_session(self, outbox: Outbox) -> Session:
        session = Session(f"{self._id_prefix}{next(self._session_ids)}", outbox, self.clock)
        self.sessions[session.id] = session
        return session

    def close_session(self, session: Session) -> None:
        """The connection is gone: abort its transactions, give back what it held."""
        if self.sessions.pop(session.id, None) is None:
            return
        session.phase = CLOSING
        # Nothing more is dispatched to it while what it held is given back.
        session.writable = False
        for tx in list(session.transactions.values()):
            self._abort(tx)
        session.transactions.clear()
        for sub in list(session.subscriptions.values()):
            self._unsubscribe(session, sub)
        self.destinations.drop_temporaries(session)
        # Its parked SENDs were received, and a client that did not wait for their
        # receipts (or for DISCONNECT's) still expects them delivered: they go on
        # waiting for space without their connection.  Other parked frames die with it.
        for item in session.parked:
            orphan = item if isinstance(item, ParkedSend) else self._orphan_send(session, item)
            if orphan is not None:
                self.blocked.orphans.append(orphan)
        session.parked.clear()
        session.parked_bytes = 0
        self.blocked.release(session, self.clock.ms)
        self.retry_blocked()

    def recover(self) -> int:
        """Rebuild the stored queues from the message store's records (no message is read).

        Returns how many stored messages there are.
        """
        persistence = self.persistence
        recovery = persistence.store.recover()
        self._seq = max(self._seq, recovery.next_seq - 1)
        self.usage.store.charge(recovery.used_bytes)
        total = 0
        for sub_record in recovery.subscriptions:
            destination, selector_text, no_local = decode(sub_record.data)
            self.durables.add(
                Durable(
                    sub_record.id,
                    sub_record.client_id,
                    sub_record.name,
                    destination,
                    selector_text,
                    no_local,
                    compile_selector(selector_text).matches if selector_text else None,
                )
            )
        for sub_id in recovery.draining:
            persistence.drain(sub_id)
        self.jobs.stored = StoredSchedule(persistence, recovery.next_due_ms)
        for record in recovery.destinations:
            if record.kind == TOPIC_KIND:
                # Read back through durable subscriptions' pointers; the store knows its id.
                total += sum(record.counts)
                continue
            queue = self.destinations.queue(record.name)
            queue.store_id = record.id
            queue.cursor.recovered(QueueSource(persistence, record.id), record.counts, recovery.next_seq - 1)
            total += sum(record.counts)
        return total

    def flush(self) -> None:
        """End of a batch of work: submit the writes it queued (one per swap log, one store batch)."""
        self.swap.flush()
        self.persistence.flush()

    def after_io(self, callback: Callable[[], None]) -> None:
        """Run a store completion on the engine's thread, then what it may have freed."""
        callback()
        if self.blocked:
            self.retry_blocked()
        self.flush()

    def tick(self) -> None:
        """Called a few times a second: scheduled deliveries, parked-SEND deadlines, retries."""
        self.disk.run_due()
        self.jobs.tick()
        redeliveries = self._redeliveries
        now = self.clock.ms
        while redeliveries and redeliveries[0][0] <= now:
            _, queue, returned = redeliveries.popleft()
            if queue.cursor.closed:
                for message in returned:
                    message.drop()
            else:
                queue.requeue(returned)
        if self.blocked:
            self._expire_parked()
            self.retry_blocked()
        self.flush()

    def set_writable(self, session: Session, writable: bool) -> None:
        session.writable = writable
        if writable:
            for sub in list(session.subscriptions.values()):
                sub.pump()

    # -- frames ----------------------------------------------------------------

    def handle(self, session: Session, frame: f.Frame) -> None:
        command = frame.command
        handler = self._handlers.get(command)
        if handler is None:
            if command in f.SERVER_COMMANDS:
                raise UnexpectedFrame(f"{command} is a server frame; a client may not send it")
            raise UnknownCommand(f"unknown command {command!r}")
        phase = session.phase
        if phase is not CONNECTED and command not in (f.CONNECT, f.STOMP):
            if phase is CLOSING:
                return
            raise UnexpectedFrame(f"{command} before CONNECT: the first frame must be CONNECT or STOMP")
        if session.parked and command not in _NEVER_PARKED:
            self._park(session, frame)
            return
        self._invoke(handler, session, frame)
        if self.blocked:
            self.retry_blocked()

    def _invoke(
        self,
        handler: Callable[[Session, f.Frame], Callable[[], None] | _Deferred | None],
        session: Session,
        frame: f.Frame,
    ) -> None:
        """Run a frame's handler, then its RECEIPT, then what must follow the RECEIPT."""
        receipt = frame.headers.get("receipt")
        try:
            after = handler(session, frame)
        except StompError as exc:
            exc.receipt_id = receipt
            raise
        if after is DEFERRED:
            return
        if receipt is not None:
            session.send_receipt(receipt)
        if after is not None:
            after()  # type: ignore[operator]

    def _on_connect(self, session: Session, frame: f.Frame) -> None:
        if session.phase is not AWAIT_CONNECT:
            raise UnexpectedFrame("already connected: CONNECT may only be sent once")
        headers = frame.headers
        version = negotiate_version(headers.get("accept-version"))
        session.version = version
        session.login = headers.get("login")
        session.client_id = headers.get("client-id")
        reply = {"version": version, "server": self.settings.server, "session": session.id}
        if version != f.V1_0 or "heart-beat" in headers:
            cx, cy = parse_heartbeat(headers.get("heart-beat"))
            # Like ActiveMQ we take the client's intervals (echoing them back), but we
            # never beat faster than our floor and we allow a grace on receipt.
            ours = (max(cy, self.settings.heartbeat_min_send_ms) if cy else 0, cx)
            send_ms, recv_ms = negotiate_heartbeat((cx, cy), ours)
            session.heartbeat_send_ms = send_ms
            session.heartbeat_recv_ms = recv_ms
            reply["heart-beat"] = f"{ours[0]},{ours[1]}"
        request_id = headers.get("request-id")
        if request_id is not None:
            reply["response-id"] = request_id
        session.phase = CONNECTED
        session.send_frame(f.Frame(f.CONNECTED, reply))

    def _on_disconnect(self, session: Session, frame: f.Frame) -> None:
        session.phase = CLOSING

    # -- SEND ------------------------------------------------------------------

    def _on_send(self, session: Session, frame: f.Frame) -> _Deferred | None:
        receipt = frame.headers.get("receipt")
        tx_id = frame.headers.pop("transaction", None)
        message, targets = self._prepare_send(session, frame)
        if message.persistent and self.persistence.failed is not None:
            raise StoreFailed(f"persistent messages cannot be stored: {self.persistence.failed}")
        if tx_id is not None:
            tx = self._transaction(session, tx_id)
            for target, copy in self._copies(message, targets):
                tx.sends.append((target, copy))
            return None
        if not self._fits(message, targets):
            if self.settings.send_fail_if_no_space:
                self.blocked.stats.failed_sends += 1
                raise no_space_error(self._why_full(), store=self._store_full(message))
            timeout = self.settings.send_fail_if_no_space_after_timeout
            deadline = self.clock.ms + timeout if timeout else 0
            self._park(session, ParkedSend(message, targets, receipt, deadline))
            return DEFERRED
        self._deliver_send(message, targets, session)
        return None

    def _prepare_send(self, session: Session, frame: f.Frame) -> tuple[Message, tuple[Destination, ...]]:
        """The message a SEND carries, and where it goes."""
        headers = frame.headers
        destination = headers.pop("destination", None)
        if not destination:
            raise MissingHeader("SEND requires a 'destination' header")
        message = self._build_message(session, destination, headers, frame.body)
        if not scheduler.HEADERS.isdisjoint(headers):
            scheduler.check(headers)
        return message, self.destinations.send_targets(session, destination)

    def _orphan_send(self, session: Session, frame: f.Frame) -> ParkedSend | None:
        """A SEND parked behind another, from a connection that has closed, or None."""
        headers = frame.headers
        destination = headers.get("destination", "")
        # A closed connection's own temporary destinations are gone with it.
        if frame.command != f.SEND or "transaction" in headers or "/temp-" in destination:
            return None
        try:
            message, targets = self._prepare_send(session, frame)
        except StompError as exc:
            log.info("dropping a parked SEND from closed connection %s: %s", session.id, exc)
            return None
        return ParkedSend(message, targets, None, 0)

    def _deliver_send(
        self, message: Message, targets: tuple[Destination, ...], sender: Session | None = None
    ) -> None:
        """Route a SEND; ``sender``'s later frames wait until what it stored is durable."""
        if not scheduler.HEADERS.isdisjoint(message.headers):
            timing = timing_of(message.headers)
            if timing is not None:
                self.jobs.add(timing, message, targets, sender)
                return
        self._route_all(message, targets, sender)

    def _route_all(
        self, message: Message, targets: tuple[Destination, ...], sender: Session | None = None
    ) -> None:
        if len(targets) == 1:
            target = targets[0]
            message.destination = target.name
            self._route(target, message, sender)
        else:
            for target, copy in self._copies(message, targets):
                self._route(target, copy, sender)

    def _fits(self, message: Message, targets: tuple[Destination, ...]) -> bool:
        """Is there room for this message in every cursor it would be put in?"""
        size = message.size
        high_water = self.settings.cursor_high_water
        temp = self.usage.temp
        for target in targets:
            if message.persistent and type(target) is Queue and target.persistence is not None:
                # Stored: past the high-water mark it needs no RAM and no temp space.
                if self._store_full(message):
                    return False
                continue
            if type(target) is Topic and self.durables.records and not self._kept_fits(target, message, temp):
                return False
            meter = target.meter
            # Below the high-water mark (its own and the broker's) it simply goes to memory.
            if meter is not None and meter.fits(size, high_water):
                continue
            if type(target) is Queue:
                if not target.cursor.can_take(message, temp):
                    return False
                continue
            assert isinstance(target, Topic)
            stored = message.persistent and self.durables
            if stored and self._store_full(message):
                return False
            for sub in self.router.subscribers(target):
                if stored and sub.durable is not None:
                    continue
                if (sub.cursor.count or not sub.ready) and not sub.cursor.can_take(message, temp):
                    return False
        return True

    def _kept_fits(self, topic: Topic, message: Message, temp: UsageMeter) -> bool:
        """Room in the cursors of the durable subscriptions that keep ``message`` while away
        (they take it on disk, below the memory high-water mark too).  A stored message
        needs nothing there: it is a store pointer."""
        if message.persistent:
            return True
        for durable in self.durables.matching(topic):
            cursor = durable.keeping(message)
            if cursor is not None and not cursor.can_take(message, temp):
                return False
        return True

    def _next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def _store_full(self, message: Message) -> bool:
        """No room to store ``message``: storeUsage is at its limit (which the disk's free
        space bounds, see ``UsageMeter.bound``), or the store's writes fail now."""
        if self.persistence.stalled is not None:
            return True
        return not self.usage.store.fits(message.size)

    def _why_full(self) -> str:
        usage = self.usage
        why = (
            f"memory usage {usage.memory.percent:.0f}%, store usage {usage.store.percent:.0f}% "
            f"and temp usage {usage.temp.percent:.0f}% of their limits"
        )
        stalled = self.persistence.stalled
        if stalled is not None:
            why = f"the message store cannot write now ({stalled}); {why}"
        return why

    # -- flow control ----------------------------------------------------------

    def _park(self, session: Session, item: ParkedSend | f.Frame) -> None:
        session.parked.append(item)
        session.parked_bytes += item.size if isinstance(item, ParkedSend) else len(item.body)
        self.blocked.block(session, self._why_full(), self.clock.ms)
        if session.parked_bytes > self.settings.max_parked_bytes and not session.reading_paused:
            session.reading_paused = True
            session.outbox.pause_reading()

    def retry_blocked(self) -> None:
        """Space may have freed: give each blocked connection its parked frames, in order."""
        orphans = self.blocked.orphans
        while orphans and self._fits(orphans[0].message, orphans[0].targets):
            item = orphans.popleft()
            self._deliver_send(item.message, item.targets)
        for session in self.blocked:
            try:
                self._unpark(session)
            except Exception as exc:
                session.outbox.fail(exc)

    def _unpark(self, session: Session) -> None:
        parked = session.parked
        while parked:
            item = parked[0]
            if isinstance(item, ParkedSend):
                if not self._fits(item.message, item.targets):
                    return
                parked.popleft()
                session.parked_bytes -= item.size
                self._deliver_send(item.message, item.targets, session)
                if item.receipt is not None:
                    session.send_receipt(item.receipt)
            else:
                parked.popleft()
                session.parked_bytes -= len(item.body)
                self._run_unparked(session, item)
            if session.phase is CLOSING:
                break
        if not parked:
            self.blocked.release(session, self.clock.ms)
        if session.reading_paused and session.parked_bytes <= self.settings.max_parked_bytes // 2:
            session.reading_paused = False
            session.outbox.resume_reading()

    def _run_unparked(self, session: Session, frame: f.Frame) -> None:
        parked = session.parked
        waiting = len(parked)
        self._invoke(self._handlers[frame.command], session, frame)
        if len(parked) > waiting:
            # A SEND that still does not fit was parked again: at the head, where it
            # was, not behind the frames that came after it (whose RECEIPTs would
            # otherwise overtake it).
            parked.appendleft(parked.pop())
        if session.phase is CLOSING:
            session.outbox.close()

    def _expire_parked(self) -> None:
        now = self.clock.ms
        for session in self.blocked:
            head = session.parked[0] if session.parked else None
            if isinstance(head, ParkedSend) and head.deadline and head.deadline <= now:
                self.blocked.stats.failed_sends += 1
                exc = no_space_error(
                    f"still no room after {self.settings.send_fail_if_no_space_after_timeout} ms"
                )
                exc.receipt_id = head.receipt
                session.outbox.fail(exc)

    def _build_message(
        self, session: Session, destination: str, headers: dict[str, str], body: bytes
    ) -> Message:
        pop = headers.pop
        pop("receipt", None)
        content_length = pop("content-length", None) is not None
        for name in ("message-id", "redelivered", "subscription", "ack"):
            pop(name, None)
        now = self.clock.ms
        priority = DEFAULT_PRIORITY
        text = pop("priority", None)
        if text is not None:
            priority = _int_header("priority", text)
            if not 0 <= priority <= 9:
                raise InvalidHeader(f"priority must be 0-9, got {text!r}")
        expires = 0
        text = pop("expires", None)
        if text is not None:
            expires = _int_header("expires", text)
        text = pop("ttl", None)
        if text is not None:
            ttl = _int_header("ttl", text)
            if ttl > 0:
                expires = now + ttl
        timestamp = now
        text = pop("timestamp", None)
        if text is not None:
            timestamp = _int_header("timestamp", text)
        reply_to = headers.get("reply-to")
        if reply_to is not None and reply_to.startswith((names.TEMP_QUEUE, names.TEMP_TOPIC)):
            headers["reply-to"] = self.destinations.advertise_temp(session, reply_to)
        # Sequence and id are given when it is routed (``_route``), not now.
        return Message(
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
        )

    def _copies(
        self, message: Message, targets: tuple[Destination, ...]
    ) -> list[tuple[Destination, Message]]:
        """One message per destination of a composite send (each has its own id)."""
        message.destination = targets[0].name
        out = [(targets[0], message)]
        out.extend((target, message.copy_to(0, "", target.name)) for target in targets[1:])
        return out

    def _route(self, target: Destination, message: Message, sender: Session | None = None) -> None:
        # Sequence numbers are handed out in routing order, never earlier: a SEND held
        # back by flow control or a transaction must not arrive at a cursor with a
        # sequence older than what that cursor already swapped out (keys sort by it).
        self._seq += 1
        message.seq = seq = self._seq
        message.id = self._id_prefix + str(seq)
        if type(target) is Queue:
            if message.persistent and target.persistence is not None:
                target.persistence.add(target, message, sender)
            target.enqueue(message)
        elif not self.durables.records:
            assert isinstance(target, Topic)
            self.router.publish(target, message)
        else:
            assert isinstance(target, Topic)
            durables = self.durables.matching(target)
            if durables and message.persistent:
                owed = [d.store_id for d in durables if d.accepts(message)]
                if owed:
                    self.persistence.add_shared(target.name, message, owed, sender)
            self.router.publish(target, message)
            for durable in durables:
                cursor = durable.keeping(message)
                if cursor is not None:
                    cursor.push(message)

    # -- SUBSCRIBE / UNSUBSCRIBE -----------------------------------------------

    def _on_subscribe(self, session: Session, frame: f.Frame) -> Callable[[], None]:
        headers = frame.headers
        destination = headers.get("destination")
        if not destination:
            raise MissingHeader("SUBSCRIBE requires a 'destination' header")
        sub_id = headers.get("id")
        if sub_id is None:
            if session.version != f.V1_0:
                raise MissingHeader("SUBSCRIBE requires an 'id' header in STOMP 1.1 and 1.2")
            sub_id = destination
        if sub_id in session.subscriptions:
            raise DuplicateSubscription(f"subscription id {sub_id!r} is already in use on this connection")
        ack = headers.get("ack", AUTO)
        if ack not in ACK_MODES:
            raise InvalidHeader(f"ack must be auto, client or client-individual, got {ack!r}")
        targets = names.split_destination(destination)
        any_queue = any(kind in names.QUEUE_KINDS for kind, _ in targets)
        prefetch = self.settings.queue_prefetch if any_queue else self.settings.topic_prefetch
        text = headers.get("activemq.prefetchSize") or headers.get("prefetch-count")
        if text is not None:
            prefetch = _int_header("activemq.prefetchSize", text)
            if prefetch < 1:
                raise InvalidHeader(f"activemq.prefetchSize must be at least 1, got {text!r}")
        selector_text = headers.get("selector", "").strip()
        selector = compile_selector(selector_text).matches if selector_text else None
        durable_name = headers.get("activemq.subscriptionName") or headers.get("durable-subscription-name")
        no_local = headers.get("activemq.noLocal") == "true"
        durable = None
        if durable_name is not None:
            durable = self._durable(session, durable_name, destination, targets, selector_text, no_local)
        sub = Subscription(
            session,
            sub_id,
            session.next_key(),
            destination,
            ack=ack,
            prefetch=prefetch,
            selector=selector,
            no_local=no_local,
            exclusive=headers.get("activemq.exclusive") == "true",
        )
        bindings: list[tuple[str, str]] = []
        for kind, name in targets:
            if kind in (names.REMOTE_TEMP_QUEUE, names.REMOTE_TEMP_TOPIC):
                target = self.destinations.resolve(session, kind, name)
                if target.owner is not session:
                    raise AccessDenied(f"{target.name} belongs to another connection; only it may consume")
            bindings.append((kind, name))
        session.subscriptions[sub_id] = sub
        session.by_key[sub.key] = sub
        for kind, name in bindings:
            if kind in names.QUEUE_KINDS:
                queue = self.destinations.resolve(session, kind, name)
                assert isinstance(queue, Queue)
                sub.queues.append(queue)
            elif kind == names.TEMP_TOPIC:
                topic = self.destinations.temp_topic(session, name)
                sub.topic_patterns.append((topic.kind, topic.bare))
            else:
                sub.topic_patterns.append((kind, name))
        if durable is not None:
            sub.cursor = self._durable_cursor(sub, durable)
            sub.cursor.wakeup = sub.pump
        elif sub.topic_patterns:
            sub.cursor = self.destinations.topic_cursor(sub)
            sub.cursor.wakeup = sub.pump
        for kind, pattern in sub.topic_patterns:
            self.router.subscribe(kind, pattern, sub)
        # The RECEIPT for this SUBSCRIBE must reach the client before any MESSAGE, so
        # the queues start dispatching to it only once the receipt is written.
        return lambda: self._start(sub)

    def _durable(
        self,
        session: Session,
        name: str,
        destination: str,
        targets: list[tuple[str, str]],
        selector_text: str,
        no_local: bool,
    ) -> Durable:
        """The durable subscription a SUBSCRIBE attaches to (made, or remade, if need be)."""
        if any(kind != names.TOPIC for kind, _ in targets):
            raise InvalidHeader("activemq.subscriptionName is for /topic/ destinations only")
        client_id = session.client_id
        if not client_id:
            raise InvalidHeader("a durable subscription needs a 'client-id' header on CONNECT")
        persistence = self.persistence
        durable = self.durables.get(client_id, name)
        if durable is not None:
            if durable.sub is not None:
                raise DuplicateSubscription(
                    f"durable subscription {name!r} of client {client_id!r} is already active"
                )
            if not durable.same_as(destination, selector_text, no_local):
                # As ActiveMQ: another destination or selector makes it a new subscription.
                self._remove_durable(durable)
                durable = None
        if durable is None:
            durable = Durable(
                0,
                client_id,
                name,
                destination,
                selector_text,
                no_local,
                compile_selector(selector_text).matches if selector_text else None,
            )
            durable.store_id = persistence.put_subscription(client_id, name, durable.encode())
            self.durables.add(durable)
        return durable

    def _durable_cursor(self, sub: Subscription, durable: Durable) -> Cursor:
        """A durable subscriber's cursor: the one it kept since its last subscriber in this
        broker's lifetime, or a new one over what the store holds for it."""
        persistence = self.persistence
        durable.sub = sub
        sub.durable = durable
        sub.persistence = persistence
        cursor = durable.cursor
        if cursor is not None:
            cursor.high_water = self.settings.cursor_high_water
            return cursor
        swap = self.swap
        cursor = durable.cursor = Cursor(
            self.usage.memory,
            swap.new_log(shared=False),
            high_water=self.settings.cursor_high_water,
        )
        owed = persistence.store.pending_of(durable.store_id)
        cursor.recovered(SubscriptionSource(persistence, durable.store_id), owed, self._seq)
        return cursor

    def _remove_durable(self, durable: Durable) -> None:
        self.durables.remove(durable)
        if durable.cursor is not None:
            for message in durable.cursor.close():
                message.drop()
            durable.cursor = None
        self.persistence.remove_subscription(durable.client_id, durable.name)

    def _start(self, sub: Subscription) -> None:
        for queue in sub.queues:
            queue.add_consumer(sub)
        sub.pump()

    def _on_unsubscribe(self, session: Session, frame: f.Frame) -> None:
        headers = frame.headers
        sub_id = headers.get("id")
        sub = None
        if sub_id is not None:
            sub = session.subscriptions.get(sub_id)
        elif session.version == f.V1_0:
            destination = headers.get("destination")
            if destination is None:
                raise MissingHeader("UNSUBSCRIBE requires an 'id' or 'destination' header")
            sub = next((s for s in session.subscriptions.values() if s.destination == destination), None)
        else:
            raise MissingHeader("UNSUBSCRIBE requires an 'id' header in STOMP 1.1 and 1.2")
        durable_name = headers.get("activemq.subscriptionName") or headers.get("durable-subscription-name")
        if sub is not None:
            self._unsubscribe(session, sub)
        elif durable_name is None:
            raise UnknownSubscription(
                f"no subscription {sub_id or headers.get('destination')!r} on this connection"
            )
        if durable_name is not None:
            # With the name, UNSUBSCRIBE ends the durable subscription (even an inactive
            # one), and what it was still owed goes with it.
            durable = self.durables.get(session.client_id or "", durable_name)
            if durable is None:
                raise UnknownSubscription(f"no durable subscription {durable_name!r} for this client-id")
            if durable.sub is not None:
                raise DuplicateSubscription(f"durable subscription {durable_name!r} is active elsewhere")
            self._remove_durable(durable)

    def _unsubscribe(self, session: Session, sub: Subscription) -> None:
        session.subscriptions.pop(sub.id, None)
        session.by_key.pop(sub.key, None)
        for kind, pattern in sub.topic_patterns:
            self.router.unsubscribe(kind, pattern, sub)
        for queue in sub.queues:
            queue.remove_consumer(sub)
        if sub.durable is not None:
            # Inactive now: its cursor waits for the next subscriber (durable.py).
            sub.durable.detach()
        else:
            for message in sub.cursor.close():
                message.drop()
        returned = list(sub.inflight.values())
        sub.inflight.clear()
        self._give_back(sub, returned, topic_too=False)

    # -- ACK / NACK ------------------------------------------------------------

    def _on_ack(self, session: Session, frame: f.Frame) -> None:
        sub, messages = self._acked(session, frame)
        tx_id = frame.headers.get("transaction")
        if tx_id is not None:
            tx = self._transaction(session, tx_id)
            tx.acks.extend((sub, m) for m in messages)
        else:
            self._settle(sub, messages)
        sub.pump()

    def _on_nack(self, session: Session, frame: f.Frame) -> None:
        sub, messages = self._acked(session, frame)
        tx_id = frame.headers.get("transaction")
        if tx_id is not None:
            self._transaction(session, tx_id).nacks.extend((sub, m) for m in messages)
        else:
            self._give_back(sub, messages, topic_too=True)
        sub.pump()

    def _acked(self, session: Session, frame: f.Frame) -> tuple[Subscription, list[Message]]:
        """The subscription an ACK/NACK is for, and the messages it covers."""
        headers = frame.headers
        command = frame.command
        sub: Subscription | None = None
        seq: int | None = None
        if session.version == f.V1_2:
            ack_id = headers.get("id")
            if ack_id is None:
                raise MissingHeader(
                    f"{command} requires an 'id' header (the MESSAGE's 'ack' value) in STOMP 1.2"
                )
            key, _, seq_text = ack_id.partition("-")
            if key.isdigit() and seq_text.isdigit():
                sub = session.by_key.get(int(key))
                seq = int(seq_text)
            label = ack_id
        else:
            message_id = headers.get("message-id")
            if message_id is None:
                raise MissingHeader(f"{command} requires a 'message-id' header")
            label = message_id
            seq = _seq_of(message_id)
            sub_id = headers.get("subscription")
            if sub_id is not None:
                sub = session.subscriptions.get(sub_id)
            elif session.version == f.V1_1:
                raise MissingHeader(f"{command} requires a 'subscription' header in STOMP 1.1")
            elif seq is not None:
                sub = next((s for s in session.subscriptions.values() if seq in s.inflight), None)
        if sub is None or seq is None:
            raise UnknownMessage(f"{command} for {label!r} matches no message delivered on this connection")
        messages = sub.take_acked(seq, cumulative=sub.ack == CLIENT)
        if not messages:
            raise UnknownMessage(
                f"{command} for {label!r}: no such unacknowledged message on subscription {sub.id!r}"
            )
        return sub, messages

    def _settle(self, sub: Subscription, messages: list[Message]) -> None:
        for message in messages:
            queue = self.queues.get(message.destination)
            if queue is not None:
                queue.acked(1)
            if message.store_size:
                self._unstore(sub, message, queue is not None)
            message.drop()

    def _unstore(self, sub: Subscription | None, message: Message, from_queue: bool) -> None:
        """``message`` is done with: delete it from the store (a topic's: this subscriber's share)."""
        persistence = self.persistence
        if from_queue:
            persistence.remove(message)
        elif sub is not None and sub.durable is not None:
            persistence.ack_shared(sub.durable.store_id, message)

    def _give_back(self, sub: Subscription, messages: list[Message], *, topic_too: bool) -> None:
        """Return messages for redelivery: to their queue, or (NACK) the topic subscriber.

        Each message comes with its in-flight hold, which passes to wherever it goes.
        """
        by_queue: dict[Queue, list[Message]] = {}
        limit = self.settings.max_redeliveries
        for message in messages:
            if limit >= 0 and message.delivery_count > limit:
                self._dead_letter(message, sub=sub)
                continue
            queue = self.queues.get(message.destination)
            if queue is not None:
                by_queue.setdefault(queue, []).append(message)
                continue
            cursor = self._topic_return(sub, topic_too)
            if cursor is not None:
                # A topic message is shared: only this subscriber's copy is redelivered.
                copy = message.redelivery_copy()
                copy.meter = message.meter
                copy.hold()
                cursor.push_returned(copy)
            message.drop()
        delay = self.settings.redelivery_delay_ms
        for queue, returned in by_queue.items():
            if delay:
                self._redeliveries.append((self.clock.ms + delay, queue, returned))
            else:
                queue.requeue(returned)

    def _topic_return(self, sub: Subscription, topic_too: bool) -> Cursor | None:
        """Where a topic message ``sub`` gives back goes: a durable subscription's cursor
        whatever happens to the subscriber, another's only on NACK (or a rolled-back
        ACK) while it is still subscribed; None: it is dropped."""
        if sub.durable is not None:
            return sub.durable.cursor
        if topic_too and sub.session.phase is not CLOSING and sub.id in sub.session.subscriptions:
            return sub.cursor
        return None

    def _dead_letter(
        self, message: Message, cause: str | None = None, sub: Subscription | None = None
    ) -> None:
        """Past the redelivery limit (or expired): to the dead-letter queue, saying why and
        from where.  Takes over the caller's hold.

        ActiveMQ drops non-persistent messages here by default (processNonPersistent is
        false); we keep them, since nothing asked for them to be thrown away.
        """
        settings = self.settings
        prefix = settings.individual_dead_letter_prefix
        if prefix is not None:
            kind, bare = names.split_destination(message.destination)[0]
            dlq_name = names.QUEUE + prefix + bare
            if kind not in names.QUEUE_KINDS:
                dlq_name = names.QUEUE + settings.individual_dead_letter_topic_prefix + bare
        else:
            dlq_name = settings.dead_letter_queue
        dlq = self.destinations.queue(dlq_name)
        headers = dict(message.headers)
        headers["original-destination"] = message.destination
        headers["dlqDeliveryFailureCause"] = cause or (
            f"Delivery[{message.delivery_count}] exceeds redelivery policy limit "
            f"(maximumRedeliveries={settings.max_redeliveries})"
        )
        headers["original-message-id"] = message.id
        dead = message.copy_to(0, "", dlq.name)
        dead.headers = headers
        dead.size = message.size
        # A dead letter is kept until someone looks at it (ActiveMQ clears it too).
        dead.expires = 0
        log.info(
            "dead-lettering %s from %s: %s",
            message.id,
            message.destination,
            headers["dlqDeliveryFailureCause"],
        )
        original = self.queues.get(message.destination)
        if original is not None:
            original.acked(1)
        if message.store_size:
            self._unstore(sub, message, original is not None)
        message.drop()
        self._route(dlq, dead)

    def _expired(self, message: Message) -> None:
        """A queue found ``message`` expired at dispatch (the queue drops its hold)."""
        if message.persistent and self.settings.dead_letter_expired:
            message.hold()
            self._dead_letter(message, "Message expired")
        elif message.store_size:
            self._unstore(None, message, True)

    # -- transactions ----------------------------------------------------------

    def _transaction(self, session: Session, tx_id: str) -> Transaction:
        tx = session.transactions.get(tx_id)
        if tx is None:
            raise TransactionError(f"transaction {tx_id!r} was not begun on this connection")
        return tx

    def _tx_id(self, frame: f.Frame) -> str:
        tx_id = frame.headers.get("transaction")
        if tx_id is None:
            raise MissingHeader(f"{frame.command} requires a 'transaction' header")
        return tx_id

    def _on_begin(self, session: Session, frame: f.Frame) -> None:
        tx_id = self._tx_id(frame)
        if tx_id in session.transactions:
            raise TransactionError(f"transaction {tx_id!r} is already in progress")
        session.transactions[tx_id] = Transaction(tx_id)

    def _on_commit(self, session: Session, frame: f.Frame) -> None:
        tx = self._transaction(session, self._tx_id(frame))
        del session.transactions[tx.id]
        for target, message in tx.sends:
            self._deliver_send(message, (target,), session)
        for sub, message in tx.acks:
            self._settle(sub, [message])
        for sub, message in tx.nacks:
            self._give_back(sub, [message], topic_too=True)

    def _on_abort(self, session: Session, frame: f.Frame) -> None:
        tx = self._transaction(session, self._tx_id(frame))
        del session.transactions[tx.id]
        self._abort(tx)

    def _abort(self, tx: Transaction) -> None:
        # Sends are simply never routed; what was acked or nacked comes back.
        for sub, message in tx.acks + tx.nacks:
            self._give_back(sub, [message], topic_too=True)
        for sub, _ in tx.acks + tx.nacks:
            if sub.session.phase is not CLOSING:
                sub.pump()


def _int_header(name: str, text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise InvalidHeader(f"header {name!r} must be an integer, got {text!r}") from None


def _seq_of(message_id: str) -> int | None:
    tail = message_id.rpartition("-")[2]
    return int(tail) if tail.isdigit() else None


def _base36(n: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while n:
        n, r = divmod(n, 36)
        out = digits[r] + out
    return out or "0"
