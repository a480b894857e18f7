"""Memory no limit counted (issue 35 item 3), in the core: an open transaction's messages,
subscriptions and what a destination makes once used are charged to memory usage, and a
SUBSCRIBE's consumer advisory costs the same however many subscribe with it.  Over TCP,
with users: tests/integration/test_memory_limits.py."""

from __future__ import annotations

import pytest

from broker.core.delivery.subscription import Subscription
from broker.core.delivery.topic import Topic, TopicRouter
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
