"""The core without sockets: the same rules the integration tests check, at unit speed."""

from __future__ import annotations

import pytest

from broker.core.base.errors import InvalidDestination, TransactionError, UnknownMessage
from protocol.errors import MissingHeader, UnexpectedFrame
from tests.broker.harness import Peer, new_engine


def test_send_before_connect_is_rejected() -> None:
    engine = new_engine()
    from tests.broker.harness import ListOutbox

    session = engine.open_session(ListOutbox())
    from protocol.frames import Frame

    with pytest.raises(UnexpectedFrame):
        engine.handle(session, Frame("SEND", {"destination": "/queue/a"}))


def test_round_robin_over_ready_consumers() -> None:
    engine = new_engine()
    a, b, p = Peer(engine), Peer(engine), Peer(engine)
    a.send_frame("SUBSCRIBE", {"destination": "/queue/q", "id": "1"})
    b.send_frame("SUBSCRIBE", {"destination": "/queue/q", "id": "1"})
    for i in range(6):
        p.send_frame("SEND", {"destination": "/queue/q"}, str(i).encode())
    assert [f.body for f in a.received()] == [b"0", b"2", b"4"]
    assert [f.body for f in b.received()] == [b"1", b"3", b"5"]


def test_unwritable_session_is_skipped_and_resumed() -> None:
    engine = new_engine()
    a, p = Peer(engine), Peer(engine)
    a.send_frame("SUBSCRIBE", {"destination": "/queue/q", "id": "1"})
    engine.set_writable(a.session, False)
    for i in range(3):
        p.send_frame("SEND", {"destination": "/queue/q"}, str(i).encode())
    assert a.received() == []
    assert engine.queues["/queue/q"].cursor.count == 3
    engine.set_writable(a.session, True)
    assert [f.body for f in a.received()] == [b"0", b"1", b"2"]


def test_expiry_uses_the_engine_clock() -> None:
    engine = new_engine(ms=10_000)
    p, c = Peer(engine), Peer(engine)
    p.send_frame("SEND", {"destination": "/queue/e", "ttl": "500"}, b"x")
    engine.clock.ms = 10_600
    c.send_frame("SUBSCRIBE", {"destination": "/queue/e", "id": "1"})
    assert c.received() == []
    assert engine.queues["/queue/e"].stats.expired == 1


def test_close_session_requeues_inflight_and_aborts_transactions() -> None:
    engine = new_engine()
    c, p, other = Peer(engine), Peer(engine), Peer(engine)
    c.send_frame("SUBSCRIBE", {"destination": "/queue/q", "id": "1", "ack": "client"})
    p.send_frame("SEND", {"destination": "/queue/q"}, b"m")
    assert len(c.received()) == 1
    p.send_frame("BEGIN", {"transaction": "t"})
    p.send_frame("SEND", {"destination": "/queue/q", "transaction": "t"}, b"never")
    engine.close_session(p.session)
    engine.close_session(c.session)
    other.send_frame("SUBSCRIBE", {"destination": "/queue/q", "id": "1"})
    (frame,) = other.received()
    assert frame.body == b"m"
    assert frame.headers["redelivered"] == "true"


def test_errors_carry_the_receipt() -> None:
    engine = new_engine()
    p = Peer(engine)
    with pytest.raises(MissingHeader) as info:
        p.send_frame("SEND", {"receipt": "77"})
    assert info.value.receipt_id == "77"
    with pytest.raises(TransactionError):
        p.send_frame("COMMIT", {"transaction": "x"})
    with pytest.raises(UnknownMessage):
        p.send_frame("ACK", {"id": "1-1"})
    with pytest.raises(InvalidDestination):
        p.send_frame("SEND", {"destination": "/queue/"})


def test_exclusive_consumer_failover() -> None:
    engine = new_engine()
    a, b, p = Peer(engine), Peer(engine), Peer(engine)
    a.send_frame("SUBSCRIBE", {"destination": "/queue/x", "id": "1", "activemq.exclusive": "true"})
    b.send_frame("SUBSCRIBE", {"destination": "/queue/x", "id": "1", "activemq.exclusive": "true"})
    p.send_frame("SEND", {"destination": "/queue/x"}, b"1")
    assert len(a.received()) == 1 and b.received() == []
    a.send_frame("UNSUBSCRIBE", {"id": "1"})
    p.send_frame("SEND", {"destination": "/queue/x"}, b"2")
    assert [f.body for f in b.received()] == [b"2"]


def test_group_reassigned_when_owner_leaves() -> None:
    engine = new_engine()
    a, b, p = Peer(engine), Peer(engine), Peer(engine)
    a.send_frame("SUBSCRIBE", {"destination": "/queue/g", "id": "1"})
    b.send_frame("SUBSCRIBE", {"destination": "/queue/g", "id": "1"})
    for _ in range(4):
        p.send_frame("SEND", {"destination": "/queue/g", "JMSXGroupID": "G"}, b"g")
    assert len(a.received()) == 4 and b.received() == []
    a.send_frame("UNSUBSCRIBE", {"id": "1"})
    p.send_frame("SEND", {"destination": "/queue/g", "JMSXGroupID": "G"}, b"g")
    assert len(b.received()) == 1


@pytest.mark.parametrize(
    "destination",
    ["/topic/>", "/topic/A.*", "/queue/>", "/queue/*", "/queue/A.>.B", "/queue/ok,/topic/>", "/temp-queue/*"],
)
def test_a_send_to_a_wildcard_is_refused_and_makes_nothing(destination: str) -> None:
    engine = new_engine()
    watcher, producer = Peer(engine), Peer(engine)
    watcher.send_frame("SUBSCRIBE", {"destination": "/topic/>", "id": "1"})
    # What it gets at once is the advisory of its own subscription (ActiveMQ's, too).
    assert all("ActiveMQ.Advisory." in m.headers["destination"] for m in watcher.messages())
    before = (set(engine.queues), set(engine.router.topics))
    for transaction in (None, "tx"):
        headers = {"destination": destination, "receipt": "r"}
        if transaction is not None:
            producer.send_frame("BEGIN", {"transaction": transaction})
            headers["transaction"] = transaction
        with pytest.raises(InvalidDestination, match="'\\*' and '>' are wildcards, for subscribing"):
            producer.send_frame("SEND", headers, b"x")
    assert (set(engine.queues), set(engine.router.topics)) == before
    assert watcher.messages() == []
    assert not producer.session.temp_queues
