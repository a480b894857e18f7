"""What the core does for networks of brokers, driven frame by frame (no sockets):
consumer advisories, consumer priority and network subscriptions (standby, the path and
TTL filter), and the audit that drops a forwarded message this broker already has."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from broker.core.base import bridging
from broker.core.base.audit import ProducerAudit
from broker.core.base.bridging import ADVISORY_HEADER, ID_HEADER, PATH_HEADER, REDELIVERED_HEADER
from broker.core.base.errors import BrokerError
from broker.core.base.message import NETWORK_HEADERS, NETWORK_PREFIX, NOT_THE_SENDERS
from broker.network.demand import Demand
from protocol.frames import Frame
from tests.broker.harness import ListOutbox, Peer, new_engine

ADVISORY_Q = "/topic/ActiveMQ.Advisory.Consumer.Queue."
#: A CONNECT that says it is broker A's network bridge (no users: anyone may).
BRIDGE_OF_A = {"stompd.network": "A"}


def advisories(peer: Peer) -> list[tuple[str, dict[str, object], dict[str, str]]]:
    return [
        (frame.headers["destination"], json.loads(frame.body), frame.headers)
        for frame in peer.messages()
        if frame.headers["destination"].startswith("/topic/ActiveMQ.Advisory.")
    ]


# -- advisories -----------------------------------------------------------------------


def test_a_consumer_starting_and_ending_is_told_on_its_queues_advisory_topic() -> None:
    engine = new_engine(broker_name="A", broker_url="stomp://127.0.0.1:61613")
    watcher, consumer = Peer(engine), Peer(engine)
    watcher.send_frame("SUBSCRIBE", {"id": "w", "destination": ADVISORY_Q + ">"})
    consumer.send_frame("SUBSCRIBE", {"id": "c", "destination": "/queue/orders", "selector": "n > 1"})
    consumer.send_frame("UNSUBSCRIBE", {"id": "c"})
    (started, ended) = advisories(watcher)
    destination, body, headers = started
    assert destination == ADVISORY_Q + "orders"
    assert headers["type"] == "Advisory"
    assert headers["consumerCount"] == "1"
    assert headers["originBrokerName"] == "A"
    assert headers["originBrokerURL"] == "stomp://127.0.0.1:61613"
    assert headers["transformation"] == "jms-advisory-json"
    info = body["ConsumerInfo"]
    assert isinstance(info, dict)
    # ActiveMQ 5.17's shape: ``string``, the STOMP selector's prefix, session -1.
    assert info["destination"] == {"@class": "ActiveMQQueue", "string": "orders", "null": ""}
    assert info["selector"] == "convert_string_expressions:n > 1"
    assert "brokerPath" not in info
    assert info["consumerId"] == {"connectionId": consumer.session.id, "sessionId": -1, "value": 1}
    destination, body, headers = ended
    assert headers["consumerCount"] == "0"
    assert body["RemoveInfo"]["objectId"] == {"@class": "ConsumerId", **info["consumerId"]}  # type: ignore[index, dict-item]


def test_a_new_advisory_subscriber_is_told_of_the_consumers_there_are_already_and_no_one_else_is() -> None:
    engine = new_engine()
    early, late, consumer = Peer(engine), Peer(engine), Peer(engine)
    early.send_frame("SUBSCRIBE", {"id": "w", "destination": ADVISORY_Q + ">"})
    consumer.send_frame("SUBSCRIBE", {"id": "c1", "destination": "/queue/a"})
    consumer.send_frame("SUBSCRIBE", {"id": "c2", "destination": "/topic/t"})
    assert len(advisories(early)) == 1
    late.send_frame("SUBSCRIBE", {"id": "w", "destination": "/topic/ActiveMQ.Advisory.Consumer.>"})
    replayed = sorted(destination for destination, _, _ in advisories(late))
    assert replayed == [ADVISORY_Q + "a", "/topic/ActiveMQ.Advisory.Consumer.Topic.t"]
    # The replay is the late one's alone.
    assert advisories(early) == []


def test_advisory_subscribers_and_temporary_destinations_are_not_advised() -> None:
    engine = new_engine()
    watcher, other = Peer(engine), Peer(engine)
    watcher.send_frame("SUBSCRIBE", {"id": "w", "destination": "/topic/ActiveMQ.Advisory.>"})
    other.send_frame("SUBSCRIBE", {"id": "o", "destination": "/topic/ActiveMQ.Advisory.Consumer.>"})
    other.send_frame("SUBSCRIBE", {"id": "t", "destination": "/temp-queue/replies"})
    # The temporary queue is told of as made (ActiveMQ.Advisory.TempQueue), and this is
    # the master (MasterBroker): no consumer advisory.
    told = [destination for destination, _, _ in advisories(watcher)]
    assert told == ["/topic/ActiveMQ.Advisory.MasterBroker", "/topic/ActiveMQ.Advisory.TempQueue"]


def test_advisory_support_off_publishes_none() -> None:
    engine = new_engine(advisory_support=False)
    watcher, consumer = Peer(engine), Peer(engine)
    watcher.send_frame("SUBSCRIBE", {"id": "w", "destination": ADVISORY_Q + ">"})
    consumer.send_frame("SUBSCRIBE", {"id": "c", "destination": "/queue/orders"})
    assert advisories(watcher) == []


def test_a_network_subscription_is_advised_with_the_path_its_demand_came_along() -> None:
    engine = new_engine()
    watcher, bridge = Peer(engine), Peer(engine)
    watcher.send_frame("SUBSCRIBE", {"id": "w", "destination": ADVISORY_Q + ">"})
    bridge.send_frame(
        "SUBSCRIBE",
        {"id": "n", "destination": "/queue/q", "stompd.network": "C", "stompd.networkPath": "D,C"},
    )
    ((_, body, _),) = advisories(watcher)
    info = body["ConsumerInfo"]
    assert info["brokerPath"] == [{"value": "D"}, {"value": "C"}]  # type: ignore[index]
    assert info["networkSubscription"] is True  # type: ignore[index]


# -- consumer priority and network subscriptions -------------------------------------------


def send(producer: Peer, n: int, destination: str = "/queue/q", **headers: str) -> None:
    for i in range(n):
        producer.send_frame("SEND", {"destination": destination, **headers}, str(i).encode())


def test_a_queue_hands_messages_to_its_highest_priority_consumers_while_they_have_credit() -> None:
    engine = new_engine()
    high, low, producer = Peer(engine), Peer(engine), Peer(engine)
    low.send_frame(
        "SUBSCRIBE", {"id": "l", "destination": "/queue/q", "activemq.priority": "-5", "ack": "client"}
    )
    high.send_frame(
        "SUBSCRIBE",
        {"id": "h", "destination": "/queue/q", "ack": "client", "activemq.prefetchSize": "3"},
    )
    send(producer, 5)
    assert [f.body for f in high.messages()] == [b"0", b"1", b"2"]
    assert [f.body for f in low.messages()] == [b"3", b"4"]


def test_a_standby_network_consumer_takes_messages_only_while_the_queue_has_no_other_consumer() -> None:
    engine = new_engine()
    local, network, producer = Peer(engine), Peer(engine), Peer(engine)
    network.send_frame(
        "SUBSCRIBE",
        {"id": "n", "destination": "/queue/q", "stompd.network": "B", "stompd.networkStandby": "true"},
    )
    local.send_frame(
        "SUBSCRIBE", {"id": "l", "destination": "/queue/q", "activemq.prefetchSize": "1", "ack": "client"}
    )
    send(producer, 3)
    assert [f.body for f in local.messages()] == [b"0"]
    assert network.messages() == []
    # The local consumer leaves: the two waiting go to the network consumer (the one it
    # had comes back, redelivered, first).
    local.send_frame("UNSUBSCRIBE", {"id": "l"})
    assert [(f.body, f.headers.get("redelivered")) for f in network.messages()] == [
        (b"0", "true"),
        (b"1", None),
        (b"2", None),
    ]


def test_a_network_subscription_takes_no_message_that_was_on_the_broker_it_feeds_nor_one_past_its_ttl() -> (
    None
):
    engine = new_engine()
    # The messages with a path come from a bridge (a client's path would be dropped).
    network, producer, local = Peer(engine), Peer(engine, **BRIDGE_OF_A), Peer(engine)
    network.send_frame(
        "SUBSCRIBE",
        {"id": "n", "destination": "/queue/q", "stompd.network": "C", "stompd.networkTTL": "2"},
    )
    producer.send_frame("SEND", {"destination": "/queue/q"}, b"from here")
    producer.send_frame("SEND", {"destination": "/queue/q", PATH_HEADER: "A"}, b"one hop so far")
    producer.send_frame("SEND", {"destination": "/queue/q", PATH_HEADER: "C"}, b"was on C")
    producer.send_frame("SEND", {"destination": "/queue/q", PATH_HEADER: "Z,CC"}, b"Z,CC: no hop left")
    # What it refuses waits for another consumer; what comes after still goes.
    producer.send_frame("SEND", {"destination": "/queue/q"}, b"after them")
    assert [f.body for f in network.messages()] == [b"from here", b"one hop so far", b"after them"]
    local.send_frame("SUBSCRIBE", {"id": "l", "destination": "/queue/q"})
    assert [f.body for f in local.messages()] == [b"was on C", b"Z,CC: no hop left"]


@pytest.mark.parametrize(
    ("headers", "problem"),
    [
        ({"activemq.priority": "200"}, "activemq.priority must be -128 to 127"),
        ({"stompd.network": "a,b"}, "names one broker"),
        ({"stompd.network": "B", "stompd.networkTTL": "0"}, "at least 1"),
    ],
)
def test_bad_network_and_priority_headers_are_refused(headers: dict[str, str], problem: str) -> None:
    engine = new_engine()
    peer = Peer(engine)
    with pytest.raises(BrokerError, match=problem):
        peer.send_frame("SUBSCRIBE", {"id": "x", "destination": "/queue/q", **headers})


def test_what_a_link_drop_gives_back_never_goes_to_the_dead_letter_queue() -> None:
    engine = new_engine(max_redeliveries=0)
    producer = Peer(engine)
    send(producer, 1)
    for _ in range(3):
        bridge = Peer(engine)
        bridge.send_frame(
            "SUBSCRIBE", {"id": "n", "destination": "/queue/q", "stompd.network": "B", "ack": "client"}
        )
        assert len(bridge.messages()) == 1
        engine.close_session(bridge.session)
    assert "/queue/ActiveMQ.DLQ" not in engine.queues
    assert engine.queues["/queue/q"].cursor.count == 1


# -- forwarded messages: their id, and the copies dropped ------------------------------------


def test_a_forwarded_message_keeps_its_id_and_redelivered_and_a_copy_of_it_is_dropped_but_receipted() -> None:
    engine = new_engine()
    link, consumer = Peer(engine, **BRIDGE_OF_A), Peer(engine)
    consumer.send_frame("SUBSCRIBE", {"id": "c", "destination": "/queue/q"})
    headers = {
        "destination": "/queue/q",
        ID_HEADER: "ID-abc-41",
        REDELIVERED_HEADER: "true",
        PATH_HEADER: "A",
    }
    link.send_frame("SEND", {**headers, "receipt": "1"}, b"x")
    link.send_frame("SEND", {**headers, "receipt": "2"}, b"x")
    assert [f.headers["receipt-id"] for f in link.received()] == ["1", "2"]
    (message,) = consumer.messages()
    assert message.headers["message-id"] == "ID-abc-41"
    assert message.headers["redelivered"] == "true"
    assert message.headers[PATH_HEADER] == "A"
    assert ID_HEADER not in message.headers and REDELIVERED_HEADER not in message.headers
    assert engine.audit.duplicates == 1


def test_a_copys_receipt_waits_for_the_batch_that_stores_the_first_copy() -> None:
    engine = new_engine()
    first, second = Peer(engine, **BRIDGE_OF_A), Peer(engine, **BRIDGE_OF_A)
    headers = {"destination": "/queue/q", "persistent": "true", ID_HEADER: "ID-abc-7"}
    # Both in one batch: nothing flushed between them.
    engine.handle(first.session, Frame("SEND", {**headers, "receipt": "1"}, b"x"))
    engine.handle(second.session, Frame("SEND", {**headers, "receipt": "2"}, b"x"))
    assert first.outbox.holds == 1 and second.outbox.holds == 1
    engine.flush()
    assert [f.headers["receipt-id"] for f in second.received()] == ["2"]
    assert engine.queues["/queue/q"].cursor.count == 1


# -- what only a bridge may say ---------------------------------------------------------------


def test_a_clients_network_headers_are_dropped_its_message_has_its_own_id_and_is_not_redelivered() -> None:
    engine = new_engine()
    client, consumer = Peer(engine), Peer(engine)
    consumer.send_frame("SUBSCRIBE", {"id": "c", "destination": "/queue/q"})
    forged = {
        ID_HEADER: "ID-abc-41",
        REDELIVERED_HEADER: "true",
        PATH_HEADER: "A",
        ADVISORY_HEADER: "B",
        "JMSXUserID": "someone-else",
        "kept": "_STOMPD_ID in a value is only a value",
    }
    for _ in range(2):
        client.send_frame("SEND", {"destination": "/queue/q", **forged}, b"x")
    first, second = consumer.messages()
    for message in (first, second):
        assert (
            message.headers["message-id"].startswith("ID-") and message.headers["message-id"] != "ID-abc-41"
        )
        assert "redelivered" not in message.headers and "JMSXUserID" not in message.headers
        assert not NETWORK_HEADERS & set(message.headers)
        assert message.headers["kept"] == forged["kept"]
    # Two messages (nothing taken for a copy), and nothing recorded that a bridge's could be.
    assert first.headers["message-id"] != second.headers["message-id"]
    assert engine.audit.duplicates == 0 and not engine.audit.seen("A", "ID-abc-41")


def test_every_network_header_the_broker_reads_is_on_the_one_list_a_client_may_not_set() -> None:
    names = [value for value in vars(bridging).values() if isinstance(value, str)]
    network = {name for name in names if name.startswith(NETWORK_PREFIX)}
    assert network == NETWORK_HEADERS and network <= NOT_THE_SENDERS
    assert {"message-id", "redelivered", "JMSXUserID"} <= NOT_THE_SENDERS


def test_a_forwarded_message_is_audited_once_stored_never_from_an_aborted_transaction() -> None:
    engine = new_engine()
    bridge, consumer = Peer(engine, **BRIDGE_OF_A), Peer(engine)
    consumer.send_frame("SUBSCRIBE", {"id": "c", "destination": "/queue/q"})
    forwarded = {"destination": "/queue/q", ID_HEADER: "ID-abc-9", PATH_HEADER: "A"}
    bridge.send_frame("BEGIN", {"transaction": "t"})
    bridge.send_frame("SEND", {**forwarded, "transaction": "t"}, b"never stored")
    bridge.send_frame("ABORT", {"transaction": "t"})
    assert not engine.audit.seen("A", "ID-abc-9")
    bridge.send_frame("SEND", forwarded, b"stored")
    assert [m.body for m in consumer.messages()] == [b"stored"]
    assert engine.audit.seen("A", "ID-abc-9") and engine.audit.duplicates == 0


def test_the_audit_keeps_each_origins_ids_apart() -> None:
    engine = new_engine()
    bridge, consumer = Peer(engine, **BRIDGE_OF_A), Peer(engine)
    consumer.send_frame("SUBSCRIBE", {"id": "c", "destination": "/queue/q"})
    # The same id from two origins (the first of its path): two messages, not a copy.
    for path in ("X", "A,X", "A"):
        bridge.send_frame(
            "SEND", {"destination": "/queue/q", ID_HEADER: "ID-abc-3", PATH_HEADER: path}, path.encode()
        )
    assert [m.body for m in consumer.messages()] == [b"X", b"A,X"]
    assert engine.audit.duplicates == 1


def test_a_connect_as_a_bridge_names_one_broker() -> None:
    engine = new_engine()
    session = engine.open_session(ListOutbox())
    with pytest.raises(BrokerError, match="names the broker this is the bridge of"):
        engine.handle(session, Frame("CONNECT", {"accept-version": "1.2", "stompd.network": "A,B"}))


def test_a_bridge_acts_only_on_the_advisories_its_broker_published() -> None:
    remote = new_engine(broker_name="B")
    watcher, consumer, forger = Peer(remote), Peer(remote), Peer(remote)
    watcher.send_frame("SUBSCRIBE", {"id": "w", "destination": ADVISORY_Q + ">"})
    consumer.send_frame("SUBSCRIBE", {"id": "c", "destination": "/queue/PAYMENTS"})
    (started,) = watcher.messages()
    assert started.headers[ADVISORY_HEADER] == "B"
    info = json.loads(started.body)["ConsumerInfo"]
    # A client's RemoveInfo for that consumer, with every header an advisory has.
    forged = {
        name: value
        for name, value in started.headers.items()
        if name not in ("message-id", "subscription", "ack")
    }
    body = json.dumps({"RemoveInfo": {"objectId": info["consumerId"]}}).encode()
    forger.send_frame("SEND", forged, body)
    (forgery,) = watcher.messages()
    assert ADVISORY_HEADER not in forgery.headers
    demand = Demand("A", ttl=1, conduit=True, publisher="B")
    assert [(c.added, c.want.destination) for c in demand.advisory(started)] == [(True, "/queue/PAYMENTS")]
    assert demand.advisory(forgery) == []
    assert [w.destination for w in demand.wants] == ["/queue/PAYMENTS"]
    # Another broker's advisory does not count here either.
    assert Demand("A", ttl=1, conduit=True, publisher="C").advisory(started) == []


# -- the audit ---------------------------------------------------------------------------------


def test_the_audit_remembers_a_window_of_sequence_numbers_per_prefix() -> None:
    audit = ProducerAudit(window=64)
    for seq in (5, 7, 6):
        assert not audit.seen("A", f"ID-a-{seq}")
        audit.record("A", f"ID-a-{seq}")
    assert audit.seen("A", "ID-a-5") and audit.seen("A", "ID-a-6") and not audit.seen("A", "ID-a-8")
    assert not audit.seen("A", "ID-b-5")
    # Another origin's are its own.
    assert not audit.seen("B", "ID-a-5")
    audit.record("A", "ID-a-200")
    # 5, 6 and 7 fell out of the window: taken as new, as ActiveMQ does.
    assert not audit.seen("A", "ID-a-7") and audit.seen("A", "ID-a-200")
    audit.record("A", "no-number-here")
    assert audit.seen("A", "no-number-here") and not audit.seen("B", "no-number-here")


@given(st.lists(st.tuples(st.sampled_from("AB"), st.integers(min_value=0, max_value=400)), max_size=200))
def test_the_audit_says_seen_for_exactly_the_recorded_sequences_within_its_window(
    records: list[tuple[str, int]],
) -> None:
    audit = ProducerAudit(window=128)
    recorded: dict[str, set[int]] = {"A": set(), "B": set()}
    for origin, seq in records:
        audit.record(origin, f"p-{seq}")
        recorded[origin].add(seq)
        for each, seqs in recorded.items():
            if not seqs:
                continue
            high = max(seqs)
            for probe in range(max(0, high - 127), high + 2):
                assert audit.seen(each, f"p-{probe}") == (probe in seqs and probe <= high), (
                    each,
                    probe,
                    high,
                )


def test_the_audit_forgets_the_oldest_prefix_past_its_limit() -> None:
    audit = ProducerAudit(window=8, origins=2)
    for prefix in "abc":
        audit.record("A", f"{prefix}-1")
    assert not audit.seen("A", "a-1") and audit.seen("A", "b-1") and audit.seen("A", "c-1")
