"""``<slowConsumerStrategy>``: ActiveMQ's abortSlowConsumerStrategy and
abortSlowAckConsumerStrategy, run on the engine's tick by its clock.

One strategy object per distinct configuration (as ActiveMQ has one per policyEntry),
each with its own ``checkPeriod``.  ``AbortSlow`` hears of a subscriber turning slow
(delivery.slow: more than its prefetch waits) and keeps it in its map with ActiveMQ's
``SlowConsumerEntry`` counts; each period it marks those still slow and aborts the ones
slow for ``maxSlowDuration`` (marks x checkPeriod) or ``maxSlowCount`` times.  Its pass
looks at the slow subscribers only.  ``AbortSlowAck`` looks each period at the
consumers of the destinations made under its policy (a chore, a slice at a time), and
counts as slow one that has messages in flight and has acked none for
``maxTimeSinceLastAck`` (with ``ignoreIdleConsumers=false``, one with nothing in flight
too): acks are noticed by its pass (what left the consumer's flight since the last
one), so an ACK costs nothing more.

Aborting, as ActiveMQ 5.17 does it to a STOMP client: with ``abortConnection`` the
connection is closed, without an ERROR (the log says why); else the subscription is
removed with nothing sent (ActiveMQ's ConsumerControl means nothing to STOMP), its
unacknowledged messages given back, and a later UNSUBSCRIBE of it gets ActiveMQ's
ERROR ``Cannot remove a consumer that had not been registered: ID``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Final, cast

from broker.core.base.chores import SLICE
from broker.core.base.errors import BrokerError
from broker.core.delivery.queue import Queue
from broker.core.delivery.slow import consumer_id

if TYPE_CHECKING:
    from collections.abc import Callable

    from broker.core.base.chores import Chores, Steps
    from broker.core.base.clock import Clock
    from broker.core.base.settings import SlowConsumerPolicy
    from broker.core.delivery import slow
    from broker.core.delivery.destinations import Destination, Destinations
    from broker.core.delivery.session import Session
    from broker.core.delivery.subscription import Subscription

log = logging.getLogger("stompd.engine")

ABORT: Final = "abort"
ABORT_SLOW_ACK: Final = "abortSlowAck"


class ConsumerAborted(BrokerError):
    """An UNSUBSCRIBE of a subscription a slow-consumer strategy removed: ActiveMQ's
    IllegalStateException for a consumer it no longer has."""

    summary = "consumer not registered"

    def __init__(self, text: str) -> None:
        super().__init__(text)
        # ActiveMQ's ERROR says it in its message header.
        self.summary = text


class SlowConsumers:
    """The strategies in force, and what they aborted (for a later UNSUBSCRIBE)."""

    __slots__ = ("aborted", "aborts", "chores", "clock", "destinations", "strategies", "unsubscribe")

    def __init__(self, clock: Clock, destinations: Destinations, chores: Chores) -> None:
        self.clock = clock
        self.destinations = destinations
        self.chores = chores
        self.strategies: dict[SlowConsumerPolicy, AbortSlow] = {}
        #: (session id, subscription id) -> its consumer id, of subscriptions aborted
        #: while the connection stays (forgotten when it goes: ``forget``).
        self.aborted: dict[tuple[str, str], str] = {}
        #: Consumers aborted, connections closed for one included (for /metrics).
        self.aborts = 0
        #: Set by the engine: ends a subscription as an UNSUBSCRIBE does.
        self.unsubscribe: Callable[[Session, Subscription], None] | None = None

    def strategy(self, policy: SlowConsumerPolicy) -> AbortSlow:
        found = self.strategies.get(policy)
        if found is None:
            kind = AbortSlowAck if policy.kind == ABORT_SLOW_ACK else AbortSlow
            found = self.strategies[policy] = kind(self, policy)
        return found

    def made(self, target: Destination) -> None:
        """``target`` was made under a policy with a slow-consumer strategy."""
        policy = target.policy.slow_consumer
        if policy is not None:
            self.strategy(policy).add_destination(target)

    def tick(self) -> None:
        if not self.strategies:
            return
        now = self.clock.ms
        for strategy in tuple(self.strategies.values()):
            strategy.due(now)

    def refused_unsubscribe(self, session: Session, sub_id: str) -> None:
        """An UNSUBSCRIBE names no subscription: ActiveMQ's ERROR if a strategy aborted it."""
        consumer = self.aborted.pop((session.id, sub_id), None)
        if consumer is not None:
            raise ConsumerAborted(f"Cannot remove a consumer that had not been registered: {consumer}")

    def forget(self, session: Session) -> None:
        """``session`` closed: what was aborted of it is forgotten."""
        if self.aborted:
            for key in [key for key in self.aborted if key[0] == session.id]:
                del self.aborted[key]

    def abort(self, subs: list[Subscription], policy: SlowConsumerPolicy) -> None:
        """AbortSlowConsumerStrategy.abortSubscription: per connection, close it, or end
        each of its slow subscriptions."""
        by_session: dict[Session, list[Subscription]] = {}
        for sub in subs:
            if not sub.closed and not sub.session.closing:
                by_session.setdefault(sub.session, []).append(sub)  # type: ignore[arg-type]
        for session, slow in by_session.items():
            self.aborts += len(slow)
            if policy.abort_connection:
                log.warning(
                    "Transport Connection to: %s failed: %d Consumers was slow too often (>%d) or "
                    "too long (>%d): ",
                    session.id,
                    len(slow),
                    policy.max_slow_count,
                    policy.max_slow_duration_ms,
                )
                # As ActiveMQ's InactivityIOException: the connection goes, no ERROR first.
                session.outbox.close()
                continue
            for sub in slow:
                log.info("aborting slow consumer: %s for destination:%s", consumer_id(sub), sub.destination)
                self.aborted[(session.id, sub.id)] = consumer_id(sub)
                assert self.unsubscribe is not None
                self.unsubscribe(session, sub)


class AbortSlow:
    """abortSlowConsumerStrategy: ActiveMQ's ``slowConsumers`` map, [slowCount, markCount]."""

    __slots__ = ("_due", "_running", "entries", "owner", "policy")

    def __init__(self, owner: SlowConsumers, policy: SlowConsumerPolicy) -> None:
        self.owner = owner
        self.policy = policy
        self.entries: dict[Subscription, list[int]] = {}
        #: When its next pass runs (None: not started; ActiveMQ starts it at the first
        #: slow consumer).
        self._due: int | None = None
        self._running = False

    def add_destination(self, target: Destination) -> None:
        """Nothing to do: this strategy hears of slow subscribers as they turn slow."""

    def slow_consumer(self, subscriber: slow.Subscription) -> None:
        # Only a Subscription has a watch to tell this (delivery.slow).
        sub = cast("Subscription", subscriber)
        policy = self.policy
        if policy.max_slow_count < 0 and policy.max_slow_duration_ms < 0:
            return
        if self._due is None:
            self._due = self.owner.clock.ms + policy.check_period_ms
        entry = self.entries.get(sub)
        if entry is None:
            self.entries[sub] = [1, 0]
        elif policy.max_slow_count > 0:
            entry[0] += 1

    def due(self, now: int) -> None:
        due = self._due
        if due is None or now < due or self._running:
            return
        # Every period that has gone is one run (the tick may come late: one run, not several).
        self._due = now + self.policy.check_period_ms
        self.run(now)

    def run(self, now: int) -> None:
        policy = self.policy
        entries = self.entries
        if policy.max_slow_duration_ms > 0:
            for entry in entries.values():
                entry[1] += 1
        abort: list[Subscription] = []
        for sub, entry in list(entries.items()):
            watch = sub.watch
            if sub.closed or watch is None:
                del entries[sub]
                continue
            if policy.ignore_network_consumers and sub.network is not None:
                del entries[sub]
                continue
            if not sub.cursor.count:
                # Drained meanwhile: as it would be once its next message goes out at once.
                watch.caught_up(sub)
            if watch.slow:
                if self._expired(entry):
                    abort.append(sub)
                    del entries[sub]
            else:
                log.info("sub: %s is no longer slow", consumer_id(sub))
                del entries[sub]
        if abort:
            self.owner.abort(abort, policy)

    def _expired(self, entry: list[int]) -> bool:
        policy = self.policy
        duration = policy.max_slow_duration_ms
        if duration > 0 and entry[1] * policy.check_period_ms >= duration:
            return True
        return policy.max_slow_count > 0 and entry[0] >= policy.max_slow_count


class AbortSlowAck(AbortSlow):
    """abortSlowAckConsumerStrategy: each period, the consumers of its destinations that
    have acked nothing for ``maxTimeSinceLastAck``."""

    __slots__ = ("_destinations", "_progress")

    def __init__(self, owner: SlowConsumers, policy: SlowConsumerPolicy) -> None:
        super().__init__(owner, policy)
        self._destinations: dict[str, Destination] = {}
        #: Per consumer: how much had left its flight when last looked at, and since when
        #: (clock ms) it had not moved.
        self._progress: dict[Subscription, tuple[int, int]] = {}
        # Started at once (ActiveMQ's setBrokerService): it need not hear of anything.
        self._due = owner.clock.ms + policy.check_period_ms

    def add_destination(self, target: Destination) -> None:
        self._destinations[target.name] = target

    def slow_consumer(self, subscriber: slow.Subscription) -> None:
        """Ignored, as ActiveMQ's: this strategy looks at the time since the last ack."""

    def run(self, now: int) -> None:
        if self.policy.max_time_since_last_ack_ms < 0:
            return
        self._running = True
        self.owner.chores.add(self._pass(now))

    def _pass(self, now: int) -> Steps[None]:
        policy = self.policy
        entries = self.entries
        try:
            for sub, entry in list(entries.items()):
                if policy.max_slow_duration_ms > 0:
                    entry[1] += 1
                if sub.closed:
                    del entries[sub]
                    self._progress.pop(sub, None)
            seen: set[Subscription] = set()
            destinations = self.owner.destinations
            for name, target in list(self._destinations.items()):
                consumers: tuple[Subscription, ...]
                if type(target) is Queue:
                    if destinations.queues.get(name) is not target:
                        del self._destinations[name]
                        continue
                    consumers = tuple(target.consumers)
                else:
                    if destinations.router.topics.get(name) is not target:
                        del self._destinations[name]
                        continue
                    consumers = destinations.router.subscribers(target)
                for start in range(0, len(consumers), SLICE):
                    for sub in consumers[start : start + SLICE]:
                        if sub not in seen and not sub.closed:
                            seen.add(sub)
                            self._look_at(sub, now)
                    yield SLICE // 2
            for sub in [sub for sub in self._progress if sub not in seen]:
                del self._progress[sub]
            abort: list[Subscription] = []
            for sub, entry in list(entries.items()):
                if self._expired(entry):
                    abort.append(sub)
                    del entries[sub]
                    self._progress.pop(sub, None)
            if abort:
                self.owner.abort(abort, policy)
        finally:
            self._running = False

    def _look_at(self, sub: Subscription, now: int) -> None:
        policy = self.policy
        entries = self.entries
        if policy.ignore_network_consumers and sub.network is not None:
            if entries.pop(sub, None) is not None:
                log.info("network sub: %s is no longer slow", consumer_id(sub))
            return
        inflight = len(sub.inflight)
        if policy.ignore_idle_consumers and not inflight:
            self._progress.pop(sub, None)
            if entries.pop(sub, None) is not None:
                log.info("idle sub: %s is no longer slow", consumer_id(sub))
            return
        # What has left its flight: acked (or given back), ack:auto deliveries included.
        moved = sub.delivered - inflight
        last = self._progress.get(sub)
        if last is None or last[0] != moved:
            self._progress[sub] = (moved, now)
            if last is not None and entries.pop(sub, None) is not None:
                log.info("sub: %s is no longer slow", consumer_id(sub))
            if last is None:
                return
        since = self._progress[sub][1]
        if now - since > policy.max_time_since_last_ack_ms:
            entry = entries.get(sub)
            if entry is None:
                log.debug("sub: %s is now slow", consumer_id(sub))
                # Marked on its first pass, as ActiveMQ's.
                entries[sub] = [1, 1]
            elif policy.max_slow_count > 0:
                entry[0] += 1
