"""BEGIN / COMMIT / ABORT with SEND and ACK."""

from __future__ import annotations

import pytest

from tests.clients import client, eventually
from tests.conftest import BrokerServer, on_broker
from tests.stomp_raw import RawClient

pytestmark = pytest.mark.integration


def test_committed_sends_are_delivered_aborted_never(broker_server: BrokerServer) -> None:
    with client(broker_server.port) as c, client(broker_server.port) as p:
        c.subscribe("/queue/tx")
        p.conn.begin("t1")
        p.conn.send("/queue/tx", "a", transaction="t1")
        p.conn.send("/queue/tx", "b", transaction="t1")
        p.sync()
        assert c.through_mark("/queue/tx") == []
        p.conn.commit("t1")
        assert [m.body for m in c.listener.wait_messages(2)] == ["a", "b"]
        p.conn.begin("t2")
        p.conn.send("/queue/tx", "never", transaction="t2")
        p.conn.abort("t2")
        p.sync()
        assert len(c.through_mark("/queue/tx")) == 2


def test_transactional_ack_frees_prefetch_credit(broker_server: BrokerServer) -> None:
    with client(broker_server.port) as p:
        for i in range(3):
            p.send("/queue/txc", str(i))
    with client(broker_server.port) as c:
        c.subscribe("/queue/txc", ack="client-individual", **{"activemq.prefetchSize": "1"})
        first = c.listener.wait_messages(1)[0]
        c.conn.begin("t")
        c.ack(first, transaction="t")
        assert c.listener.wait_messages(2)[1].body == "1"
        c.conn.commit("t")


def test_connection_closing_mid_transaction_aborts_it(broker_server: BrokerServer) -> None:
    with client(broker_server.port) as c:
        c.subscribe("/queue/txclose")
        raw = RawClient(broker_server.port)
        raw.connect()
        raw.send("BEGIN", {"transaction": "t"})
        raw.send("SEND", {"destination": "/queue/txclose", "transaction": "t", "receipt": "s"}, b"x")
        assert raw.recv().command == "RECEIPT"
        raw.close()
        # Once the broker has seen the connection go (and so ended its transaction), a
        # message it committed would come before the mark.
        eventually(lambda: len(on_broker(broker_server.thread, lambda ops: ops.connections.every())) == 1)
        assert c.through_mark("/queue/txclose") == []


def test_unknown_transaction_is_an_error(broker_server: BrokerServer) -> None:
    raw = RawClient(broker_server.port)
    raw.connect()
    raw.send("COMMIT", {"transaction": "nope"})
    error = raw.recv()
    assert error.command == "ERROR"
    assert "nope" in error.body.decode()


def test_begin_twice_is_an_error(broker_server: BrokerServer) -> None:
    raw = RawClient(broker_server.port)
    raw.connect()
    raw.send("BEGIN", {"transaction": "t"})
    raw.send("BEGIN", {"transaction": "t"})
    assert raw.recv().command == "ERROR"
