"""Virtual topics, composite destinations and mirrored queues (issue 37 items 3 and 4),
over TCP with stomp.py, each case run on stompd and on the real ActiveMQ 5.17 where it
is installed: the same frames, the same expectations.

With no ``<destinationInterceptors>`` (``broker_port``: stompd's defaults, ActiveMQ's
test file) every topic ``VirtualTopic.>`` is virtual: a SEND to it is copied to each
queue ``Consumer.<group>.VirtualTopic.<name>`` that exists, each group's consumers share
their queue's copy, and the queue is kept while they are away.  The other cases run on a
file of their own (``INTERCEPTORS``), on both brokers.
"""

from __future__ import annotations

import contextlib
import itertools
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from stomp.utils import Frame as StompPyFrame

from tests.activemq_peer import ActiveMQ, needs_activemq, running_activemq
from tests.activemq_peer import activemq as activemq
from tests.activemq_peer import broker_port as broker_port
from tests.broker_thread import BrokerThread, configured_broker
from tests.clients import Client, client

pytestmark = pytest.mark.integration

_names = itertools.count(1)

INTERCEPTORS = """
<destinationInterceptors>
  <virtualDestinationInterceptor><virtualDestinations>
    <virtualTopic name="VirtualTopic.>"/>
    <virtualTopic name="Aware.>" selectorAware="true"/>
    <virtualTopic name="Plain.>" prefix="Group.*." setOriginalDestination="false"/>
    <compositeQueue name="ORDERS.{tag}">
      <forwardTo>
        <queue physicalName="ORDERS.AUDIT.{tag}"/>
        <topic physicalName="ORDERS.FEED.{tag}"/>
        <filteredDestination selector="region = 'EU'" queue="ORDERS.EU.{tag}"/>
      </forwardTo>
    </compositeQueue>
    <compositeQueue name="KEPT.{tag}" forwardOnly="false">
      <forwardTo><queue physicalName="KEPT.COPY.{tag}"/></forwardTo>
    </compositeQueue>
    <compositeTopic name="NEWS.{tag}">
      <forwardTo><topic physicalName="VirtualTopic.NEWS.{tag}"/></forwardTo>
    </compositeTopic>
  </virtualDestinations></virtualDestinationInterceptor>
  <mirroredQueue/>
</destinationInterceptors>
"""
#: Names made of it are the module's own on the shared ActiveMQ and stompd alike.
TAG = "t"


def name(prefix: str) -> str:
    return f"{prefix}{next(_names)}"


@pytest.fixture(scope="module")
def configured_activemq() -> Iterator[ActiveMQ]:
    with running_activemq(INTERCEPTORS.format(tag=TAG)) as broker:
        yield broker


def start_configured(tmp_path: Path) -> BrokerThread:
    return configured_broker(tmp_path, INTERCEPTORS.format(tag=TAG))


@pytest.fixture(params=["stompd", pytest.param("activemq", marks=needs_activemq)])
def configured_port(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[int]:
    """The STOMP port of a broker running ``INTERCEPTORS``: stompd's or ActiveMQ's."""
    if request.param == "activemq":
        yield request.getfixturevalue("configured_activemq").port
        return
    thread = start_configured(tmp_path)
    try:
        yield thread.port
    finally:
        thread.stop()


def bodies(frames: list[StompPyFrame]) -> list[str]:
    return [frame.body for frame in frames]


@contextlib.contextmanager
def consumers(port: int, *destinations: str, **headers: str) -> Iterator[list[Client]]:
    with contextlib.ExitStack() as stack:
        clients = []
        for destination in destinations:
            c = stack.enter_context(client(port))
            c.subscribe(destination, **headers)
            clients.append(c)
        yield clients


def through(c: Client, destination: str, persistent: bool = False) -> list[str]:
    return bodies(c.through_mark(destination, persistent=persistent))


# -- 3: virtual topics, on by default -------------------------------------------


def test_each_consumer_group_gets_its_own_copy_shared_by_its_consumers(broker_port: int) -> None:
    topic = name("/topic/VirtualTopic.Orders")
    bare = topic.removeprefix("/topic/")
    group_a = f"/queue/Consumer.A.{bare}"
    group_b = f"/queue/Consumer.B.{bare}"
    with consumers(broker_port, group_a, group_a, group_b, topic) as (a1, a2, b, plain):
        with client(broker_port) as producer:
            for i in range(6):
                producer.send(topic, f"m{i}", sync=True)
        got_b = b.listener.wait_messages(6)
        got_plain = plain.listener.wait_messages(6)
        deadline = time.monotonic() + 5
        while len(a1.listener.messages) + len(a2.listener.messages) < 6 and time.monotonic() < deadline:
            time.sleep(0.02)
        shared = bodies(a1.settled()) + bodies(a2.settled())
    # Shared: each message once to one of the group's consumers.
    assert sorted(shared) == [f"m{i}" for i in range(6)]
    assert bodies(got_b) == [f"m{i}" for i in range(6)]
    assert bodies(got_plain) == [f"m{i}" for i in range(6)]
    frame = got_b[0]
    assert frame.headers["destination"] == group_b
    assert frame.headers["original-destination"] == topic
    assert got_plain[0].headers["destination"] == topic


def test_a_copy_keeps_the_message_persistence_priority_expiry_and_headers(broker_port: int) -> None:
    topic = name("/topic/VirtualTopic.Keep")
    queue = f"/queue/Consumer.A.{topic.removeprefix('/topic/')}"
    expires = str(int(time.time() * 1000) + 600_000)
    with consumers(broker_port, queue) as (c,), client(broker_port) as producer:
        producer.send(
            topic, "x", sync=True, persistent="true", priority="7", expires=expires, color="red", type="t1"
        )
        headers = c.listener.wait_messages(1)[0].headers
    assert headers["persistent"] == "true"
    assert headers["priority"] == "7"
    assert headers["expires"] == expires
    assert headers["color"] == "red"
    assert headers["type"] == "t1"


def test_the_consumer_queue_is_made_by_its_first_consumer_and_kept_while_it_is_away(
    broker_port: int,
) -> None:
    topic = name("/topic/VirtualTopic.Away")
    queue = f"/queue/Consumer.A.{topic.removeprefix('/topic/')}"
    with client(broker_port) as producer:
        # No consumer queue yet: this one goes to the topic's subscribers (none) only.
        producer.send(topic, "before", sync=True, persistent="true")
        with client(broker_port) as first:
            first.subscribe(queue)
        producer.send(topic, "away", sync=True, persistent="true")
        with client(broker_port) as back:
            back.subscribe(queue)
            assert through(back, queue, persistent=True) == ["away"]


# -- 3: the file's own virtual topics ---------------------------------------------


def test_a_selector_aware_virtual_topic_copies_only_where_a_consumer_takes_it(
    configured_port: int,
) -> None:
    topic = name("/topic/Aware.T")
    bare = topic.removeprefix("/topic/")
    red, blue = f"/queue/Consumer.R.{bare}", f"/queue/Consumer.B.{bare}"
    with client(configured_port) as producer:
        with (
            consumers(configured_port, red, selector="color = 'red'") as (r,),
            consumers(configured_port, blue, selector="color = 'blue'") as (b,),
        ):
            producer.send(topic, "red", sync=True, color="red")
            producer.send(topic, "blue", sync=True, color="blue")
            assert bodies(r.listener.wait_messages(1)) == ["red"]
            assert bodies(b.listener.wait_messages(1)) == ["blue"]
        # Neither queue was given the copy its consumer's selector would have left there.
        for queue in (red, blue):
            with client(configured_port) as later:
                later.subscribe(queue)
                assert through(later, queue) == []


def test_prefix_and_set_original_destination_false(configured_port: int) -> None:
    topic = name("/topic/Plain.T")
    queue = f"/queue/Group.A.{topic.removeprefix('/topic/')}"
    with consumers(configured_port, queue) as (c,), client(configured_port) as producer:
        producer.send(topic, "x", sync=True)
        headers = c.listener.wait_messages(1)[0].headers
    # ActiveMQ's MESSAGE says the queue whatever setOriginalDestination is: false only
    # leaves out the topic it came from.
    assert headers["destination"] == queue
    assert "original-destination" not in headers


# -- 4: composite destinations and mirrored queues --------------------------------


def test_a_composite_queue_forwards_to_queues_topics_and_filtered_destinations(
    configured_port: int,
) -> None:
    composite = f"/queue/ORDERS.{TAG}"
    audit, eu, feed = f"/queue/ORDERS.AUDIT.{TAG}", f"/queue/ORDERS.EU.{TAG}", f"/topic/ORDERS.FEED.{TAG}"
    with consumers(configured_port, feed) as (f,), client(configured_port) as producer:
        producer.send(composite, "eu", sync=True, region="EU", persistent="true")
        producer.send(composite, "us", sync=True, region="US")
        fed = f.listener.wait_messages(2)
    assert bodies(fed) == ["eu", "us"]
    assert fed[0].headers["original-destination"] == composite
    with consumers(configured_port, audit, eu, composite) as (a, e, own):
        got = a.listener.wait_messages(2)
        assert bodies(got) == ["eu", "us"]
        assert got[0].headers["destination"] == audit
        assert got[0].headers["original-destination"] == composite
        assert got[0].headers["persistent"] == "true"
        assert through(e, eu, persistent=True) == ["eu"]
        # forwardOnly (the default): the composite's own queue holds nothing (a mark
        # sent to it would be forwarded too).
        assert own.settled() == []


def test_a_composite_with_forward_only_false_keeps_the_message_too(configured_port: int) -> None:
    composite, copy = f"/queue/KEPT.{TAG}", f"/queue/KEPT.COPY.{TAG}"
    with client(configured_port) as producer:
        producer.send(composite, "k", sync=True)
    with consumers(configured_port, composite, copy) as (own, c):
        assert through(c, copy) == ["k"]
        # (This mark is forwarded to the copy's queue as well.)
        assert through(own, composite) == ["k"]


def test_a_composite_topic_forwards_through_a_virtual_topic(configured_port: int) -> None:
    composite = f"/topic/NEWS.{TAG}"
    queue = f"/queue/Consumer.A.VirtualTopic.NEWS.{TAG}"
    with consumers(configured_port, queue) as (c,), client(configured_port) as producer:
        producer.send(composite, "n", sync=True)
        frame = c.listener.wait_messages(1)[0]
        c.settled()
    assert frame.body == "n"
    assert frame.headers["destination"] == queue
    assert frame.headers["original-destination"] == f"/topic/VirtualTopic.NEWS.{TAG}"


def test_a_mirrored_queue_publishes_on_its_mirror_topic(configured_port: int) -> None:
    queue = name(f"/queue/MIRRORED.{TAG}.")
    mirror = f"/topic/VirtualTopic.Mirror.{queue.removeprefix('/queue/')}"
    with consumers(configured_port, mirror) as (m,), client(configured_port) as producer:
        producer.send(queue, "q", sync=True, color="red")
        frame = m.listener.wait_messages(1)[0]
    assert frame.body == "q"
    assert frame.headers["destination"] == mirror
    assert frame.headers["color"] == "red"
    with consumers(configured_port, queue) as (c,):
        assert through(c, queue) == ["q"]
