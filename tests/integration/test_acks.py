"""Ack modes, NACK, prefetch, redelivery on unsubscribe and disconnect."""

from __future__ import annotations

import pytest

from tests.clients import client
from tests.conftest import BrokerServer
from tests.stomp_raw import RawClient

pytestmark = pytest.mark.integration

VERSIONS = ["1.0", "1.1", "1.2"]


def fill(port: int, destination: str, n: int) -> None:
    with client(port) as p:
        for i in range(n):
            p.send(destination, str(i))
        p.sync()


@pytest.mark.parametrize("version", VERSIONS)
def test_client_ack_is_cumulative(broker_server: BrokerServer, version: str) -> None:
    fill(broker_server.port, "/queue/cum", 5)
    with client(broker_server.port, version) as c:
        c.subscribe("/queue/cum", ack="client")
        msgs = c.listener.wait_messages(5)
        c.ack(msgs[2])  # acks 0, 1, 2
        c.sync()
    # 3 and 4 were never acked: they come back, redelivered, in order.
    with client(broker_server.port) as c:
        c.subscribe("/queue/cum")
        again = c.listener.wait_messages(2)
        assert [m.body for m in again] == ["3", "4"]
        assert all(m.headers["redelivered"] == "true" for m in again)
        assert len(c.through_mark("/queue/cum")) == 2


@pytest.mark.parametrize("version", VERSIONS)
def test_client_individual_ack(broker_server: BrokerServer, version: str) -> None:
    fill(broker_server.port, "/queue/ind", 4)
    with client(broker_server.port, version) as c:
        c.subscribe("/queue/ind", ack="client-individual")
        msgs = c.listener.wait_messages(4)
        c.ack(msgs[1])
        c.ack(msgs[3])
        c.sync()
    with client(broker_server.port) as c:
        c.subscribe("/queue/ind")
        assert [m.body for m in c.listener.wait_messages(2)] == ["0", "2"]


def test_ack_header_present_only_for_client_modes_in_1_2(broker_server: BrokerServer) -> None:
    fill(broker_server.port, "/queue/ackh", 1)
    fill(broker_server.port, "/queue/ackh2", 1)
    with client(broker_server.port) as c:
        c.subscribe("/queue/ackh", "1", ack="client")
        c.subscribe("/queue/ackh2", "2")
        msgs = {m.headers["subscription"]: m for m in c.listener.wait_messages(2)}
        assert "ack" in msgs["1"].headers
        assert "ack" not in msgs["2"].headers


@pytest.mark.parametrize("version", ["1.1", "1.2"])
def test_nack_redelivers(broker_server: BrokerServer, version: str) -> None:
    fill(broker_server.port, "/queue/nack", 2)
    with client(broker_server.port, version) as c:
        c.subscribe("/queue/nack", ack="client-individual")
        first, second = c.listener.wait_messages(2)
        c.nack(first)
        again = c.listener.wait_messages(3)[2]
        assert again.body == "0"
        assert again.headers["redelivered"] == "true"
        assert again.headers["message-id"] == first.headers["message-id"]
        c.ack(again)
        c.ack(second)
        c.sync()
    assert broker_server.engine.queues["/queue/nack"].cursor.count == 0


def test_nack_on_topic_redelivers_to_that_subscriber_only(broker_server: BrokerServer) -> None:
    with client(broker_server.port) as a, client(broker_server.port) as b:
        a.subscribe("/topic/tn", ack="client-individual")
        b.subscribe("/topic/tn", ack="client-individual")
        a.send("/topic/tn", "x")
        msg = a.listener.wait_messages(1)[0]
        b.listener.wait_messages(1)
        a.nack(msg)
        again = a.listener.wait_messages(2)[1]
        assert again.headers["redelivered"] == "true"
        # A copy given back to b would come before the mark.
        (only,) = b.through_mark("/topic/tn")
        assert "redelivered" not in only.headers


def test_unsubscribe_returns_unacked_in_order(broker_server: BrokerServer) -> None:
    fill(broker_server.port, "/queue/uns", 6)
    with client(broker_server.port) as c, client(broker_server.port) as other:
        c.subscribe("/queue/uns", "s", ack="client-individual")
        c.listener.wait_messages(6)
        c.conn.unsubscribe("s")
        c.sync()
        other.subscribe("/queue/uns")
        got = other.listener.wait_messages(6)
        assert [m.body for m in got] == [str(i) for i in range(6)]
        assert all(m.headers["redelivered"] == "true" for m in got)


def test_prefetch_bounds_inflight(broker_server: BrokerServer) -> None:
    fill(broker_server.port, "/queue/pf", 10)
    with client(broker_server.port) as c:
        c.subscribe("/queue/pf", ack="client-individual", **{"activemq.prefetchSize": "3"})
        first = c.listener.wait_messages(3)
        # The backlog is in memory: what SUBSCRIBE (or an ACK) dispatches is written
        # before the next RECEIPT on the connection.  (A mark would wait behind the
        # backlog, for credit that never comes.)
        assert len(c.settled()) == 3
        c.ack(first[0])
        assert len(c.settled()) == 4


def test_prefetch_spreads_work_across_consumers(broker_server: BrokerServer) -> None:
    fill(broker_server.port, "/queue/pf2", 4)
    with client(broker_server.port) as a, client(broker_server.port) as b:
        a.subscribe("/queue/pf2", ack="client", **{"activemq.prefetchSize": "1"})
        a.listener.wait_messages(1)
        b.subscribe("/queue/pf2", ack="client", **{"activemq.prefetchSize": "1"})
        assert b.listener.wait_messages(1)[0].body == "1"


def test_ack_of_unknown_message_is_an_error(broker_server: BrokerServer) -> None:
    raw = RawClient(broker_server.port)
    raw.connect()
    raw.send("ACK", {"id": "999-999", "receipt": "a"})
    error = raw.recv()
    assert error.command == "ERROR"
    assert error.headers["receipt-id"] == "a"
    # Refused, and the connection goes on (as ActiveMQ's: issue 38).
    assert raw.sync() == []


def test_ack_from_1_0_without_subscription_header(broker_server: BrokerServer) -> None:
    fill(broker_server.port, "/queue/a10", 1)
    raw = RawClient(broker_server.port)
    raw.connect("1.0")
    raw.send("SUBSCRIBE", {"destination": "/queue/a10", "ack": "client"})
    msg = raw.recv()
    raw.send("ACK", {"message-id": msg.headers["message-id"], "receipt": "ok"})
    assert raw.recv().headers["receipt-id"] == "ok"


def test_nack_past_the_redelivery_limit_dead_letters(broker_server: BrokerServer) -> None:
    with client(broker_server.port) as p:
        # Persistent: a non-persistent dead letter is dropped (processNonPersistent=false).
        p.send("/queue/poison", "0", sync=True, persistent="true")
    with client(broker_server.port) as c:
        c.subscribe("/queue/poison", ack="client-individual")
        for attempt in range(1, 8):
            msg = c.listener.wait_messages(attempt)[-1]
            assert msg.body == "0"
            c.nack(msg)
        # 1 delivery + 6 redeliveries; a 7th would come before the mark.
        assert len(c.through_mark("/queue/poison", ack=True)) == 7
    with client(broker_server.port) as d:
        d.subscribe("/queue/ActiveMQ.DLQ")
        dead = d.listener.wait_messages(1)[0]
        assert dead.body == "0"
        assert dead.headers["original-destination"] == "/queue/poison"
        assert "Delivery[7]" in dead.headers["dlqDeliveryFailureCause"]
    assert broker_server.engine.queues["/queue/poison"].cursor.count == 0
