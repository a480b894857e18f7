"""SUBSCRIBE and UNSUBSCRIBE, and the durable subscriptions subscribers attach to.

A SUBSCRIBE binds a new ``Subscription`` to the queues its destination names (where
it competes with other consumers) and to its topic patterns (a cursor of its own,
which matching topics fill).  With ``activemq.subscriptionName`` (kept under
CONNECT's ``client-id``, else the connection's id, as in ActiveMQ) it attaches to a
durable subscription instead, made or remade as ActiveMQ does, and takes over that
subscription's cursor.  The SUBSCRIBE's RECEIPT goes out before any MESSAGE: dispatch
to it starts after the receipt.

What a subscription costs in RAM is charged to memory usage while it exists
(``destinations.subscription_footprint``): a SUBSCRIBE there is no room for waits for
it, as one that would make a destination does, or is refused under sendFailIfNoSpace;
but a connection's first subscription is never held back for its own cost (charged all
the same), so a consumer can always come and drain what fills memory.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, cast

from broker.core.base import bridging, names
from broker.core.base.chores import SLICE
from broker.core.base.errors import (
    AccessDenied,
    DuplicateSubscription,
    InvalidHeader,
    UnknownSubscription,
    int_header,
)
from broker.core.base.guard import READ, denied
from broker.core.base.selector import compile_selector
from broker.core.delivery import transforming
from broker.core.delivery.destinations import subscription_footprint
from broker.core.delivery.durable import new_durable, readable_by
from broker.core.delivery.queue import Queue
from broker.core.delivery.slow import SlowWatch, pending_limit
from broker.core.delivery.subscription import ACK_MODES, AUTO, Source, Subscription
from broker.core.handlers.browsing import QueueBrowser
from broker.core.storage.cursor import Cursor
from protocol import frames as f
from protocol.errors import MissingHeader
from wildcards import is_wildcard

if TYPE_CHECKING:
    from collections.abc import Callable

    from broker.core.base.chores import Chores, Steps
    from broker.core.base.guard import Principal
    from broker.core.base.message import Message
    from broker.core.base.settings import CoreSettings, DestinationPolicy
    from broker.core.base.usage import UsageMeter
    from broker.core.delivery.destinations import Destinations
    from broker.core.delivery.durable import DurableSubscription, DurableSubscriptions
    from broker.core.delivery.routing import Routing
    from broker.core.delivery.session import Session
    from broker.core.handlers.advisory import Advisories
    from broker.core.handlers.settlement import Settlement
    from broker.core.handlers.slow import SlowConsumers
    from broker.core.storage.persistence import Persistence


#: A SUBSCRIBE's own pending limit (ActiveMQ's ConsumerInfo.maximumPendingMessageLimit).
MAXIMUM_PENDING: Final = "activemq.maximumPendingMessageLimit"


class Subscribing:
    __slots__ = (
        "advisories",
        "charged",
        "chores",
        "destinations",
        "durables",
        "memory",
        "persistence",
        "routing",
        "settings",
        "settlement",
        "slow",
    )

    def __init__(
        self,
        settings: CoreSettings,
        memory: UsageMeter,
        destinations: Destinations,
        durables: DurableSubscriptions,
        persistence: Persistence,
        routing: Routing,
        settlement: Settlement,
        advisories: Advisories,
        chores: Chores,
    ) -> None:
        self.advisories = advisories
        #: What a queue browser's walk runs in (``browsing``).
        self.chores = chores
        self.settings = settings
        self.memory = memory
        self.destinations = destinations
        self.durables = durables
        self.persistence = persistence
        self.routing = routing
        self.settlement = settlement
        #: What the subscriptions that exist cost, charged to the memory meter.
        self.charged = 0
        #: The slow-consumer strategies in force (``handlers.slow``; set by the engine).
        self.slow: SlowConsumers | None = None

    # -- SUBSCRIBE -------------------------------------------------------------------

    def on_subscribe(self, session: Session, frame: f.Frame) -> Callable[[], None]:
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
        if headers.get("browser") == "true":
            return self._browse(session, sub_id, destination, headers)
        ack = ack_mode(headers)
        targets = names.split_destination(destination)
        any_queue = any(kind in names.QUEUE_KINDS for kind, _ in targets)
        # The first destination's policy entry (a wildcard pattern looked up as a name).
        policy = self.destinations.policy_of(names.full_name(session.id, *targets[0]))
        durable_name = durable_name_of(headers)
        if any_queue:
            prefetch = policy.queue_prefetch
        else:
            prefetch = policy.topic_prefetch if durable_name is None else policy.durable_topic_prefetch
        prefetch = _prefetch_header(headers, prefetch)
        selector_text = headers.get("selector", "").strip()
        selector: Callable[[Message], bool] | None = (
            compile_selector(selector_text).matches if selector_text else None
        )
        guard = self.destinations.guard
        if guard.authorizing and not session.principal.system:
            self.destinations.authorize(session, READ, destination)
            wildcard = any(kind == names.TOPIC and is_wildcard(name) for kind, name in targets)
            if wildcard and durable_name is None:
                # (A durable subscription's filter is its owner's: ``new_durable``.)
                selector = readable_by(guard, session.principal, selector)
        priority = 0
        text = headers.get(bridging.PRIORITY)
        if text is not None:
            priority = int_header(bridging.PRIORITY, text)
            if not -128 <= priority <= 127:
                raise InvalidHeader(f"activemq.priority must be -128 to 127, got {text!r}")
        network = _network(headers)
        text = headers.get(MAXIMUM_PENDING)
        # Read before anything is made: a bad one is an ERROR that leaves nothing behind.
        own_limit = 0 if text is None else int_header(MAXIMUM_PENDING, text, -(1 << 31), (1 << 31) - 1)
        # Before anything is made: a SUBSCRIBE that would make a destination, or the
        # subscription, there is no room for yet waits for it, as a SEND does (NoRoomToCreate).
        topics = any(kind not in names.QUEUE_KINDS for kind, _ in targets)
        cost = subscription_footprint(sub_id, destination, topics)
        self.destinations.make_room(session, destination, subscription=cost if session.subscriptions else 0)
        no_local = headers.get("activemq.noLocal") == "true"
        durable = None
        if durable_name is not None:
            durable = self._durable_for(session, durable_name, destination, targets, selector_text, no_local)
            # Its subscriber gets what it keeps: what its selector and (a wildcard one) its
            # owner's read rights let through, whoever attaches (``_may_claim``).
            selector = durable.selector
        if network is not None:
            selector = bridging.network_filter(network, selector)
        sub = Subscription(
            session,
            sub_id,
            session.next_key(),
            destination,
            self.persistence,
            ack=ack,
            prefetch=prefetch,
            selector=selector,
            no_local=no_local,
            exclusive=headers.get("activemq.exclusive") == "true",
            observer=self.settlement.observer,
            priority=priority,
            standby=network is not None and headers.get(bridging.NETWORK_STANDBY) == "true",
            network=network,
        )
        sub.selector_text = selector_text
        sub.transformation = headers.get(transforming.TRANSFORMATION)
        if session.temp_queues or session.temp_topics:
            sub.renames = names.owner_renames(session.id)
        destinations = self.destinations
        for kind, name in targets:
            if kind in (names.REMOTE_TEMP_QUEUE, names.REMOTE_TEMP_TOPIC):
                target = destinations.resolve(session, kind, name)
                if target.owner is not session:
                    raise AccessDenied(f"{target.name} belongs to another connection; only it may consume")
        self._charge(sub, cost)
        session.subscriptions[sub_id] = sub
        session.by_key[sub.key] = sub
        patterns: list[str] = []
        for kind, name in targets:
            if kind == names.QUEUE and is_wildcard(name):
                patterns.append(name)
            elif kind in names.QUEUE_KINDS:
                queue = destinations.resolve(session, kind, name)
                assert isinstance(queue, Queue)
                sub.queues.append(queue)
            elif kind == names.TEMP_TOPIC:
                topic = destinations.temp_topic(session, name)
                sub.topic_patterns.append((topic.kind, topic.bare))
            else:
                sub.topic_patterns.append((kind, name))
        if durable is not None:
            sub.cursor = self._attach(sub, durable)
        elif sub.topic_patterns:
            if not any_queue and (policy.pending_limit_kind or policy.slow_consumer is not None):
                sub.watch = self._watch(sub, policy, own_limit)
            sub.cursor = destinations.topic_cursor(sub)
        for kind, pattern in sub.topic_patterns:
            destinations.router.subscribe(kind, pattern, sub)
        if durable is None and sub.topic_patterns:
            # ActiveMQ's Topic.addSubscription: a durable one is not recovered so.
            asked = headers.get(RETROACTIVE) == "true"
            now = self.routing.clock.ms
            for kind, pattern in sub.topic_patterns:
                destinations.router.replay(kind, pattern, sub, now, asked)
        # The RECEIPT for this SUBSCRIBE must reach the client before any MESSAGE, so
        # the queues start dispatching to it only once the receipt is written.
        if patterns:
            principal = None if session.principal.system else session.principal
            return lambda: self._start_wild(sub, patterns, principal)
        return lambda: self._start(sub)

    def _watch(self, sub: Subscription, policy: DestinationPolicy, own_limit: int) -> SlowWatch:
        """A non-durable topic subscriber's pending limit and slow mark (delivery.slow),
        from its (first) topic's policy, as ActiveMQ's PolicyEntry.configure: the
        SUBSCRIBE's ``activemq.maximumPendingMessageLimit``, if positive, may lower it."""
        tracker = None
        strategy = policy.slow_consumer
        if strategy is not None and self.slow is not None:
            tracker = self.slow.strategy(strategy)
        limit = pending_limit(policy, sub.prefetch)
        if own_limit > 0 and policy.pending_limit_kind and (limit < 0 or own_limit < limit):
            limit = own_limit
        return SlowWatch(limit, policy.eviction, policy.eviction_property, tracker, self.settlement.discarded)

    def _charge(self, sub: Subscription, cost: int) -> None:
        sub.footprint = cost
        self.memory.charge(cost)
        self.charged += cost

    def _start(self, sub: Subscription) -> None:
        for queue in sub.queues:
            queue.add_consumer(sub)
        # Once it counts among its queues' consumers (the advisory says how many).
        self.advisories.added(sub)
        replay = self.advisories.replay(sub)
        if replay is not None:
            self.chores.add(replay)
        sub.pump()

    def _start_wild(self, sub: Subscription, patterns: list[str], principal: Principal | None) -> None:
        """``_start`` for a subscription with wildcard queue patterns: it joins the queues
        that match them (in slices, a chore), and those made from now on."""
        self._start(sub)
        if sub.closed:
            return
        wild = self.destinations.wild
        queues = self.destinations.queues
        for pattern in patterns:
            self.chores.add(wild.watch(sub, pattern, principal, queues))

    def _browse(
        self, session: Session, sub_id: str, destination: str, headers: dict[str, str]
    ) -> Callable[[], None]:
        """``browser:true``: the queue's messages as they are now, then ``browser:end`` (browsing)."""
        selector_text = headers.get("selector", "").strip()
        ack = ack_mode(headers)
        if session.version == f.V1_0:
            raise InvalidHeader("browser:true (a queue browser) needs STOMP 1.1 or later, as in ActiveMQ")
        targets = names.split_destination(destination)
        if len(targets) != 1 or targets[0][0] != names.QUEUE:
            raise InvalidHeader(f"browser:true browses one /queue/ destination, not {destination}")
        if self.destinations.guard.authorizing:
            # Browsing reads, as consuming does.
            self.destinations.authorize(session, READ, destination)
        cost = subscription_footprint(sub_id, destination, False)
        destinations = self.destinations
        destinations.make_room(session, destination, subscription=cost if session.subscriptions else 0)
        selector = compile_selector(selector_text).matches if selector_text else None
        kind, name = targets[0]
        queue: Queue | None = None
        candidates: list[Queue] | None = None
        wanted = None
        if is_wildcard(name):
            # Every queue the pattern matches (and its user may read), one after the other,
            # then one browser:end naming the pattern, as in ActiveMQ.
            principal = None if session.principal.system else session.principal
            policy = destinations.policy_of(destination)
            candidates = list(destinations.queues.values())
            wanted = destinations.wild.browsable(name, principal, destinations.queues)
        else:
            resolved = destinations.resolve(session, kind, name)
            assert isinstance(resolved, Queue)
            queue = resolved
            policy = queue.policy
        # queueBrowserPrefetch: how many browsed messages an ack:client browser may hold
        # unacknowledged (an ack:auto one is never held back).
        prefetch = _prefetch_header(headers, policy.queue_browser_prefetch)
        browser = QueueBrowser(
            session,
            sub_id,
            session.next_key(),
            queue,
            self.persistence,
            selector,
            self.routing.seq,
            self.chores,
            ack=ack,
            prefetch=prefetch,
            pattern=destination,
            candidates=candidates,
            wanted=wanted,
        )
        browser.transformation = headers.get(transforming.TRANSFORMATION)
        self._charge(browser, cost)
        session.subscriptions[sub_id] = browser
        session.by_key[browser.key] = browser
        # After the RECEIPT, as any subscription's first MESSAGE.
        return browser.pump

    def _durable_for(
        self,
        session: Session,
        name: str,
        destination: str,
        targets: list[tuple[str, str]],
        selector_text: str,
        no_local: bool,
    ) -> DurableSubscription:
        """The durable subscription a SUBSCRIBE attaches to (made, or remade, if need be)."""
        if any(kind != names.TOPIC for kind, _ in targets):
            raise InvalidHeader("activemq.subscriptionName is for /topic/ destinations only")
        # CONNECT's client-id, else the connection's id (``connect``), as in ActiveMQ.
        client_id = session.client_id or session.id
        durable = self.durables.get(client_id, name)
        if durable is not None:
            same = durable.same_as(destination, selector_text, no_local)
            # As ActiveMQ: another destination or selector makes it a new subscription.
            self._may_claim(session, durable, "take over" if same else "remove")
            self._let_go(durable)
            if durable.subscriber is not None:
                raise DuplicateSubscription(
                    f"durable subscription {name!r} of client {client_id!r} is already active"
                )
            if not same:
                self._remove_durable(durable)
                durable = None
        if durable is None:
            guard = self.destinations.guard
            owner = session.principal
            durable = new_durable(guard, 0, client_id, name, destination, selector_text, no_local, owner)
            durable.store_id = self.persistence.put_subscription(client_id, name, durable.encode())
            self.durables.add(durable)
        return durable

    def _attach(self, sub: Subscription, durable: DurableSubscription) -> Cursor:
        """A durable subscriber's cursor: the one it kept since its last subscriber in this
        broker's lifetime, or a new one over what the store holds for it."""
        durable.subscriber = sub.session.id
        durable.attached = sub
        sub.durable = durable
        high_water = self.destinations.policy_of(durable.destination).cursor_high_water
        cursor = durable.cursor
        if cursor is not None:
            cursor.attach(sub, high_water)
            return cursor
        cursor = durable.cursor = Cursor(
            self.memory, self.destinations.swap.new_log(shared=False), high_water=high_water, owner=sub
        )
        owed = self.persistence.pending_of(durable.store_id)
        cursor.recovered(self.persistence.subscription_reader(durable.store_id), owed, self.routing.seq)
        return cursor

    def _let_go(self, durable: DurableSubscription) -> None:
        """A subscriber whose connection is closing (its subscriptions still ending, in
        slices) lets go of ``durable`` now: it is no longer active to its next subscriber."""
        attached = durable.attached
        if attached is not None and attached.session.closing:
            self.unsubscribe(cast("Session", attached.session), cast("Subscription", attached))

    def _may_claim(self, session: Session, durable: DurableSubscription, what: str) -> None:
        """Raise ``AccessDenied`` unless ``session``'s user may ``what`` (take over, remove)
        ``durable``: its owner may, and so may a user who may read every topic it covers,
        so whatever it holds.  A client-id is anyone's to claim while its connection is
        away, and taking a durable subscription over hands its subscriber what it kept,
        ending it deletes that; ActiveMQ checks nothing here (its SUBSCRIBE to a wildcard
        needs read on the wildcard itself, stompd's on any topic it covers)."""
        principal = session.principal
        part = durable.unclaimable_part(self.destinations.guard, principal)
        if part is not None:
            kind, name = part
            whole = "every topic of it, " if is_wildcard(name) else ""
            maker = "another user" if durable.owner is not None else "an earlier version, keeping no owner,"
            raise AccessDenied(
                f"{denied(principal, READ, kind + name)} ({whole}needed to {what} durable "
                f"subscription {durable.name!r} of client {durable.client_id!r}, which {maker} made)"
            )

    def remove_away(self, durable: DurableSubscription) -> None:
        """End ``durable``, whose subscriber is away, for an administrator: what it was
        owed goes with it, as with its subscriber's UNSUBSCRIBE naming it."""
        self._remove_durable(durable)

    def _remove_durable(self, durable: DurableSubscription) -> None:
        self.durables.remove(durable)
        if durable.cursor is not None:
            for message in durable.cursor.close():
                message.drop()
            durable.cursor = None
        self.persistence.remove_subscription(durable.client_id, durable.name)

    # -- UNSUBSCRIBE -----------------------------------------------------------------

    def on_unsubscribe(self, session: Session, frame: f.Frame) -> None:
        headers = frame.headers
        sub_id = headers.get("id")
        sub = None
        if sub_id is not None:
            sub = session.subscriptions.get(sub_id)
        elif session.version == f.V1_0:
            destination = headers.get("destination")
            if destination is None:
                raise MissingHeader("UNSUBSCRIBE requires an 'id' or 'destination' header")
            # A 1.0 SUBSCRIBE without an id is known by its destination: found at once.
            sub = session.subscriptions.get(destination)
            if sub is None or sub.destination != destination:
                sub = next((s for s in session.subscriptions.values() if s.destination == destination), None)
        else:
            raise MissingHeader("UNSUBSCRIBE requires an 'id' header in STOMP 1.1 and 1.2")
        durable_name = durable_name_of(headers)
        durable = None
        if durable_name is not None:
            durable = self.durables.get(session.client_id or session.id, durable_name)
            if durable is not None:
                # Before anything ends: a refusal leaves the subscriber subscribed too.
                self._may_claim(session, durable, "remove")
        if sub is not None:
            self.unsubscribe(session, sub)
        elif durable_name is None:
            if sub_id is not None and self.slow is not None:
                self.slow.refused_unsubscribe(session, sub_id)
            raise UnknownSubscription(
                f"no subscription {sub_id or headers.get('destination')!r} on this connection"
            )
        if durable_name is not None:
            # With the name, UNSUBSCRIBE ends the durable subscription (even an inactive
            # one), and what it was still owed goes with it.
            if durable is None:
                raise UnknownSubscription(f"no durable subscription {durable_name!r} for this client-id")
            self._let_go(durable)
            if durable.subscriber is not None:
                raise DuplicateSubscription(f"durable subscription {durable_name!r} is active elsewhere")
            self._remove_durable(durable)

    def unsubscribe(self, session: Session, sub: Subscription) -> None:
        """``sub`` ends: what it had in flight goes back for redelivery."""
        sub.closed = True
        self.memory.release(sub.footprint)
        self.charged -= sub.footprint
        sub.footprint = 0
        session.subscriptions.pop(sub.id, None)
        session.by_key.pop(sub.key, None)
        router = self.destinations.router
        for kind, pattern in sub.topic_patterns:
            router.unsubscribe(kind, pattern, sub)
        if self.destinations.wild:
            self.destinations.wild.unwatch(sub)
        queues = sub.queues
        leaving = len(queues) > SLICE
        if leaving:
            # A wildcard consumer over thousands of queues leaves them a slice at a time
            # (a chore, ``_leave``); meanwhile it has no credit, so none gives it a message.
            sub.auto = sub.unbounded = False
            sub.window = 0
        else:
            for queue in queues:
                queue.remove_consumer(sub)
        if sub.durable is not None:
            # Inactive now: its cursor waits for the next subscriber (durable.py).
            sub.durable.detach()
        else:
            for message in sub.cursor.close():
                message.drop()
        # What an open transaction holds stays with it: its COMMIT still acks it (as in
        # ActiveMQ), its ABORT gives it back.  A browser's were only looked at.
        held = sub.held
        if isinstance(sub, QueueBrowser):
            sub.stop()
            returned = []
        else:
            returned = [message for seq, message in sub.inflight.items() if seq not in held]
        sub.inflight.clear()
        held.clear()
        cause = "disconnect" if session.closing else "unsubscribe"
        self.settlement.give_back(sub, returned, topic_too=False, cause=cause)
        if leaving:
            self.chores.add(_leave(sub, list(queues)))
        else:
            sub.window = sub.prefetch
            for queue in queues:
                # Consumers that stood by (network ones) may take over what waits there.
                queue.dispatch()
        self.advisories.removed(sub)

    def close(self, session: Session) -> Steps[None]:
        """The connection is gone: each of its subscriptions ends, one step at a time
        (a chore), each step's cost one and one more for each message it gave back."""
        subscriptions = session.subscriptions
        while subscriptions:
            # Gone through from a list: taking the dict's first again and again would pass
            # over every slot emptied before it (100,000 subscriptions: quadratic).
            for sub in list(subscriptions.values()):
                if sub.closed:
                    continue  # a durable subscriber took it over meanwhile (``_let_go``)
                inflight = len(sub.inflight)
                self.unsubscribe(session, sub)
                yield 1 + inflight


def _leave(sub: Subscription, queues: list[Source]) -> Steps[None]:
    """``sub``, closed, leaves ``queues``: a queue a step, each then dispatching what waits
    there to those that stood by."""
    for queue in queues:
        queue.remove_consumer(sub)
        queue.dispatch()
        yield 1


#: A topic subscriber asking for what its topics kept (``delivery.retroactive``).
RETROACTIVE: Final = "activemq.retroactive"


def _network(headers: dict[str, str]) -> bridging.NetworkInfo | None:
    """A network subscription's SUBSCRIBE headers (broker.core.base.bridging), if it is one."""
    node = headers.get(bridging.NETWORK)
    if node is None:
        return None
    if not node or "," in node:
        raise InvalidHeader(f"{bridging.NETWORK} names one broker, got {node!r}")
    text = headers.get(bridging.NETWORK_TTL, "1")
    ttl = int_header(bridging.NETWORK_TTL, text)
    if ttl < 1:
        raise InvalidHeader(f"{bridging.NETWORK_TTL} must be at least 1, got {text!r}")
    return bridging.NetworkInfo(node, ttl, bridging.split_path(headers.get(bridging.NETWORK_PATH)))


def _prefetch_header(headers: dict[str, str], prefetch: int) -> int:
    """``activemq.prefetchSize`` (or RabbitMQ's ``prefetch-count``) if given, else ``prefetch``.

    As ActiveMQ's ``IntrospectionSupport`` sets it (checked against 5.17): 0 or less is
    taken, a consumer that is sent nothing (``Subscription.unbounded``; an ActiveMQ pull
    consumer, and STOMP has no pull frame); what is not a Java int is ignored."""
    text = headers.get("activemq.prefetchSize") or headers.get("prefetch-count")
    if text is None:
        return prefetch
    try:
        value = int(text)
    except ValueError:
        return prefetch
    return value if -(1 << 31) <= value < 1 << 31 else prefetch


def ack_mode(headers: dict[str, str]) -> str:
    """The SUBSCRIBE's ack mode: any value but ``client`` and ``client-individual`` is
    ``auto``, as ActiveMQ's ProtocolConverter reads it (checked: ``ack:bogus`` gets
    MESSAGEs without an ``ack`` header, acked as they go)."""
    ack = headers.get("ack", AUTO)
    return ack if ack in ACK_MODES else AUTO


def durable_name_of(headers: dict[str, str]) -> str | None:
    return headers.get("activemq.subscriptionName") or headers.get("durable-subscription-name")
