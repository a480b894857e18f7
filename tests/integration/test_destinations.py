"""Queues, topics, temporary and composite destinations, wildcards, message headers."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.core.base.settings import CoreSettings
from tests.clients import client, eventually
from tests.conftest import BrokerServer, start_broker
from tests.stomp_raw import RawClient

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("version", ["1.0", "1.1", "1.2"])
def test_queue_round_trip_headers(broker_server: BrokerServer, version: str) -> None:
    with client(broker_server.port, version) as c:
        c.subscribe("/queue/a", "sub-a")
        c.send(
            "/queue/a",
            "hello",
            **{"x-custom": "v1", "correlation-id": "c1", "type": "t", "persistent": "true"},
        )
        msg = c.listener.wait_messages(1)[0]
        h = msg.headers
        assert msg.body == "hello"
        assert h["destination"] == "/queue/a"
        assert h["subscription"] == "sub-a"
        assert h["message-id"]
        assert h["x-custom"] == "v1"
        assert h["correlation-id"] == "c1"
        assert h["type"] == "t"
        assert h["persistent"] == "true"
        assert "redelivered" not in h


def test_header_escaping_round_trip_1_2(broker_server: BrokerServer) -> None:
    with client(broker_server.port, "1.2") as c:
        c.subscribe("/queue/esc")
        c.send("/queue/esc", "x", **{"weird": "a:b\nc\\d"})
        assert c.listener.wait_messages(1)[0].headers["weird"] == "a:b\nc\\d"


def test_broker_headers_cannot_be_spoofed(broker_server: BrokerServer) -> None:
    raw = RawClient(broker_server.port)
    raw.connect()
    raw.send("SUBSCRIBE", {"destination": "/queue/spoof", "id": "mine", "receipt": "s"})
    raw.recv()
    raw.send(
        "SEND",
        {"destination": "/queue/spoof", "message-id": "fake", "redelivered": "true", "subscription": "other"},
        b"x",
    )
    msg = raw.recv()
    assert msg.headers["message-id"] != "fake"
    assert msg.headers["subscription"] == "mine"
    assert "redelivered" not in msg.headers


def test_binary_body_with_nuls(broker_server: BrokerServer) -> None:
    body = bytes(range(256)) * 4
    raw = RawClient(broker_server.port)
    raw.connect()
    raw.send("SUBSCRIBE", {"destination": "/queue/bin", "id": "1", "receipt": "s"})
    raw.recv()
    raw.send("SEND", {"destination": "/queue/bin", "content-length": str(len(body))}, body)
    msg = raw.recv()
    assert msg.body == body
    assert msg.headers["content-length"] == str(len(body))


def test_competing_consumers_round_robin(broker_server: BrokerServer) -> None:
    with client(broker_server.port) as a, client(broker_server.port) as b, client(broker_server.port) as p:
        a.subscribe("/queue/work")
        b.subscribe("/queue/work")
        for i in range(20):
            p.send("/queue/work", str(i))
        p.sync()
        got_a = a.listener.wait_messages(10)
        got_b = b.listener.wait_messages(10)
        assert len(a.settled()) == 10
        bodies = sorted(int(m.body) for m in got_a + got_b)
        assert bodies == list(range(20))


def test_topic_fan_out(broker_server: BrokerServer) -> None:
    with (
        client(broker_server.port) as a,
        client(broker_server.port, "1.0") as b,
        client(broker_server.port) as p,
    ):
        a.subscribe("/topic/news")
        b.subscribe("/topic/news")
        for i in range(5):
            p.send("/topic/news", str(i))
        assert a.listener.wait_messages(5) and b.listener.wait_messages(5)
        assert a.listener.bodies() == b.listener.bodies() == [str(i) for i in range(5)]


def test_topic_without_subscribers_drops(broker_server: BrokerServer) -> None:
    with client(broker_server.port) as c:
        c.send("/topic/void", "lost", sync=True)
        c.subscribe("/topic/void")
        assert c.through_mark("/topic/void") == []


def test_topic_wildcards(broker_server: BrokerServer) -> None:
    with (
        client(broker_server.port) as star,
        client(broker_server.port) as rest,
        client(broker_server.port) as p,
    ):
        star.subscribe("/topic/prices.*")
        rest.subscribe("/topic/prices.>")
        p.send("/topic/prices.eur", "1")
        p.send("/topic/prices.eur.usd", "2")
        p.send("/topic/other", "3")
        p.sync()
        assert rest.listener.wait_messages(2)
        assert [m.body for m in star.listener.wait_messages(1)] == ["1"]
        (only,) = star.settled()
        assert only.headers["destination"] == "/topic/prices.eur"
        assert sorted(rest.listener.bodies()) == ["1", "2"]


def test_composite_send_mixed_queue_and_topic(broker_server: BrokerServer) -> None:
    with client(broker_server.port) as q, client(broker_server.port) as t, client(broker_server.port) as p:
        q.subscribe("/queue/ca")
        q.subscribe("/queue/cb", "2")
        t.subscribe("/topic/ct")
        p.send("/queue/ca,cb,/topic/ct", "x")
        msgs = q.listener.wait_messages(2)
        assert sorted(m.headers["destination"] for m in msgs) == ["/queue/ca", "/queue/cb"]
        assert msgs[0].headers["message-id"] != msgs[1].headers["message-id"]
        assert t.listener.wait_messages(1)[0].headers["destination"] == "/topic/ct"


def test_composite_subscribe(broker_server: BrokerServer) -> None:
    with client(broker_server.port) as c, client(broker_server.port) as p:
        c.subscribe("/queue/m1,/queue/m2")
        p.send("/queue/m1", "1")
        p.send("/queue/m2", "2")
        assert sorted(m.body for m in c.listener.wait_messages(2)) == ["1", "2"]


def test_temp_queue_request_reply(broker_server: BrokerServer) -> None:
    with client(broker_server.port) as requester, client(broker_server.port) as server:
        server.subscribe("/queue/service")
        requester.subscribe("/temp-queue/replies")
        requester.send("/queue/service", "ping", **{"reply-to": "/temp-queue/replies"})
        request = server.listener.wait_messages(1)[0]
        reply_to = request.headers["reply-to"]
        assert reply_to.startswith("/remote-temp-queue/")
        server.send(reply_to, "pong")
        assert requester.listener.wait_messages(1)[0].body == "pong"


def test_temp_queue_is_private_and_removed_with_its_connection(broker_server: BrokerServer) -> None:
    with client(broker_server.port) as owner:
        owner.subscribe("/temp-queue/mine")
        owner.send("/queue/q", "x", **{"reply-to": "/temp-queue/mine"})
        name = next(n for n in broker_server.engine.queues if n.startswith("/remote-temp-queue/"))
        intruder = RawClient(broker_server.port)
        intruder.connect()
        intruder.send("SUBSCRIBE", {"destination": name, "id": "x"})
        assert intruder.recv().command == "ERROR"
    # Owner gone: the temp queue goes with it, and sending to it is an error.
    eventually(lambda: name not in broker_server.engine.queues)
    other = RawClient(broker_server.port)
    other.connect()
    other.send("SEND", {"destination": name}, b"late")
    error = other.recv()
    assert error.command == "ERROR"
    assert "does not exist" in error.body.decode()
    assert name not in broker_server.engine.queues


def test_temp_topic(broker_server: BrokerServer) -> None:
    with client(broker_server.port) as c:
        c.subscribe("/temp-topic/events")
        c.send("/temp-topic/events", "e")
        assert c.listener.wait_messages(1)[0].body == "e"


@pytest.mark.parametrize("prioritized", [True, False])
def test_priority_order_then_fifo_or_arrival_order(tmp_path: Path, prioritized: bool) -> None:
    """prioritizedMessages: strict priority, then FIFO; without (ActiveMQ's default), the
    order they came in, each MESSAGE with its priority."""
    thread = start_broker(tmp_path / "data", core=CoreSettings(prioritized_messages=prioritized))
    try:
        with client(thread.port) as p:
            sent = [(i, i % 10) for i in range(40)]
            for i, prio in sent:
                p.send("/queue/prio", str(i), priority=str(prio))
            p.sync()
            with client(thread.port) as c:
                c.subscribe("/queue/prio")
                got = [(int(m.body), m.headers["priority"]) for m in c.listener.wait_messages(40)]
    finally:
        thread.stop()
    expected = sorted(sent, key=lambda s: (-s[1], s[0])) if prioritized else sent
    assert got == [(i, str(prio)) for i, prio in expected]


def test_default_priority_is_4_and_reported(broker_server: BrokerServer) -> None:
    with client(broker_server.port) as c:
        c.subscribe("/queue/p4")
        c.send("/queue/p4", "x")
        assert c.listener.wait_messages(1)[0].headers["priority"] == "4"


def test_expired_messages_are_never_delivered(broker_server: BrokerServer) -> None:
    import time

    with client(broker_server.port) as p:
        now_ms = int(time.time() * 1000)
        p.send("/queue/exp", "past", expires=str(now_ms - 1000))
        p.send("/queue/exp", "short", ttl="50")
        p.send("/queue/exp", "future", expires=str(now_ms + 60_000))
        p.send("/queue/exp", "forever", expires="0")
        p.sync()
        time.sleep(0.1)  # lets the 50 ms ttl run out on the broker's (wall) clock
        with client(broker_server.port) as c:
            c.subscribe("/queue/exp")
            assert sorted(m.body for m in c.through_mark("/queue/exp")) == ["forever", "future"]
    assert broker_server.engine.queues["/queue/exp"].stats.expired == 2


def test_ttl_sets_absolute_expires_header(broker_server: BrokerServer) -> None:
    import time

    with client(broker_server.port) as c:
        c.subscribe("/queue/ttl")
        c.send("/queue/ttl", "x", ttl="60000")
        expires = int(c.listener.wait_messages(1)[0].headers["expires"])
        assert abs(expires - (time.time() * 1000 + 60000)) < 5000


def test_message_groups_stick_to_one_consumer(broker_server: BrokerServer) -> None:
    with client(broker_server.port) as a, client(broker_server.port) as b, client(broker_server.port) as p:
        a.subscribe("/queue/grp")
        b.subscribe("/queue/grp")
        for i in range(12):
            p.send("/queue/grp", f"{'xyz'[i % 3]}{i}", JMSXGroupID="xyz"[i % 3])
        p.sync()
        a.settled()
        b.settled()
        groups_a = {m.headers["JMSXGroupID"] for m in a.listener.messages}
        groups_b = {m.headers["JMSXGroupID"] for m in b.listener.messages}
        assert len(a.listener.messages) + len(b.listener.messages) == 12
        assert not groups_a & groups_b
        assert groups_a and groups_b


def test_exclusive_consumer_gets_everything(broker_server: BrokerServer) -> None:
    with client(broker_server.port) as a, client(broker_server.port) as ex, client(broker_server.port) as p:
        a.subscribe("/queue/ex")
        ex.subscribe("/queue/ex", **{"activemq.exclusive": "true"})
        for i in range(6):
            p.send("/queue/ex", str(i))
        assert len(ex.listener.wait_messages(6)) == 6
        assert a.settled() == []


def test_selector_on_queue_and_topic(broker_server: BrokerServer) -> None:
    with client(broker_server.port) as q, client(broker_server.port) as t, client(broker_server.port) as p:
        q.subscribe("/queue/sel", selector="amount > 100 AND region = 'eu'")
        t.subscribe("/topic/sel", selector="amount > 100")
        for amount, region in [(50, "eu"), (150, "eu"), (150, "us"), (1000, "eu")]:
            p.send("/queue/sel", f"{amount}{region}", amount=str(amount), region=region)
            p.send("/topic/sel", f"{amount}{region}", amount=str(amount), region=region)
        assert sorted(m.body for m in q.listener.wait_messages(2)) == ["1000eu", "150eu"]
        assert sorted(m.body for m in t.listener.wait_messages(3)) == ["1000eu", "150eu", "150us"]
    # The unmatched ones wait in the queue for another consumer.
    with client(broker_server.port) as rest:
        rest.subscribe("/queue/sel")
        assert sorted(m.body for m in rest.listener.wait_messages(2)) == ["150us", "50eu"]


def test_selector_on_jms_names(broker_server: BrokerServer) -> None:
    with client(broker_server.port) as c:
        c.subscribe("/queue/jms", selector="JMSPriority > 6 AND JMSType = 'urgent'")
        c.send("/queue/jms", "low", priority="3", type="urgent")
        c.send("/queue/jms", "high", priority="8", type="urgent")
        assert [m.body for m in c.listener.wait_messages(1)] == ["high"]


def test_bad_selector_is_an_error_that_says_where(broker_server: BrokerServer) -> None:
    raw = RawClient(broker_server.port)
    raw.connect()
    raw.send("SUBSCRIBE", {"destination": "/queue/x", "id": "1", "selector": "a = = 1", "receipt": "r"})
    error = raw.recv()
    assert error.command == "ERROR"
    assert error.headers["receipt-id"] == "r"
    assert "position" in error.body.decode()
    # Refused, and the connection goes on (as ActiveMQ's: issue 38).
    assert raw.sync() == []


def test_no_local(broker_server: BrokerServer) -> None:
    with client(broker_server.port) as a, client(broker_server.port) as b:
        a.subscribe("/topic/chat", **{"activemq.noLocal": "true"})
        a.send("/topic/chat", "own")
        b.send("/topic/chat", "other")
        assert [m.body for m in a.listener.wait_messages(1)] == ["other"]
        # Its own SEND came before the RECEIPT on the same connection.
        assert len(a.settled()) == 1
