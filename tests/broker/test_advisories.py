"""ActiveMQ's advisories beyond the consumer ones, driven frame by frame (no sockets):
connections, destinations made and removed, expired and dead-lettered messages, and
what a policyEntry asks for (delivered, consumed, slow consumers, fast producers, full).
Each is made only while someone subscribes to its topic (a count of the messages the
engine built shows it), and ActiveMQ's STOMP producers have no advisory."""

from __future__ import annotations

import json
from typing import Any

import pytest

from broker.core.base.chores import BUDGET
from broker.core.base.settings import (
    ADVISE_CONSUMED,
    ADVISE_DELIVERY,
    ADVISE_FAST,
    ADVISE_FULL,
    ADVISE_SLOW,
    DestinationPolicy,
)
from broker.core.engine import Engine
from broker.core.handlers import advisory
from tests.broker.harness import Peer, new_engine
from tests.broker.support import driven

A = "/topic/ActiveMQ.Advisory."


def told(peer: Peer) -> list[tuple[str, dict[str, Any], dict[str, str]]]:
    return [
        (frame.headers["destination"][len(A) :], json.loads(frame.body), frame.headers)
        for frame in peer.messages()
        if frame.headers["destination"].startswith(A)
    ]


def watching(engine: Engine, pattern: str) -> Peer:
    watcher = Peer(engine)
    watcher.send_frame("SUBSCRIBE", {"id": "w", "destination": A + pattern})
    watcher.received()
    return watcher


def advising(flags: int, memory_limit: int | None = None, **settings: Any) -> Engine:
    def policy(kind: str, name: str) -> DestinationPolicy:
        if name.startswith("ActiveMQ."):
            return DestinationPolicy()
        return DestinationPolicy(advise=flags, memory_limit=memory_limit)

    return new_engine(policies=policy, **settings)


# -- connections ------------------------------------------------------------------------


def test_a_connection_is_told_as_it_opens_and_closes_its_password_blanked() -> None:
    engine = new_engine(broker_name="A")
    watcher = watching(engine, "Connection")
    client = Peer(engine, login="alice", passcode="secret", host="example")
    ((topic, body, headers),) = told(watcher)
    assert topic == "Connection"
    assert headers["type"] == "Advisory" and headers["originBrokerName"] == "A"
    info = body["ConnectionInfo"]
    assert info["connectionId"] == {"value": client.session.id}
    assert info["clientId"] == client.session.id
    assert (info["userName"], info["password"], info["clientIp"]) == ("alice", "", "example")
    engine.close_session(client.session)
    ((topic, body, _),) = told(watcher)
    assert body == {
        "RemoveInfo": {
            "commandId": 0,
            "responseRequired": True,
            "objectId": {"@class": "ConnectionId", "value": client.session.id},
            "lastDeliveredSequenceId": -2,
        }
    }


def test_a_subscriber_of_exactly_the_connection_topic_is_told_of_every_open_connection() -> None:
    engine = new_engine()
    first = Peer(engine, **{"client-id": "one"})
    watcher = watching_replayed = Peer(engine)
    watcher.send_frame("SUBSCRIBE", {"id": "w", "destination": A + "Connection"})
    ids = sorted(body["ConnectionInfo"]["clientId"] for _, body, _ in told(watching_replayed))
    assert ids == sorted(["one", watcher.session.id])
    assert first.session.client_id == "one"


# -- destinations -------------------------------------------------------------------------


def test_a_queue_and_a_topic_made_are_told_and_a_removed_one_too() -> None:
    engine = new_engine()
    watcher = watching(engine, ">")
    producer = Peer(engine)
    producer.send_frame("SEND", {"destination": "/queue/orders"}, b"x")
    producer.send_frame("SEND", {"destination": "/topic/prices"}, b"x")
    made = [(topic, body["DestinationInfo"]) for topic, body, _ in told(watcher) if "DestinationInfo" in body]
    assert [info["connectionId"] for _, info in made] == [{"value": producer.session.id}] * 2
    assert [(topic, info["destination"], info["operationType"]) for topic, info in made] == [
        ("Queue", {"@class": "ActiveMQQueue", "string": "orders", "null": ""}, 0),
        ("Topic", {"@class": "ActiveMQTopic", "string": "prices", "null": ""}, 0),
    ]
    queue = engine.queues["/queue/orders"]
    queue.cursor.close()
    engine.destinations.remove(queue)
    ((topic, body, _),) = told(watcher)
    assert (topic, body["DestinationInfo"]["operationType"]) == ("Queue", 1)
    assert body["DestinationInfo"]["connectionId"] == {"value": producer.session.id}


def test_temporary_destinations_are_told_with_their_connection_and_go_with_it() -> None:
    engine = new_engine()
    watcher = watching(engine, "TempQueue")
    owner = Peer(engine)
    owner.send_frame("SUBSCRIBE", {"id": "r", "destination": "/temp-queue/replies"})
    ((topic, body, _),) = told(watcher)
    info = body["DestinationInfo"]
    assert topic == "TempQueue"
    assert info["connectionId"] == {"value": owner.session.id}
    assert info["destination"]["@class"] == "ActiveMQTempQueue"
    engine.close_session(owner.session)
    ((topic, body, _),) = told(watcher)
    assert body["DestinationInfo"]["operationType"] == 1


def test_an_exact_destination_subscriber_is_told_of_every_destination_there_is() -> None:
    engine = new_engine()
    producer = Peer(engine)
    producer.send_frame("SEND", {"destination": "/queue/a"}, b"x")
    producer.send_frame("SEND", {"destination": "/topic/b"}, b"x")
    watcher = Peer(engine)
    watcher.send_frame("SUBSCRIBE", {"id": "w", "destination": A + "Queue"})
    # Every kind, each on its own advisory topic, as ActiveMQ replays them.
    got = sorted(
        (topic, body["DestinationInfo"]["destination"]["string"]) for topic, body, _ in told(watcher)
    )
    assert got == [("Queue", "a"), ("Topic", "b")]


def test_no_advisory_is_made_while_nobody_listens() -> None:
    engine = new_engine()
    producer = Peer(engine)
    before = engine.routing.seq
    producer.send_frame("SEND", {"destination": "/queue/a"}, b"x")
    Peer(engine)
    # One message routed (the SEND), nothing for the Queue or Connection advisory.
    assert engine.routing.seq == before + 1
    assert not any(name.startswith("/topic/ActiveMQ.Advisory.") for name in engine.router.topics)


# -- messages -----------------------------------------------------------------------------


def test_an_expired_message_is_told_with_its_id_then_its_dlq_copy() -> None:
    engine = new_engine()
    watcher = watching(engine, ">")
    producer = Peer(engine)
    expires = str(engine.clock.ms + 10)
    producer.send_frame("SEND", {"destination": "/queue/q", "expires": expires, "persistent": "true"}, b"x")
    watcher.received()
    engine.clock.ms += 20
    consumer = Peer(engine)
    consumer.send_frame("SUBSCRIBE", {"id": "c", "destination": "/queue/q"})
    engine.flush()
    topics = [(topic, headers) for topic, _, headers in told(watcher)]
    names = [topic for topic, _ in topics]
    assert "Expired.Queue.q" in names and "MessageDLQd.Queue.q" in names
    assert names.index("Expired.Queue.q") < names.index("MessageDLQd.Queue.q")
    expired = dict(topics)["Expired.Queue.q"]
    assert expired["orignalMessageId"].startswith("ID-")
    assert "orignalDestination" not in expired


def test_a_message_past_its_redeliveries_is_told_as_dead_lettered() -> None:
    engine = new_engine(policies=lambda kind, name: DestinationPolicy(max_redeliveries=0))
    watcher = watching(engine, "MessageDLQd.>")
    producer, consumer = Peer(engine), Peer(engine)
    producer.send_frame("SEND", {"destination": "/queue/q", "persistent": "true"}, b"x")
    consumer.send_frame("SUBSCRIBE", {"id": "c", "destination": "/queue/q", "ack": "client-individual"})
    (message,) = consumer.messages()
    consumer.send_frame("NACK", {"id": message.headers["ack"]})
    ((topic, body, _),) = told(watcher)
    assert topic == "MessageDLQd.Queue.q"
    info = body["ActiveMQTextMessage"]
    assert info["destination"] == {"@class": "ActiveMQQueue", "string": "q", "null": ""}
    assert info["persistent"] is True


def test_delivered_and_consumed_only_where_the_policy_asks() -> None:
    engine = advising(ADVISE_DELIVERY | ADVISE_CONSUMED)
    watcher = watching(engine, ">")
    producer, consumer = Peer(engine), Peer(engine)
    consumer.send_frame("SUBSCRIBE", {"id": "c", "destination": "/queue/q", "ack": "client"})
    producer.send_frame("SEND", {"destination": "/queue/q"}, b"x")
    (message,) = consumer.messages()
    consumer.send_frame("ACK", {"id": message.headers["ack"]})
    got = {topic: headers for topic, _, headers in told(watcher)}
    assert got["MessageDelivered.Queue.q"]["orignalMessageId"] == message.headers["message-id"]
    assert got["MessageDelivered.Queue.q"]["orignalDestination"] == "queue://q"
    assert got["MessageConsumed.Queue.q"]["orignalMessageId"] == message.headers["message-id"]
    plain = new_engine()
    watcher = watching(plain, ">")
    Peer(plain).send_frame("SEND", {"destination": "/queue/q"}, b"x")
    assert not [t for t, _, _ in told(watcher) if t.startswith(("MessageDelivered", "MessageConsumed"))]


def test_an_auto_ack_topic_subscriber_consumes_as_it_receives() -> None:
    engine = advising(ADVISE_CONSUMED)
    watcher = watching(engine, "MessageConsumed.>")
    producer, consumer = Peer(engine), Peer(engine)
    consumer.send_frame("SUBSCRIBE", {"id": "c", "destination": "/topic/t"})
    producer.send_frame("SEND", {"destination": "/topic/t"}, b"x")
    assert [topic for topic, _, _ in told(watcher)] == ["MessageConsumed.Topic.t"]


# -- limits -------------------------------------------------------------------------------


def test_a_topic_subscriber_past_its_prefetch_is_told_slow_once_until_it_catches_up() -> None:
    engine = advising(ADVISE_SLOW)
    watcher = watching(engine, "SlowConsumer.>")
    producer, consumer = Peer(engine), Peer(engine)
    consumer.send_frame(
        "SUBSCRIBE", {"id": "c", "destination": "/topic/t", "ack": "client", "activemq.prefetchSize": "2"}
    )
    for _ in range(3):
        producer.send_frame("SEND", {"destination": "/topic/t"}, b"x")
    assert told(watcher) == []
    for _ in range(3):
        producer.send_frame("SEND", {"destination": "/topic/t"}, b"x")
    ((topic, body, headers),) = told(watcher)
    assert topic == "SlowConsumer.Topic.t"
    assert headers["consumerId"] == f"{consumer.session.id}:-1:1"
    assert body["ConsumerInfo"]["prefetchSize"] == 2
    # Caught up (everything acked): slow again is told again.
    while messages := consumer.messages():
        consumer.send_frame("ACK", {"id": messages[-1].headers["ack"]})
    for _ in range(6):
        producer.send_frame("SEND", {"destination": "/topic/t"}, b"x")
    assert [topic for topic, _, _ in told(watcher)] == ["SlowConsumer.Topic.t"]


@pytest.mark.parametrize("flags", [ADVISE_FULL | ADVISE_FAST, 0])
def test_a_send_that_finds_memory_full_tells_full_and_fast_producer(flags: int) -> None:
    # The topic's memory past its high-water mark, the swap space too small for more.
    engine = advising(flags, memory_limit=1000, temp_limit=2000)
    watcher = watching(engine, ">")
    producer = Peer(engine)
    producer.send_frame("SEND", {"destination": "/topic/t", "receipt": "1"}, b"x" * 10)
    consumer = Peer(engine)
    consumer.send_frame(
        "SUBSCRIBE", {"id": "c", "destination": "/topic/t", "ack": "client", "activemq.prefetchSize": "1"}
    )
    for i in range(30):
        producer.send_frame("SEND", {"destination": "/topic/t", "receipt": str(i)}, b"x" * 200)
        if producer.session.parked:
            break
    assert producer.session.parked
    got = {topic: (body, headers) for topic, body, headers in told(watcher)}
    if not flags:
        assert "FULL.Topic.t" not in got and "FastProducer.Topic.t" not in got
        return
    body, headers = got["FULL.Topic.t"]
    assert body == {"null": ""}
    assert headers["usageName"] == "default:memory:topic://t:memory"
    assert int(headers["usageCount"]) > 0
    body, headers = got["FastProducer.Topic.t"]
    assert headers["producerId"] == f"{producer.session.id}:-1:1"
    assert body["ProducerInfo"]["producerId"] == {
        "connectionId": producer.session.id,
        "sessionId": -1,
        "value": 1,
    }


def test_a_stomp_producer_has_no_advisory_as_on_activemq() -> None:
    engine = new_engine()
    watcher = watching(engine, "Producer.>")
    Peer(engine).send_frame("SEND", {"destination": "/queue/q"}, b"x")
    assert told(watcher) == []


def test_the_master_broker_advisory_is_replayed_to_a_pattern_covering_it() -> None:
    engine = new_engine()
    watcher = Peer(engine)
    watcher.send_frame("SUBSCRIBE", {"id": "w", "destination": A + "MasterBroker"})
    ((topic, body, _),) = told(watcher)
    assert (topic, body) == ("MasterBroker", {"null": ""})
    assert advisory.MASTER_BROKER == "ActiveMQ.Advisory.MasterBroker"


def test_a_queue_consumer_out_of_credit_is_not_told_slow_as_on_activemq() -> None:
    # ActiveMQ 5.17's queue pages in only what its consumers can take, so over STOMP it
    # never finds one full (checked: no SlowConsumer.Queue advisory, subscribed before or
    # after the messages came).
    engine = advising(ADVISE_SLOW)
    watcher = watching(engine, "SlowConsumer.>")
    producer, consumer = Peer(engine), Peer(engine)
    consumer.send_frame(
        "SUBSCRIBE", {"id": "c", "destination": "/queue/q", "ack": "client", "activemq.prefetchSize": "2"}
    )
    for _ in range(5):
        producer.send_frame("SEND", {"destination": "/queue/q"}, b"x")
    assert len(consumer.messages()) == 2
    assert told(watcher) == []


# -- a replay is a chore -----------------------------------------------------------------


def test_a_replay_of_thousands_of_destinations_goes_in_slices_with_others_served_between() -> None:
    engine = new_engine()
    producer = Peer(engine)
    queues = 20 * advisory.REPLAY_STEP
    for n in range(queues):
        producer.send_frame("SEND", {"destination": f"/queue/r.{n}"}, b"x")
    other = Peer(engine)
    other.send_frame("SUBSCRIBE", {"id": "o", "destination": "/topic/news"})
    woken = driven(engine)
    watcher = Peer(engine)
    watcher.send_frame("SUBSCRIBE", {"id": "w", "destination": A + "Queue", "receipt": "r"})
    # The RECEIPT first, the replay not yet begun: a chore, woken for.
    assert [frame.command for frame in watcher.received()] == ["RECEIPT"]
    assert woken
    # Removed before the replay reaches it: told gone live, and not replayed as there.
    engine.destinations.remove(engine.queues[f"/queue/r.{queues - 1}"])
    (gone,) = told(watcher)
    assert gone[1]["DestinationInfo"]["operationType"] == 1
    seen: list[int] = []
    while engine.chores.run():
        seen.append(len(told(watcher)))
        # Other clients are served between two slices.
        producer.send_frame("SEND", {"destination": "/topic/news"}, b"between")
        assert len(other.messages()) == 1
    seen.append(len(told(watcher)))
    # Every queue but the removed one, and the topic /topic/news.
    assert sum(seen) == (queues - 1) + 1
    # A slice's worth at a time (chores' BUDGET), not all at once.
    assert len([n for n in seen if n]) >= 5
    assert max(seen) <= BUDGET // advisory.REPLAY_MESSAGE_COST


def test_a_consumer_started_or_ended_during_a_replay_is_told_once_live() -> None:
    engine = new_engine()
    consumers = [Peer(engine) for _ in range(4 * advisory.REPLAY_STEP)]
    for n, peer in enumerate(consumers):
        peer.send_frame("SUBSCRIBE", {"id": "c", "destination": f"/queue/c.{n}"})
    driven(engine)
    watcher = Peer(engine)
    watcher.send_frame("SUBSCRIBE", {"id": "w", "destination": A + "Consumer.Queue.>"})
    watcher.received()
    assert engine.chores.run()
    # One that was not replayed yet ends; a new one starts on a session replayed later.
    consumers[-1].send_frame("UNSUBSCRIBE", {"id": "c"})
    consumers[-2].send_frame("SUBSCRIBE", {"id": "late", "destination": "/queue/late"})
    while engine.chores.run():
        pass
    told_of: dict[str, list[str]] = {}
    for _, body, _ in told(watcher):
        kind = next(iter(body))
        told_of.setdefault(kind, []).append(json.dumps(body))
    infos = [json.loads(text)["ConsumerInfo"]["destination"]["string"] for text in told_of["ConsumerInfo"]]
    assert infos.count("late") == 1
    assert f"c.{len(consumers) - 1}" not in infos
    assert len(infos) == len(consumers)  # every other one, and the late one, once each
    assert len(told_of["RemoveInfo"]) == 1
