"""Wildcard queue consumers checked on stompd and on the real ActiveMQ 5.17 (where
installed), the same frames and the same expectations (issue 37 item 2).

``SUBSCRIBE /queue/W.>`` (or ``W.*``) consumes from every queue the pattern matches,
those that exist and those made later, each MESSAGE with its own queue's
``destination``; it competes with the plain consumers of each queue, shares its prefetch
among its queues, and what it leaves unacknowledged goes back to its queue.
"""

from __future__ import annotations

import itertools

import pytest

from tests.activemq_peer import activemq as activemq
from tests.activemq_peer import broker_port as broker_port
from tests.clients import client, eventually

pytestmark = pytest.mark.integration

_names = itertools.count(1)


def unique(stem: str) -> str:
    """A name of its own for each test (ActiveMQ is shared by the module's tests)."""
    return f"wild.{stem}.{next(_names)}"


def test_a_wildcard_consumer_takes_from_queues_that_exist_and_those_made_later(broker_port: int) -> None:
    w = unique("made")
    with client(broker_port) as producer, client(broker_port) as consumer:
        producer.send(f"/queue/{w}.A", "before-a", sync=True)
        producer.send(f"/queue/{w}.B.C", "before-bc", sync=True)
        consumer.subscribe(f"/queue/{w}.>")
        producer.send(f"/queue/{w}.D", "after-d", sync=True)
        producer.send(f"/queue/{w}.B.C", "after-bc", sync=True)
        got = consumer.listener.wait_messages(4)
        assert sorted((m.body, m.headers["destination"]) for m in got) == [
            ("after-bc", f"/queue/{w}.B.C"),
            ("after-d", f"/queue/{w}.D"),
            ("before-a", f"/queue/{w}.A"),
            ("before-bc", f"/queue/{w}.B.C"),
        ]
        assert {m.headers["subscription"] for m in got} == {"1"}
        assert not consumer.listener.errors and not producer.listener.errors


def test_a_star_matches_one_element_only(broker_port: int) -> None:
    w = unique("star")
    with client(broker_port) as c:
        c.subscribe(f"/queue/{w}.*", "star")
        c.send(f"/queue/{w}.A.B", "deeper", sync=True)
        c.send(f"/queue/{w}.A", "one", sync=True)
        (frame,) = c.listener.wait_messages(1)
        assert (frame.body, frame.headers["destination"]) == ("one", f"/queue/{w}.A")
        assert [m.body for m in c.settled()] == ["one"]
        # The deeper one waits in its queue for a consumer of its own.
        c.subscribe(f"/queue/{w}.A.B", "plain")
        c.listener.wait_messages(2)
        assert [m.body for m in c.settled()] == ["one", "deeper"]


def test_its_prefetch_is_shared_among_its_queues(broker_port: int) -> None:
    w = unique("fair")
    with client(broker_port) as producer, client(broker_port) as consumer:
        consumer.subscribe(f"/queue/{w}.*", ack="client-individual", **{"activemq.prefetchSize": "1"})
        for i in range(4):
            producer.send(f"/queue/{w}.A", f"a{i}", sync=True)
            producer.send(f"/queue/{w}.B", f"b{i}", sync=True)
        for n in range(1, 9):
            got = consumer.listener.wait_messages(n)
            assert len(consumer.settled()) == n  # one at a time: the prefetch holds
            consumer.ack(got[-1])
        bodies = [m.body for m in got]
        assert sorted(bodies) == [f"a{i}" for i in range(4)] + [f"b{i}" for i in range(4)]
        # Each queue in its own order (how ActiveMQ interleaves them varies from run to run).
        assert [b for b in bodies if b[0] == "a"] == ["a0", "a1", "a2", "a3"]
        assert [b for b in bodies if b[0] == "b"] == ["b0", "b1", "b2", "b3"]


def test_it_competes_with_a_plain_consumer_of_a_queue(broker_port: int) -> None:
    w = unique("compete")
    with client(broker_port) as wild, client(broker_port) as plain, client(broker_port) as producer:
        wild.subscribe(f"/queue/{w}.*")
        plain.subscribe(f"/queue/{w}.A")
        for i in range(6):
            producer.send(f"/queue/{w}.A", f"x{i}")
        producer.sync()
        # Each has its share in flight or received: all six reach one or the other.
        eventually(lambda: len(wild.settled()) + len(plain.settled()) == 6)
        wild_got = [m.body for m in wild.settled()]
        plain_got = [m.body for m in plain.settled()]
        assert sorted(wild_got + plain_got) == [f"x{i}" for i in range(6)]
        assert wild_got and plain_got


def test_what_it_leaves_unacknowledged_goes_back_to_its_queue(broker_port: int) -> None:
    w = unique("back")
    with client(broker_port) as producer:
        with client(broker_port) as wild:
            wild.subscribe(f"/queue/{w}.>", ack="client")
            producer.send(f"/queue/{w}.A", "kept", sync=True)
            (frame,) = wild.listener.wait_messages(1)
            assert frame.headers["destination"] == f"/queue/{w}.A"
        with client(broker_port) as plain:
            plain.subscribe(f"/queue/{w}.A")
            (again,) = plain.listener.wait_messages(1)
            assert (again.body, again.headers["redelivered"]) == ("kept", "true")


def test_a_selector_applies_on_every_queue(broker_port: int) -> None:
    w = unique("selector")
    with client(broker_port) as c:
        c.subscribe(f"/queue/{w}.>", selector="colour = 'red'")
        c.send(f"/queue/{w}.A", "blue-a", colour="blue")
        c.send(f"/queue/{w}.A", "red-a", colour="red")
        c.send(f"/queue/{w}.B", "red-b", colour="red", sync=True)
        got = c.listener.wait_messages(2)
        assert sorted(m.body for m in got) == ["red-a", "red-b"]
        assert len(c.settled()) == 2


def test_a_browser_on_a_pattern_shows_every_matching_queue_then_one_end(broker_port: int) -> None:
    w = unique("browse")
    with client(broker_port) as c:
        c.send(f"/queue/{w}.A", "a1", sync=True)
        c.send(f"/queue/{w}.A", "a2", sync=True)
        c.send(f"/queue/{w}.B.C", "bc", sync=True)
        c.send(f"/queue/{w}X.D", "not-matched", sync=True)
        c.subscribe(f"/queue/{w}.>", "b", browser="true")
        got = c.listener.wait_messages(4)
        *browsed, end = got
        assert sorted((m.body, m.headers["destination"]) for m in browsed) == [
            ("a1", f"/queue/{w}.A"),
            ("a2", f"/queue/{w}.A"),
            ("bc", f"/queue/{w}.B.C"),
        ]
        assert [m.body for m in browsed if m.headers["destination"].endswith(".A")] == ["a1", "a2"]
        assert (end.headers["browser"], end.headers["destination"]) == ("end", f"/queue/{w}.>")
        assert len(c.settled()) == 4
    # Browsed, not consumed: each queue still holds them.  (Taken by a consumer of each
    # queue: ActiveMQ's pattern consumer over queues that already hold messages may take
    # none for seconds; see test_a_consumer_takes_from_the_queues_that_exist.)
    for queue, held in ((f"/queue/{w}.A", ["a1", "a2"]), (f"/queue/{w}.B.C", ["bc"])):
        with client(broker_port) as taker:
            taker.subscribe(queue)
            assert [m.body for m in taker.through_mark(queue)] == held
