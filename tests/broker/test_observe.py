"""The core's observation points: the event sink's calls (a sink that records them, the
base class's interface), the swap counters and the latency histogram, on real engines."""

from __future__ import annotations

from broker.core.admin.readout import DestinationRow, Readout
from broker.core.admin.views import Progress
from broker.core.base.observe import LATENCY_BOUNDS_MS, Latency
from broker.core.base.selector import compile_selector
from export_format.schema import DESTINATION_COUNTERS, DESTINATION_GAUGES, row_fields
from tests.broker.harness import Peer, finished, new_engine
from tests.broker.support import KB, Recorder, ops, send, swapping_engine


def test_no_sink_by_default_and_every_event_of_a_message_life_with_one() -> None:
    engine = new_engine(max_redeliveries=0)
    assert engine.observer.events is None
    events = engine.observer.events = Recorder()
    producer, consumer = Peer(engine), Peer(engine)
    consumer.send_frame("SUBSCRIBE", {"destination": "/queue/a", "id": "1", "ack": "client-individual"})
    producer.send_frame("SEND", {"destination": "/queue/a"}, b"x")
    # Persistent: a non-persistent dead letter is dropped (processNonPersistent=false).
    producer.send_frame("SEND", {"destination": "/queue/a", "persistent": "true"}, b"y")
    first, second = consumer.messages()
    consumer.send_frame("ACK", {"id": first.headers["ack"]})
    consumer.send_frame("NACK", {"id": second.headers["ack"]})
    producer.send_frame("SEND", {"destination": "/queue/gone", "expires": "1"}, b"z")
    engine.flush()
    assert events.calls == [
        ("enqueue", "/queue/a"),
        ("dispatch", "/queue/a", False),
        ("enqueue", "/queue/a"),
        ("dispatch", "/queue/a", False),
        ("ack", "/queue/a"),
        ("nack", "/queue/a"),
        ("dead-letter", "/queue/a", "max-redeliveries", "/queue/ActiveMQ.DLQ"),
        ("enqueue", "/queue/gone"),
    ]
    # A dead letter is an arrival at the DLQ, not an enqueue; its counters say so.
    rows = {row.destination: row for row in Readout(engine).destination_rows()}
    assert rows["/queue/a"].dead_lettered_total == 1 and rows["/queue/a"].dequeued_total == 2
    assert rows["/queue/ActiveMQ.DLQ"].enqueued_total == 1


def test_redeliveries_say_why() -> None:
    engine = new_engine()
    events = engine.observer.events = Recorder()
    producer, consumer = Peer(engine), Peer(engine)
    consumer.send_frame("SUBSCRIBE", {"destination": "/queue/r", "id": "1", "ack": "client-individual"})
    producer.send_frame("SEND", {"destination": "/queue/r"}, b"x")
    (message,) = consumer.messages()
    consumer.send_frame("NACK", {"id": message.headers["ack"]})
    consumer.send_frame("UNSUBSCRIBE", {"id": "1"})
    other = Peer(engine)
    other.send_frame("SUBSCRIBE", {"destination": "/queue/r", "id": "1", "ack": "client-individual"})
    engine.close_session(other.session)
    causes = [call[2] for call in events.calls if call[0] == "redeliver"]
    assert causes == ["nack", "unsubscribe", "disconnect"]


def test_a_blocked_producer_is_a_flow_block_then_a_release_with_its_wait() -> None:
    engine, _ = swapping_engine(memory=32 * KB, temp=8 * KB)
    events = engine.observer.events = Recorder()
    both = Peer(engine)
    both.send_frame("SUBSCRIBE", {"destination": "/queue/f", "id": "1", "ack": "client"})
    engine.set_writable(both.session, False)
    for i in range(60):
        both.send_frame("SEND", {"destination": "/queue/f"}, b"%06d" % i + b"x" * 1000)
    engine.flush()
    assert [c for c in events.calls if c[0] == "flow-block"] == [("flow-block", "/queue/f", "temp")]
    engine.clock.ms += 250
    engine.set_writable(both.session, True)
    while both.session.parked:
        messages = both.messages()
        both.send_frame("ACK", {"id": messages[-1].headers["ack"]})
    assert [c for c in events.calls if c[0] == "flow-release"] == [("flow-release", "/queue/f", "space", 250)]
    assert Readout(engine).broker_row()["producers_blocked_seconds_total"] == 0.25


def test_swapping_is_counted_in_messages_and_bytes_and_a_queue_knows_its_disk_bytes() -> None:
    engine, _ = swapping_engine()
    p = Peer(engine)
    send(p, "/queue/q", 300)
    queue = engine.queues["/queue/q"]
    row = Readout(engine).broker_row()
    swapped = queue.cursor.disk_total
    assert row["swapped_out_messages_total"] == swapped > 200
    size = queue.cursor.disk_bytes
    # Bytes as the memory limit counts them: each 1,006-byte body and its objects' price.
    assert row["swapped_out_bytes_total"] == size > swapped * 1006
    (destination,) = (r for r in Readout(engine).destination_rows() if r.destination == "/queue/q")
    assert destination.disk_bytes == size and destination.messages == 300
    c = Peer(engine)
    c.send_frame("SUBSCRIBE", {"destination": "/queue/q", "id": "1"})
    assert len(c.messages()) == 300
    row = Readout(engine).broker_row()
    assert row["swapped_in_messages_total"] == swapped
    assert row["swapped_in_bytes_total"] == row["swapped_out_bytes_total"]
    assert queue.cursor.disk_bytes == 0


def test_latency_buckets_bound_their_values_inclusively() -> None:
    latency = Latency()
    for ms in (0, 1, 2, 3, LATENCY_BOUNDS_MS[-1], LATENCY_BOUNDS_MS[-1] + 1, -5):
        latency.observe(ms)
    assert latency.counts[0] == 3  # 0, 1 and the clock step back (-5 counted as 0)
    assert latency.counts[1] == 1 and latency.counts[2] == 1
    assert latency.counts[-2] == 1 and latency.counts[-1] == 1
    assert latency.sum_ms == 0 + 1 + 2 + 3 + 2 * LATENCY_BOUNDS_MS[-1] + 1


def test_an_admin_move_is_a_move_event_a_copy_an_enqueue_at_its_target_a_removal_a_remove() -> None:
    """As the counters have them: a move a dequeue and an enqueue, a copy an enqueue, a
    removal a dequeue (so the report, which counts events, agrees with /metrics)."""
    engine = new_engine()
    producer = Peer(engine)
    for i in range(6):
        producer.send_frame("SEND", {"destination": "/queue/src", "n": str(i)}, b"x")
    events = engine.observer.events = Recorder()
    queues = ops(engine).queues
    finished(engine, queues.move("/queue/src", "/queue/dst", compile_selector("n >= 4"), None, Progress()))
    finished(engine, queues.copy("/queue/src", "/queue/cpy", compile_selector("n = 0"), None, Progress()))
    finished(engine, queues.remove("/queue/src", compile_selector("n = 1"), None, Progress()))
    finished(engine, queues.purge("/queue/cpy", Progress()))
    assert events.calls == [
        ("move", "4", "/queue/src", "/queue/dst"),
        ("move", "5", "/queue/src", "/queue/dst"),
        ("enqueue", "/queue/cpy"),
        ("remove", "1", "/queue/src"),
        ("remove", "0", "/queue/cpy"),
    ]
    src, cpy = engine.queues["/queue/src"].stats, engine.queues["/queue/cpy"].stats
    assert (src.enqueued, src.dequeued, cpy.enqueued, cpy.dequeued) == (6, 3, 1, 1)
    # A moved message keeps its arrival: its latency counts from the producer's SEND.
    arrivals = {m.headers["n"]: m.arrived for m in engine.queues["/queue/dst"].cursor}
    assert sorted(arrivals) == ["4", "5"] and all(arrivals.values())


def test_an_advisory_is_an_enqueue_event_on_its_topic_as_the_topic_counts_it() -> None:
    engine = new_engine()
    advisory = "/topic/ActiveMQ.Advisory.Consumer.Queue.q"
    Peer(engine).send_frame("SUBSCRIBE", {"destination": advisory, "id": "a"})
    events = engine.observer.events = Recorder()
    Peer(engine).send_frame("SUBSCRIBE", {"destination": "/queue/q", "id": "1"})
    assert [call for call in events.calls if call[0] == "enqueue"] == [("enqueue", advisory)]
    assert engine.router.topics[advisory].stats.enqueued == 1


def test_a_destination_row_has_the_schema_s_fields_in_its_order() -> None:
    assert DestinationRow.__slots__ == ("destination", "type", *DESTINATION_COUNTERS, *DESTINATION_GAUGES)
    assert Readout(new_engine()).broker_row().keys() == set(row_fields("broker"))
