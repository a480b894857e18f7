"""Memory no limit counted (issue 35 item 3), in the core: an open transaction's messages,
subscriptions and what a destination makes once used are charged to memory usage, and a
SUBSCRIBE's consumer advisory costs the same however many subscribe with it.  Over TCP,
with users: tests/integration/test_memory_limits.py."""

from __future__ import annotations

import pytest

from broker.core.base.errors import NoSpace
from broker.core.delivery.subscription import Subscription
from broker.core.delivery.topic import Topic, TopicRouter
from broker.core.engine import Engine
from tests.broker.harness import Peer, new_engine

ADVISORIES = "/topic/ActiveMQ.Advisory.Consumer.>"


# -- consumer advisories ----------------------------------------------------------------


def test_a_subscribes_advisory_counts_the_topics_consumers_without_listing_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A bridge reads consumer advisories: each SUBSCRIBE to a topic publishes one with the
    topic's consumer count.  Counting must not list the topic's subscribers (a tuple of
    all of them after each SUBSCRIBE: 100,000 SUBSCRIBEs were 170 s of it)."""
    engine = new_engine()
    watcher = Peer(engine)
    watcher.send_frame("SUBSCRIBE", {"id": "w", "destination": ADVISORIES})
    Peer(engine).send_frame("SUBSCRIBE", {"id": "wild", "destination": "/topic/prices.>"})
    watcher.messages()
    listed = 0
    listing = TopicRouter.subscribers

    def counting(self: TopicRouter, topic: Topic) -> tuple[Subscription, ...]:
        nonlocal listed
        # (The advisory topic's own subscribers are listed to publish it.)
        listed += topic.name == "/topic/prices.eu"
        return listing(self, topic)

    monkeypatch.setattr(TopicRouter, "subscribers", counting)
    peer = Peer(engine)
    for i in range(50):
        peer.send_frame("SUBSCRIBE", {"id": str(i), "destination": "/topic/prices.eu"})
    assert listed == 0
    counts = [int(m.headers["consumerCount"]) for m in watcher.messages()]
    # By name and by the wildcard: what the topic feeds after each SUBSCRIBE.
    assert counts == [i + 2 for i in range(50)]


def test_a_topics_count_is_the_number_of_subscribers_it_feeds() -> None:
    engine = new_engine()
    router = engine.router
    peers = [Peer(engine) for _ in range(3)]
    peers[0].send_frame("SUBSCRIBE", {"id": "a", "destination": "/topic/a.b"})
    peers[1].send_frame("SUBSCRIBE", {"id": "w", "destination": "/topic/a.>"})
    peers[2].send_frame("SUBSCRIBE", {"id": "s", "destination": "/topic/*.b"})
    topic = engine.destinations.topic("/topic/", "a.b")
    assert router.count(topic) == len(router.subscribers(topic)) == 3
    peers[1].send_frame("UNSUBSCRIBE", {"id": "w"})
    peers[0].send_frame("SUBSCRIBE", {"id": "a2", "destination": "/topic/a.b"})
    assert router.count(topic) == len(router.subscribers(topic)) == 3
    assert {sub.id for sub in router.subscribers(topic)} == {"a", "a2", "s"}
    other = engine.destinations.topic("/topic/", "c")
    assert router.count(other) == 0


# -- an open transaction's messages ---------------------------------------------------------

KB = 1024


def memory_used(engine: Engine) -> int:
    return engine.usage.memory.used - engine.destinations.charged


def begin(peer: Peer, tx: str = "t") -> None:
    peer.send_frame("BEGIN", {"transaction": tx})


def send_in(peer: Peer, body: bytes, tx: str = "t", destination: str = "/queue/q", **headers: str) -> None:
    peer.send_frame("SEND", {"destination": destination, "transaction": tx, **headers}, body)


def test_a_transactions_messages_are_charged_from_their_send_to_commit() -> None:
    engine = new_engine()
    peer = Peer(engine)
    begin(peer)
    send_in(peer, b"x" * 10 * KB)
    send_in(peer, b"y" * 10 * KB, destination="/queue/a,/topic/b")
    queue = engine.queues["/queue/q"]
    assert queue.meter is not None
    one = queue.meter.used
    assert one >= 10 * KB
    # Each destination's meter, and the broker's for all three copies.
    assert memory_used(engine) == 3 * one
    assert engine.queues["/queue/a"].meter.used == one  # type: ignore[union-attr]
    assert engine.router.topics["/topic/b"].meter.used == one  # type: ignore[union-attr]
    peer.send_frame("COMMIT", {"transaction": "t"})
    # Routed: the queues hold them now (the topic had no subscriber: dropped).
    assert memory_used(engine) == 2 * one
    assert queue.cursor.count == 1


@pytest.mark.parametrize("end", ["ABORT", "closed"])
def test_an_aborted_transaction_gives_its_charge_back(end: str) -> None:
    engine = new_engine()
    peer = Peer(engine)
    begin(peer)
    for _ in range(5):
        send_in(peer, b"x" * 10 * KB)
    assert memory_used(engine) > 50 * KB
    if end == "closed":
        engine.close_session(peer.session)
    else:
        peer.send_frame("ABORT", {"transaction": "t"})
    assert memory_used(engine) == 0
    assert engine.queues["/queue/q"].cursor.count == 0


def test_a_transacted_send_that_does_not_fit_waits_for_room_then_goes_in() -> None:
    engine = new_engine(memory_limit=100 * KB)
    peer = Peer(engine)
    other = Peer(engine)
    consumer = Peer(engine)
    # Another producer's backlog, in flight to a client-ack consumer: RAM, not disk.
    consumer.send_frame("SUBSCRIBE", {"destination": "/queue/busy", "id": "c", "ack": "client"})
    other.send_frame("SEND", {"destination": "/queue/busy"}, b"b" * 40 * KB)
    (held,) = consumer.messages()
    begin(peer)
    send_in(peer, b"x" * 40 * KB, receipt="1")
    send_in(peer, b"y" * 40 * KB, receipt="2")
    peer.send_frame("COMMIT", {"transaction": "t", "receipt": "3"})
    assert [f.headers["receipt-id"] for f in peer.received()] == ["1"]
    assert memory_used(engine) <= 100 * KB
    consumer.send_frame("ACK", {"id": held.headers["ack"]})
    assert [f.headers["receipt-id"] for f in peer.received()] == ["2", "3"]
    assert engine.queues["/queue/q"].cursor.count == 2


def test_under_send_fail_if_no_space_a_transacted_send_that_does_not_fit_is_refused() -> None:
    engine = new_engine(memory_limit=100 * KB, send_fail_if_no_space=True)
    peer = Peer(engine)
    begin(peer)
    send_in(peer, b"x" * 60 * KB)
    with pytest.raises(NoSpace) as refused:
        send_in(peer, b"y" * 60 * KB, receipt="r")
    assert "sendFailIfNoSpace" in str(refused.value)
    engine.close_session(peer.session)
    assert memory_used(engine) == 0


def test_a_destinations_own_limit_holds_a_transaction_back_too() -> None:
    engine = new_engine(destination_memory_limit=30 * KB)
    peer = Peer(engine)
    begin(peer)
    send_in(peer, b"x" * 20 * KB, receipt="1")
    send_in(peer, b"y" * 20 * KB, receipt="2")
    send_in(peer, b"z" * 20 * KB, destination="/queue/other", receipt="3")
    assert [f.headers["receipt-id"] for f in peer.received()] == ["1"]
    peer.send_frame("ABORT", {"transaction": "t", "receipt": "a"})
    # The ABORT lets go at once: the SENDs waiting behind go (dropped with it), in order.
    assert [f.headers["receipt-id"] for f in peer.received()] == ["2", "3", "a"]
    assert memory_used(engine) == 0


def test_an_abort_is_not_stuck_behind_its_own_transactions_send_waiting_for_room() -> None:
    """The transaction itself fills memory: its next SEND waits, and so would an ABORT
    behind it, for room only that ABORT can make (ActiveMQ 5.17 lets an ABORT through
    too, and fails the waiting SEND)."""
    engine = new_engine(memory_limit=100 * KB)
    peer = Peer(engine)
    begin(peer)
    for i in range(3):
        send_in(peer, b"x" * 30 * KB, receipt=str(i))
    send_in(peer, b"x" * 30 * KB, receipt="waits")
    send_in(peer, b"x" * 30 * KB, receipt="behind")
    assert [f.headers["receipt-id"] for f in peer.received()] == ["0", "1", "2"]
    peer.send_frame("ABORT", {"transaction": "t", "receipt": "aborted"})
    assert [f.headers["receipt-id"] for f in peer.received()] == ["waits", "behind", "aborted"]
    assert memory_used(engine) == 0
    # The connection goes on, and nothing of the transaction was routed.
    peer.send_frame("SEND", {"destination": "/queue/q", "receipt": "after"}, b"plain")
    assert [f.headers["receipt-id"] for f in peer.received()] == ["after"]
    assert engine.queues["/queue/q"].cursor.count == 1
