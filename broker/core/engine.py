"""The broker core: every client frame comes in through ``Engine.handle``.

Sans-IO: the engine never touches a socket or an event loop.  A session writes
through its outbox, the clock is set by whoever drives the engine, and errors are
raised as ``StompError`` for the edge to turn into an ERROR frame.

The engine only dispatches: a frame goes to the handler that owns its command
(``connect``, ``sending``, ``subscribing``, ``acks``, ``transactions``), and ``flush``,
``tick`` and ``after_io`` end a batch of work.  Everything below is built here, once,
each part handed the parts it uses (``docs/message-path.md`` follows a message
through them).  The way in, for the edge and for tests: ``open_session``, ``handle``,
``flush``, ``tick``, ``after_io``, ``set_writable``, ``close_session``, ``recover``
(and ``queue_depth``).  What the admin server, ``/metrics`` and the exporter read and do
is ``broker.core.admin``'s, a layer above this one.
"""

from __future__ import annotations

import itertools
import time
from typing import TYPE_CHECKING

from broker.core.base.audit import ProducerAudit
from broker.core.base.chores import Chores
from broker.core.base.clock import Clock
from broker.core.base.errors import NoRoomToCreate
from broker.core.base.guard import SYSTEM, OpenGuard
from broker.core.base.observe import Observer
from broker.core.base.plugins import BrokerLog, SendPlugins
from broker.core.base.settings import CoreSettings
from broker.core.base.usage import SystemUsage
from broker.core.delivery.destinations import Destinations
from broker.core.delivery.durable import DurableSubscriptions
from broker.core.delivery.routing import Routing, boot_prefix

# A session and its phases are what the edges hold of a connection: they take them from
# here (delivery is protected: pyproject's contracts), so they are re-exported.
from broker.core.delivery.session import AWAIT_CONNECT as AWAIT_CONNECT
from broker.core.delivery.session import CLOSING
from broker.core.delivery.session import CONNECTED as CONNECTED
from broker.core.delivery.session import Session as Session
from broker.core.delivery.topic import TopicRouter
from broker.core.handlers.acks import Acks
from broker.core.handlers.advisory import Advisories
from broker.core.handlers.connect import Connect, next_phase
from broker.core.handlers.flow import DEFERRED, NEVER_PARKED, Deferred, FlowControl
from broker.core.handlers.gc import Housekeeping
from broker.core.handlers.recovery import recover
from broker.core.handlers.sampler import Sampler
from broker.core.handlers.scheduler import Scheduler
from broker.core.handlers.sending import Sending
from broker.core.handlers.settlement import Settlement
from broker.core.handlers.slow import SlowConsumers
from broker.core.handlers.statistics import Statistics
from broker.core.handlers.subscribing import Subscribing
from broker.core.handlers.transactions import Transactions
from broker.core.storage.disk import Disk
from broker.core.storage.persistence import Persistence
from broker.core.storage.swap import SwapSpace
from protocol import frames as f
from protocol.errors import StompError, UnexpectedFrame, UnknownCommand

if TYPE_CHECKING:
    from collections.abc import Callable

    from broker.core.base.channel import Outbox
    from broker.core.base.chores import Steps
    from broker.core.base.guard import Guard
    from broker.core.delivery.topic import FanOut
    from store.api import Stores


class Engine:
    def __init__(
        self,
        settings: CoreSettings | None = None,
        clock: Clock | None = None,
        *,
        stores: Stores,
        guard: Guard | None = None,
    ) -> None:
        self.settings = settings = settings or CoreSettings()
        self.clock = clock = clock or Clock()
        self.usage = usage = SystemUsage(settings.memory_limit, settings.store_limit, settings.temp_limit)
        #: The latency histogram, and the event sink (``observer.events``; None: export off).
        self.observer = observer = Observer()
        #: Connections opened since start (``sessions`` holds the open ones).
        self.sessions_opened = 0
        self.disk = Disk(stores.worker, clock, stores.temp, usage.memory)
        self.swap = SwapSpace(stores.temp, self.disk, usage.temp, usage.memory, settings.page_size)
        self.persistence = persistence = Persistence(stores.messages, usage.store, self.disk)
        self.guard = guard = guard or OpenGuard()
        self.durables = durables = DurableSubscriptions()
        #: Work done in slices between other clients' (the edge runs them: ``chores.wake``).
        self.chores = chores = Chores()
        self.router = router = TopicRouter(chores, self._fanned_out)
        self.destinations = destinations = Destinations(
            settings, clock, usage, self.swap, persistence, guard, durables, router, observer
        )
        self.queues = destinations.queues
        self.sessions: dict[str, Session] = {}
        #: The open connections' client-ids (a CONNECT's ``client-id`` header), each
        #: taken by one connection at a time, as in ActiveMQ.
        self.client_ids: dict[str, Session] = {}
        self._session_ids = itertools.count(1)
        self._id_prefix = boot_prefix(int(time.time() * 1000))
        self.routing = routing = Routing(
            router, durables, persistence, self._id_prefix, clock, destinations.expired, observer
        )
        observer.topic_expired = routing.topic_expired
        observer.topic_waited = routing.topic_waited
        #: The ids of forwarded messages this broker has stored (copies are dropped).
        self.audit = audit = ProducerAudit()
        self.scheduler = scheduler = Scheduler(clock, persistence, destinations, routing, audit)
        self.settlement = settlement = Settlement(
            settings, clock, destinations, routing, persistence, observer
        )
        self.flow = flow = FlowControl(
            settings, clock, usage, router, durables, persistence, scheduler, self, observer
        )
        self.transactions = transactions = Transactions(scheduler, settlement)
        self.sending = sending = Sending(
            settings, clock, destinations, persistence, scheduler, flow, transactions, audit
        )
        if settings.time_stamping is not None or settings.persistence_flag is not None:
            sending.plugins = SendPlugins(settings.time_stamping, settings.persistence_flag)
        if settings.statistics:
            sending.statistics = Statistics(
                settings, clock, destinations, routing, usage, chores, sending.producers
            )
        self.advisories = advisories = Advisories(settings, clock, destinations, routing, self.sessions)
        # Those made before it (a layer below, or built first) are told where to tell.
        destinations.advisories = advisories
        routing.advisories = advisories
        router.watcher = advisories
        settlement.advisories = advisories
        sending.advisories = advisories
        observer.consumed = advisories.consumed
        self.subscribing = subscribing = Subscribing(
            settings,
            usage.memory,
            destinations,
            durables,
            persistence,
            routing,
            settlement,
            advisories,
            chores,
        )
        self.housekeeping = Housekeeping(
            clock, destinations, durables, settlement, transactions, flow, chores
        )
        #: Every destination's last hour of depth and rates (``broker.core.base.history``).
        self.sampler = Sampler(clock, destinations, chores)
        #: ``<slowConsumerStrategy>``s: slow subscribers aborted on the tick (``handlers.slow``).
        self.slow = slow = SlowConsumers(clock, destinations, chores)
        slow.unsubscribe = subscribing.unsubscribe
        subscribing.slow = slow
        destinations.slow_made = slow.made
        acks = Acks(settlement, transactions)
        connect = Connect(settings, guard, self.client_ids, advisories, observer)
        self._handlers: dict[str, Callable[[Session, f.Frame], Callable[[], None] | Deferred | None]] = {
            f.SEND: sending.on_send,
            f.ACK: acks.on_ack,
            f.NACK: acks.on_nack,
            f.SUBSCRIBE: subscribing.on_subscribe,
            f.UNSUBSCRIBE: subscribing.on_unsubscribe,
            f.BEGIN: transactions.on_begin,
            f.COMMIT: transactions.on_commit,
            f.ABORT: transactions.on_abort,
            f.DISCONNECT: connect.on_disconnect,
            f.CONNECT: connect.on_connect,
            f.STOMP: connect.on_connect,
        }
        #: ``<loggingBrokerPlugin>`` (None: not configured, and no handler is wrapped).
        self.broker_log: BrokerLog | None = None
        if settings.logging is not None:
            self._log_events(BrokerLog(settings.logging))

    def _log_events(self, broker_log: BrokerLog) -> None:
        """The frame handlers whose events ``broker_log`` logs, wrapped (the others as
        they are), and the connections and destinations told to it."""
        self.broker_log = broker_log
        self.destinations.broker_log = broker_log
        handlers = self._handlers
        for command, handler in list(handlers.items()):
            handlers[command] = broker_log.wrap(command, handler)
        for command in (f.CONNECT, f.STOMP):
            on_connect = handlers[command]

            def logged(
                session: Session,
                frame: f.Frame,
                on_connect: Callable[[Session, f.Frame], Callable[[], None] | Deferred | None] = on_connect,
            ) -> Callable[[], None] | Deferred | None:
                broker_log.connected(session.id, session.address, frame.headers)
                return on_connect(session, frame)

            handlers[command] = logged

    # -- sessions --------------------------------------------------------------

    def open_session(self, outbox: Outbox, address: str = "?") -> Session:
        """A new connection; ``address`` is where its client is (``tcp://host:port``)."""
        session = Session(f"{self._id_prefix}{next(self._session_ids)}", outbox, self.clock, address)
        self.sessions[session.id] = session
        self.sessions_opened += 1
        return session

    def open_internal_session(self, outbox: Outbox) -> Session:
        """A session of the broker's own (a network bridge's local side): connected at
        once in STOMP 1.2, allowed everything, as the broker itself is."""
        session = self.open_session(outbox)
        session.version = f.V1_2
        session.phase = CONNECTED
        session.principal = SYSTEM
        session.network = self.settings.broker_name
        return session

    def close_session(self, session: Session) -> None:
        """The connection is gone: abort its transactions, give back what it held.

        Its subscriptions end in slices (``chores``): a connection with 10,000 of them
        does not stall every other client while they go."""
        if self.sessions.pop(session.id, None) is None:
            return
        self.sending.closed(session)
        client_id = session.client_id
        if client_id and self.client_ids.get(client_id) is session:
            del self.client_ids[client_id]
        if self.broker_log is not None:
            self.broker_log.disconnected(session.id, session.address, session.client_id)
        session.phase = CLOSING
        self.slow.forget(session)
        # Nothing more is dispatched to it while what it held is given back.
        session.writable = False
        self.transactions.close(session)
        self.chores.add(self._tear_down(session))

    def _tear_down(self, session: Session) -> Steps[None]:
        yield from self.subscribing.close(session)
        self.destinations.drop_temporaries(session)
        self.sending.close(session)
        self.flow.retry()
        if session.announced:
            # After its consumers' and temporary destinations' ends, as ActiveMQ's.
            self.advisories.disconnected(session)
        yield 1

    def recover(self) -> int:
        """Rebuild the stored queues from the message store's records (no message is read).

        Returns how many stored messages there are.
        """
        stored = recover(self.persistence, self.destinations, self.durables, self.routing, self.scheduler)
        # The end of this unit of work: what it built (and the reads behind it) go.
        self.flush()
        return stored

    def queue_depth(self, name: str) -> int | None:
        """How many messages queue ``name`` holds, not yet dispatched (None: no such queue)."""
        queue = self.queues.get(name)
        return queue.cursor.count if queue is not None else None

    def set_writable(self, session: Session, writable: bool) -> None:
        session.writable = writable
        if writable:
            for sub in list(session.subscriptions.values()):
                sub.pump()

    # -- the end of a batch of work ------------------------------------------------

    def flush(self) -> None:
        """End of a batch of work: settle what it left (expired messages, batches a store
        made durable at once), then submit the writes it queued."""
        persistence = self.persistence
        while True:
            self.settlement.settle_expired()
            self.swap.flush()
            persistence.submit()
            if not persistence.settle():
                return

    def after_io(self, callback: Callable[[], None]) -> None:
        """Run a store completion on the engine's thread, then what it may have freed."""
        callback()
        # Released before any parked SEND is retried: a retry may hold the same outbox
        # again, and its RECEIPTs must not wait for that next batch too.
        self.persistence.settle()
        if self.flow:
            self.flow.retry()
        self.flush()

    def tick(self) -> None:
        """Called a few times a second: scheduled deliveries, parked-SEND deadlines, retries."""
        self.disk.run_due()
        self.scheduler.tick()
        self.settlement.tick()
        self.housekeeping.sweep()
        self.sampler.tick()
        self.slow.tick()
        flow = self.flow
        if flow:
            flow.expire_parked()
            flow.retry()
        self.flush()

    # -- frames ----------------------------------------------------------------

    def handle(self, session: Session, frame: f.Frame) -> None:
        command = frame.command
        handler = self._handlers.get(command)
        if handler is None:
            if command in f.SERVER_COMMANDS:
                raise UnexpectedFrame(f"{command} is a server frame; a client may not send it")
            raise UnknownCommand(f"unknown command {command!r}")
        phase = session.phase
        if phase is not CONNECTED and next_phase(phase, command) is CLOSING:
            return
        if session.parked and command not in NEVER_PARKED:
            self.flow.park(session, frame)
            if command == f.ABORT and self.transactions.abandon(session, frame):
                # Its transaction's SENDs waiting for room need none now: they go, then it.
                self.flow.retry()
            return
        self._invoke(handler, session, frame)
        if self.flow:
            self.flow.retry()

    def _fanned_out(self, fan_out: FanOut) -> None:
        """A topic's fan-out is done: its sender's frames may go on.  (The router is made
        before the flow control, which looks up topics' subscribers through it, so it is
        handed this rather than ``flow.fanned_out``.)"""
        self.flow.fanned_out(fan_out)

    def run_frame(self, session: Session, frame: f.Frame) -> None:
        """A frame that waited behind a parked SEND (``flow.FrameRunner``)."""
        self._invoke(self._handlers[frame.command], session, frame)

    def _invoke(
        self,
        handler: Callable[[Session, f.Frame], Callable[[], None] | Deferred | None],
        session: Session,
        frame: f.Frame,
    ) -> None:
        """Run a frame's handler, then its RECEIPT, then what must follow the RECEIPT."""
        receipt = frame.headers.get("receipt")
        try:
            after = handler(session, frame)
        except NoRoomToCreate as exc:
            # The frame would make a destination: it waits for room as a SEND does.
            if self.flow.wait_to_create(session, frame, exc.cost):
                return
            exc.receipt_id = receipt
            raise
        except StompError as exc:
            exc.receipt_id = receipt
            if session.phase is not CONNECTED:
                # A CONNECT refused (a bad header, a client-id in use, no right to
                # bridge): there is no connection to keep (``errors.closes``).
                exc.fatal = True
            raise
        if session.fanning:
            # What it published still goes out to many subscribers: its next frames wait.
            self.flow.await_fan_out(session)
        if after is DEFERRED:
            return
        if receipt is not None:
            session.send_receipt(receipt)
        if after is not None:
            after()  # type: ignore[operator]
