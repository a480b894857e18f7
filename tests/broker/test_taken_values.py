"""Values ActiveMQ 5.17 takes where stompd used to refuse them (issue 38 item 3), in the
core: ``priority`` past 0-9 clamped (``setJMSPriority``), an unknown ``ack`` mode read as
``auto`` (ProtocolConverter), ``activemq.prefetchSize`` set as ``IntrospectionSupport``
sets it: 0 or less a consumer that is sent nothing, what is not a Java int ignored.
tests/integration/test_refusals.py checks the same over TCP on both brokers."""

from __future__ import annotations

import pytest

from tests.broker.harness import Peer, destination_info, new_engine


@pytest.mark.parametrize(
    ("sent", "kept"), [("10", 9), ("12", 9), ("99999999999", 9), ("-1", 0), ("-7", 0), ("5", 5)]
)
def test_priority_is_clamped_to_0_9(sent: str, kept: int) -> None:
    engine = new_engine(prioritized_messages=True)
    producer = Peer(engine)
    producer.send_frame("SEND", {"destination": "/queue/p", "priority": sent}, b"x")
    producer.send_frame("SEND", {"destination": "/queue/p", "priority": "4"}, b"four")
    consumer = Peer(engine)
    consumer.send_frame("SUBSCRIBE", {"destination": "/queue/p", "id": "s"})
    got = [(m.body, m.headers["priority"]) for m in consumer.messages()]
    # Kept at the clamped level, so it goes before or after the priority-4 message.
    expected = [(b"x", str(kept)), (b"four", "4")]
    assert got == (expected if kept >= 4 else expected[::-1])


@pytest.mark.parametrize("ack", ["bogus", "Client", ""])
def test_an_unknown_ack_mode_is_auto(ack: str) -> None:
    engine = new_engine()
    consumer = Peer(engine)
    consumer.send_frame("SUBSCRIBE", {"destination": "/queue/a", "id": "s", "ack": ack})
    Peer(engine).send_frame("SEND", {"destination": "/queue/a"}, b"m")
    (message,) = consumer.messages()
    assert "ack" not in message.headers
    info = destination_info(engine, "/queue/a")
    assert (info.in_flight, info.dequeued) == (0, 1)


@pytest.mark.parametrize("ack", ["auto", "client-individual"])
@pytest.mark.parametrize("prefetch", ["0", "-1"])
@pytest.mark.parametrize("destination", ["/queue/idle", "/topic/idle"])
def test_a_prefetch_of_0_or_less_is_sent_nothing(ack: str, prefetch: str, destination: str) -> None:
    engine = new_engine()
    idle = Peer(engine)
    idle.send_frame(
        "SUBSCRIBE",
        {
            "destination": destination,
            "id": "s",
            "ack": ack,
            "activemq.prefetchSize": prefetch,
            "receipt": "r",
        },
    )
    assert [f.command for f in idle.received()] == ["RECEIPT"]
    producer = Peer(engine)
    for i in range(3):
        producer.send_frame("SEND", {"destination": destination}, b"%d" % i)
    assert idle.messages() == []
    if destination.startswith("/queue/"):
        # They wait in the queue for a consumer that takes them.
        assert destination_info(engine, destination).depth == 3
        other = Peer(engine)
        other.send_frame("SUBSCRIBE", {"destination": destination, "id": "o"})
        assert [m.body for m in other.messages()] == [b"0", b"1", b"2"]
        assert idle.messages() == []


@pytest.mark.parametrize("prefetch", ["abc", "1.5", str(1 << 31)])
def test_a_prefetch_that_is_not_a_java_int_is_ignored(prefetch: str) -> None:
    engine = new_engine()
    consumer = Peer(engine)
    consumer.send_frame(
        "SUBSCRIBE",
        {"destination": "/queue/d", "id": "s", "ack": "client-individual", "activemq.prefetchSize": prefetch},
    )
    producer = Peer(engine)
    for i in range(3):
        producer.send_frame("SEND", {"destination": "/queue/d"}, b"%d" % i)
    # The default prefetch (1000): all three are in flight.
    assert len(consumer.messages()) == 3
