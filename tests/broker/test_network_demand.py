"""A bridge's demand (broker/network/demand.py, sans-IO): consumer advisories in, the
subscriptions to keep out.  The advisories are the engine's own (``broker.core.handlers.advisory``),
taken from a real engine's advisory topic."""

from __future__ import annotations

from broker.network.demand import Change, Demand
from config.model import NetworkDestination
from protocol.frames import Frame
from tests.broker.harness import Peer, new_engine


class Remote:
    """A broker whose consumer advisories a test reads, as a bridge would."""

    def __init__(self) -> None:
        self.engine = new_engine(broker_name="B")
        self.watcher = Peer(self.engine)
        self.watcher.send_frame(
            "SUBSCRIBE", {"id": "w", "destination": "/topic/ActiveMQ.Advisory.Consumer.>"}
        )
        self.peers: dict[str, Peer] = {}

    def subscribe(self, who: str, destination: str, **headers: str) -> None:
        peer = self.peers.setdefault(who, Peer(self.engine))
        peer.send_frame("SUBSCRIBE", {"id": destination, "destination": destination, **headers})

    def unsubscribe(self, who: str, destination: str) -> None:
        self.peers[who].send_frame("UNSUBSCRIBE", {"id": destination})

    def advisories(self) -> list[Frame]:
        return self.watcher.messages()


def changes(demand: Demand, frames: list[Frame]) -> list[tuple[bool, str, str, tuple[str, ...]]]:
    out: list[Change] = []
    for frame in frames:
        out += demand.advisory(frame)
    return [(c.added, c.want.destination, c.want.selector, c.want.path) for c in out]


def test_with_conduit_one_subscription_per_destination_and_selector_until_its_last_consumer_goes() -> None:
    remote, demand = Remote(), Demand("A", ttl=1, conduit=True, publisher="B")
    remote.subscribe("c1", "/queue/orders")
    remote.subscribe("c2", "/queue/orders")
    remote.subscribe("c3", "/queue/orders", selector="region = 'EU'")
    remote.subscribe("c4", "/topic/prices")
    assert changes(demand, remote.advisories()) == [
        (True, "/queue/orders", "", ()),
        (True, "/queue/orders", "region = 'EU'", ()),
        (True, "/topic/prices", "", ()),
    ]
    remote.unsubscribe("c1", "/queue/orders")
    assert changes(demand, remote.advisories()) == []
    remote.unsubscribe("c2", "/queue/orders")
    assert changes(demand, remote.advisories()) == [(False, "/queue/orders", "", ())]


def test_without_conduit_a_queue_gets_one_subscription_per_remote_consumer_a_topic_still_one() -> None:
    remote, demand = Remote(), Demand("A", ttl=1, conduit=False, publisher="B")
    for who in ("c1", "c2"):
        remote.subscribe(who, "/queue/orders")
        remote.subscribe(who, "/topic/prices")
    assert [c[:2] for c in changes(demand, remote.advisories())] == [
        (True, "/queue/orders"),
        (True, "/topic/prices"),
        (True, "/queue/orders"),
    ]


def test_demand_that_came_through_the_sender_or_from_too_far_does_not_count() -> None:
    remote, demand = Remote(), Demand("A", ttl=2, conduit=True, publisher="B")
    remote.subscribe("via-a", "/queue/looped", **{"stompd.network": "A", "stompd.networkPath": "A"})
    remote.subscribe("far", "/queue/far", **{"stompd.network": "D", "stompd.networkPath": "D,C"})
    remote.subscribe("near", "/queue/near", **{"stompd.network": "C", "stompd.networkPath": "C"})
    assert changes(demand, remote.advisories()) == [(True, "/queue/near", "", ("C",))]
    assert demand.wants[0].hops == 2 and demand.wants[0].priority == -5


def test_includes_excludes_statics_browsers_temporaries_and_queue_wildcards() -> None:
    remote = Remote()
    demand = Demand(
        "A",
        ttl=1,
        conduit=True,
        publisher="B",
        excluded=[NetworkDestination("queue", "orders.secret")],
        included=[NetworkDestination("queue", "orders.>"), NetworkDestination("topic", ">")],
        static=[NetworkDestination("queue", "orders.audit")],
    )
    for destination in (
        "/queue/orders.eu",
        "/queue/orders.secret",
        "/queue/orders.audit",
        "/queue/other",
        "/queue/orders.*",
        "/temp-queue/replies",
        "/topic/anything",
    ):
        remote.subscribe("c", destination)
    remote.peers["c"].send_frame(
        "SUBSCRIBE", {"id": "b", "destination": "/queue/orders.browsed", "browser": "true"}
    )
    assert [c[1] for c in changes(demand, remote.advisories())] == ["/queue/orders.eu", "/topic/anything"]
