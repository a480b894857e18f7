"""Slow topic consumers in the engine (no sockets): a non-durable subscriber's
``<pendingMessageLimitStrategy>`` and ``<messageEvictionStrategy>`` (ActiveMQ's
TopicSubscription: what is evicted, counted, dead-lettered as ``TopicSubDiscard``, its
memory released), and ``<slowConsumerStrategy>`` aborts by the engine's clock.
tests/integration/test_slow_consumers.py checks the same over TCP, on ActiveMQ too."""

from __future__ import annotations

import pytest

from broker.core.base.clock import Clock
from broker.core.base.errors import BrokerError, UnknownSubscription, to_error_frame
from broker.core.base.settings import CoreSettings, DestinationPolicy, SlowConsumerPolicy
from broker.core.engine import Engine
from protocol.frames import Frame
from store.memory import memory_stores
from tests.broker.harness import Peer, messages_in_memory, tick

NOW = 1_000_000
SLOW_SUB = {"ack": "client", "activemq.prefetchSize": "2"}


def engine_with(**policy: object) -> Engine:
    """An engine whose topics ``slow.>`` have ``policy``; every other destination the default."""

    def policies(prefix: str, name: str) -> DestinationPolicy:
        if prefix == "/topic/" and name.startswith("slow."):
            return DestinationPolicy(**policy)  # type: ignore[arg-type]
        return DestinationPolicy()

    return Engine(CoreSettings(policies=policies), clock=Clock(NOW), stores=memory_stores())


def publish(engine: Engine, destination: str, bodies: list[bytes], **headers: str) -> Peer:
    p = Peer(engine)
    for body in bodies:
        p.send_frame("SEND", {"destination": destination, "persistent": "true", **headers}, body)
    return p


def ack_all(c: Peer, frames: list[Frame]) -> list[Frame]:
    """Ack the last of ``frames`` (cumulative) until nothing more comes; every MESSAGE."""
    got = list(frames)
    while frames:
        c.send_frame("ACK", {"id": frames[-1].headers["ack"]})
        frames = c.messages()
        got += frames
    return got


def dead_letters(engine: Engine) -> list[Frame]:
    d = Peer(engine)
    d.send_frame("SUBSCRIBE", {"destination": "/queue/ActiveMQ.DLQ", "id": "d"})
    return d.messages()


def test_past_the_limit_the_oldest_pending_are_evicted_to_the_dlq() -> None:
    engine = engine_with(pending_limit_kind="constant", pending_limit=3)
    c = Peer(engine)
    c.send_frame("SUBSCRIBE", {"destination": "/topic/slow.a", "id": "s", **SLOW_SUB})
    publish(engine, "/topic/slow.a", [b"m%d" % i for i in range(1, 11)])
    got = ack_all(c, c.messages())
    assert [f.body for f in got] == [b"m1", b"m2", b"m8", b"m9", b"m10"]
    (sub,) = c.session.subscriptions.values()
    assert sub.watch is not None and sub.watch.discarded == 5
    topic = engine.router.topics["/topic/slow.a"]
    assert (topic.stats.dead_lettered, topic.stats.dequeued) == (5, 10)
    dlq = dead_letters(engine)
    assert [f.body for f in dlq] == [b"m3", b"m4", b"m5", b"m6", b"m7"]
    cause = f"java.lang.Throwable: TopicSubDiscard. ID:{c.session.id}:1:{sub.key}"
    assert {f.headers["dlqDeliveryFailureCause"] for f in dlq} == {cause}
    assert {f.headers["original-destination"] for f in dlq} == {"/topic/slow.a"}


def test_without_a_limit_nothing_is_evicted() -> None:
    engine = engine_with()
    c = Peer(engine)
    c.send_frame("SUBSCRIBE", {"destination": "/topic/slow.a", "id": "s", **SLOW_SUB})
    publish(engine, "/topic/slow.a", [b"m%d" % i for i in range(1, 11)])
    (sub,) = c.session.subscriptions.values()
    assert sub.watch is None
    assert len(ack_all(c, c.messages())) == 10


def test_non_persistent_evicted_messages_are_dropped_and_their_memory_released() -> None:
    engine = engine_with(pending_limit_kind="constant", pending_limit=3)
    c = Peer(engine)
    c.send_frame("SUBSCRIBE", {"destination": "/topic/slow.m", "id": "s", **SLOW_SUB})
    p = Peer(engine)
    for i in range(100):
        p.send_frame("SEND", {"destination": "/topic/slow.m"}, b"x" * 1000 + b"%d" % i)
    # Two in flight and three pending, whatever was sent.
    one = messages_in_memory(engine) // 5
    assert one > 1000
    (sub,) = c.session.subscriptions.values()
    assert sub.watch is not None and sub.watch.discarded == 95
    assert dead_letters(engine) == []
    assert [f.body[1000:] for f in ack_all(c, c.messages())] == [b"0", b"1", b"97", b"98", b"99"]
    assert messages_in_memory(engine) == 0


def test_prefetch_rate_is_a_multiple_of_the_prefetch() -> None:
    engine = engine_with(pending_limit_kind="prefetchRate", pending_multiplier=1.5)
    c = Peer(engine)
    c.send_frame("SUBSCRIBE", {"destination": "/topic/slow.r", "id": "s", **SLOW_SUB})
    publish(engine, "/topic/slow.r", [b"m%d" % i for i in range(1, 11)])
    assert [f.body for f in ack_all(c, c.messages())] == [b"m1", b"m2", b"m8", b"m9", b"m10"]


def test_a_limit_of_zero_keeps_nothing_pending_and_counts_nothing() -> None:
    engine = engine_with(pending_limit_kind="constant", pending_limit=0)
    c = Peer(engine)
    c.send_frame("SUBSCRIBE", {"destination": "/topic/slow.z", "id": "s", **SLOW_SUB})
    publish(engine, "/topic/slow.z", [b"m%d" % i for i in range(1, 6)])
    assert [f.body for f in ack_all(c, c.messages())] == [b"m1", b"m2"]
    (sub,) = c.session.subscriptions.values()
    assert sub.watch is not None and sub.watch.discarded == 0
    assert dead_letters(engine) == []


def test_lowest_priority_goes_first_then_the_oldest() -> None:
    engine = engine_with(pending_limit_kind="constant", pending_limit=3, eviction="oldestLowestPriority")
    c = Peer(engine)
    c.send_frame("SUBSCRIBE", {"destination": "/topic/slow.p", "id": "s", **SLOW_SUB})
    p = Peer(engine)
    for i, priority in enumerate([4, 4, 1, 4, 2, 1, 4, 4, 9, 4], 1):
        p.send_frame(
            "SEND",
            {"destination": "/topic/slow.p", "persistent": "true", "priority": str(priority)},
            b"m%d" % i,
        )
    assert [f.body for f in ack_all(c, c.messages())] == [b"m1", b"m2", b"m8", b"m9", b"m10"]
    assert [f.body for f in dead_letters(engine)] == [b"m3", b"m6", b"m5", b"m4", b"m7"]


def test_unique_property_keeps_the_newest_of_each_value() -> None:
    engine = engine_with(
        pending_limit_kind="constant", pending_limit=3, eviction="uniqueProperty", eviction_property="sym"
    )
    c = Peer(engine)
    c.send_frame("SUBSCRIBE", {"destination": "/topic/slow.u", "id": "s", **SLOW_SUB})
    p = Peer(engine)
    for i, sym in enumerate("ABACBAADBA", 1):
        engine.clock.ms += 1
        p.send_frame("SEND", {"destination": "/topic/slow.u", "persistent": "true", "sym": sym}, b"m%d" % i)
    got = ack_all(c, c.messages())
    assert [(f.body, f.headers["sym"]) for f in got] == [
        (b"m1", "A"),
        (b"m2", "B"),
        (b"m8", "D"),
        (b"m9", "B"),
        (b"m10", "A"),
    ]
    assert [f.body for f in dead_letters(engine)] == [b"m3", b"m6", b"m4", b"m5", b"m7"]


def test_durable_subscribers_are_not_limited() -> None:
    engine = engine_with(pending_limit_kind="constant", pending_limit=1)
    c = Peer(engine, **{"client-id": "me"})
    c.send_frame(
        "SUBSCRIBE",
        {"destination": "/topic/slow.d", "id": "s", "activemq.subscriptionName": "d", **SLOW_SUB},
    )
    publish(engine, "/topic/slow.d", [b"m%d" % i for i in range(1, 8)])
    assert len(ack_all(c, c.messages())) == 7


ABORT = SlowConsumerPolicy(max_slow_duration_ms=1000, check_period_ms=500)


def slow_subscriber(engine: Engine, destination: str = "/topic/slow.x") -> Peer:
    """A client-ack subscriber with prefetch 2 that acks nothing, sent 8 messages: slow."""
    c = Peer(engine)
    c.send_frame("SUBSCRIBE", {"destination": destination, "id": "s", **SLOW_SUB})
    publish(engine, destination, [b"m%d" % i for i in range(8)])
    assert [f.body for f in c.messages()] == [b"m0", b"m1"]
    return c


def test_a_consumer_slow_for_max_slow_duration_is_aborted() -> None:
    engine = engine_with(slow_consumer=ABORT)
    c = slow_subscriber(engine)
    (sub,) = c.session.subscriptions.values()
    assert sub.watch is not None and sub.watch.slow
    engine.clock.ms += 500
    tick(engine)
    assert "s" in c.session.subscriptions
    engine.clock.ms += 500
    tick(engine)
    # Removed, with nothing sent (ActiveMQ's ConsumerControl means nothing to STOMP).
    assert "s" not in c.session.subscriptions and c.received() == []
    publish(engine, "/topic/slow.x", [b"later"])
    assert c.messages() == []
    # Its UNSUBSCRIBE gets ActiveMQ's words; the connection goes on.
    with pytest.raises(BrokerError) as refused:
        c.send_frame("UNSUBSCRIBE", {"id": "s", "receipt": "u"})
    assert not refused.value.fatal
    error = to_error_frame(refused.value, "u")
    consumer = f"{c.session.id}:1:{sub.key}"
    assert error.headers["message"] == f"Cannot remove a consumer that had not been registered: {consumer}"
    assert engine.slow.aborts == 1
    # Asked once: a second UNSUBSCRIBE is an unknown subscription as any.
    with pytest.raises(UnknownSubscription):
        c.send_frame("UNSUBSCRIBE", {"id": "s"})


def test_a_consumer_that_caught_up_is_not_aborted() -> None:
    engine = engine_with(slow_consumer=ABORT)
    c = slow_subscriber(engine)
    engine.clock.ms += 500
    tick(engine)
    ack_all(c, [*c.messages()] or _last_two(c))
    engine.clock.ms += 500
    tick(engine)
    engine.clock.ms += 500
    tick(engine)
    assert "s" in c.session.subscriptions


def _last_two(c: Peer) -> list[Frame]:
    # The two in flight since slow_subscriber: acked by the id of the second.
    (sub,) = c.session.subscriptions.values()
    seq = max(sub.inflight)
    return [Frame("MESSAGE", {"ack": f"{sub.key}-{seq}"}, b"")]


def test_max_slow_count_aborts_on_the_check_after_the_count() -> None:
    engine = engine_with(
        slow_consumer=SlowConsumerPolicy(max_slow_duration_ms=-1, max_slow_count=1, check_period_ms=500)
    )
    c = slow_subscriber(engine)
    engine.clock.ms += 499
    tick(engine)
    assert "s" in c.session.subscriptions
    engine.clock.ms += 1
    tick(engine)
    assert "s" not in c.session.subscriptions


def test_abort_connection_closes_it_without_an_error() -> None:
    engine = engine_with(
        slow_consumer=SlowConsumerPolicy(
            max_slow_duration_ms=1000, check_period_ms=500, abort_connection=True
        )
    )
    c = slow_subscriber(engine)
    closed: list[bool] = []
    c.outbox.close = lambda: closed.append(True)  # type: ignore[attr-defined]
    engine.clock.ms += 1000
    tick(engine)
    assert closed == []
    engine.clock.ms += 500
    tick(engine)
    assert closed == [True] and c.received() == []


def test_abort_slow_ack_ends_a_queue_consumer_that_acks_nothing() -> None:
    def policies(prefix: str, name: str) -> DestinationPolicy:
        if name.startswith("ack."):
            return DestinationPolicy(
                slow_consumer=SlowConsumerPolicy(
                    kind="abortSlowAck",
                    max_time_since_last_ack_ms=1000,
                    max_slow_duration_ms=1000,
                    check_period_ms=500,
                )
            )
        return DestinationPolicy()

    engine = Engine(CoreSettings(policies=policies), clock=Clock(NOW), stores=memory_stores())
    slow, fast = Peer(engine), Peer(engine)
    for c in (slow, fast):
        c.send_frame("SUBSCRIBE", {"destination": "/queue/ack.q", "id": "s", **SLOW_SUB})
    publish(engine, "/queue/ack.q", [b"q%d" % i for i in range(4)])
    fast_got = fast.messages()
    assert len(slow.messages()) == 2 and len(fast_got) == 2
    for _ in range(8):
        engine.clock.ms += 500
        tick(engine)
        ack_all(fast, fast.messages() or fast_got)
        fast_got = []
    assert "s" not in slow.session.subscriptions
    assert "s" in fast.session.subscriptions
    # What the aborted consumer held went back to the queue, and to the other consumer.
    assert len(ack_all(fast, fast.messages())) >= 0
    assert engine.queues["/queue/ack.q"].cursor.count == 0


@pytest.mark.parametrize("fallback", ["dlq", "drop"])
def test_redelivery_fallback_dead_letters_or_drops_at_the_first_nack(fallback: str) -> None:
    def policies(prefix: str, name: str) -> DestinationPolicy:
        return DestinationPolicy(max_redeliveries=0, redelivery_fallback=fallback)

    engine = Engine(CoreSettings(policies=policies), clock=Clock(NOW), stores=memory_stores())
    c = Peer(engine)
    c.send_frame("SUBSCRIBE", {"destination": "/queue/nomatch", "id": "s", "ack": "client-individual"})
    publish(engine, "/queue/nomatch", [b"x"])
    (message,) = c.messages()
    c.send_frame("NACK", {"id": message.headers["ack"]})
    assert c.messages() == []
    assert [f.body for f in dead_letters(engine)] == ([b"x"] if fallback == "dlq" else [])


def test_the_check_looks_at_slow_subscribers_only() -> None:
    engine = engine_with(slow_consumer=ABORT)
    fast = [Peer(engine) for _ in range(50)]
    for c in fast:
        c.send_frame("SUBSCRIBE", {"destination": "/topic/slow.x", "id": "s"})
    slow = slow_subscriber(engine)
    (strategy,) = engine.slow.strategies.values()
    # One entry: the slow one; the 50 that took every message never reach the check.
    assert list(strategy.entries) == list(slow.session.subscriptions.values())
    engine.clock.ms += 1000
    tick(engine)
    engine.clock.ms += 1000
    tick(engine)
    assert "s" not in slow.session.subscriptions
    assert all("s" in c.session.subscriptions for c in fast)


def test_a_subscribers_own_maximum_pending_limit_lowers_the_policys() -> None:
    engine = engine_with(pending_limit_kind="constant", pending_limit=3)
    c = Peer(engine)
    own = {"activemq.maximumPendingMessageLimit": "1"}
    c.send_frame("SUBSCRIBE", {"destination": "/topic/slow.o", "id": "s", **SLOW_SUB, **own})
    publish(engine, "/topic/slow.o", [b"m%d" % i for i in range(1, 7)])
    assert [f.body for f in ack_all(c, c.messages())] == [b"m1", b"m2", b"m6"]
    with pytest.raises(BrokerError):
        c.send_frame(
            "SUBSCRIBE",
            {"destination": "/topic/slow.o", "id": "t", "activemq.maximumPendingMessageLimit": "x"},
        )
    assert "t" not in c.session.subscriptions
