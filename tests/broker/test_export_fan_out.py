"""A topic's fan-out in the event log: the core tells the sink of its ``ack:auto``
deliveries in one call (``EventSink.fanned_out``) and the exporter writes them into the
message's enqueue line, encoded once for the topic's subscribers.

A real engine with peers and a real exporter writing real files, each line read back
as the Spark job reads it (``check_line``).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from broker.core.admin.readout import Readout
from broker.core.base.clock import Clock
from broker.core.base.message import Message
from broker.core.engine import Engine
from broker.export.exporter import Exporter, ExportSettings
from export_format.lines import check_line
from store.memory import memory_stores
from tests.broker.harness import Peer
from tests.broker.support import Recorder

TS = 1_700_000_000_000


def exporting(tmp_path: Path) -> tuple[Engine, Exporter]:
    engine = Engine(clock=Clock(TS), stores=memory_stores())
    exporter = Exporter(ExportSettings(tmp_path), Readout(engine))
    exporter.start()
    return engine, exporter


def event_lines(tmp_path: Path, exporter: Exporter) -> list[dict[str, Any]]:
    exporter.close()
    (path,) = tmp_path.glob("events-*.jsonl.gz")
    raw = gzip.decompress(path.read_bytes()).splitlines(keepends=True)
    assert [check_line("events", line) for line in raw] == [[]] * len(raw)
    # The message lines (a connection's connect line is test_a_connect_line_names_the_connection's).
    return [record for record in map(json.loads, raw) if record["event"] != "connect"]


def test_a_connect_line_names_the_connection(tmp_path: Path) -> None:
    """Schema v4: who each connection is, once, so that the report names producers and
    consumers by login, client-id and peer, not only by the id the other lines carry."""
    engine, exporter = exporting(tmp_path)
    named = Peer(engine, login="alice", passcode="x", **{"client-id": "billing"})
    bare = Peer(engine)
    named.send_frame("SEND", {"destination": "/queue/q"}, b"x")
    exporter.close()
    (path,) = tmp_path.glob("events-*.jsonl.gz")
    lines = [json.loads(line) for line in gzip.decompress(path.read_bytes()).splitlines()]
    connects = [line for line in lines if line["event"] == "connect"]
    assert [{k: v for k, v in line.items() if k not in ("run", "seq", "ts")} for line in connects] == [
        {
            "v": 4,
            "event": "connect",
            "connection": named.session.id,
            "login": "alice",
            "client_id": "billing",
            "peer": named.session.address,
        },
        {"v": 4, "event": "connect", "connection": bare.session.id, "peer": bare.session.address},
    ]
    (enqueue,) = [line for line in lines if line["event"] == "enqueue"]
    assert enqueue["producer"] == named.session.id


def subscribe(peer: Peer, sub_id: str, destination: str = "/topic/t", **more: str) -> list[str]:
    peer.send_frame("SUBSCRIBE", {"destination": destination, "id": sub_id, **more})
    return [peer.session.id, sub_id]


def test_a_topics_ack_auto_deliveries_are_its_enqueue_line_and_what_waits_a_line_of_its_own(
    tmp_path: Path,
) -> None:
    engine, exporter = exporting(tmp_path)
    producer, first, second, acking, picky, late = (Peer(engine) for _ in range(6))
    a = subscribe(first, "a")
    # (Not ">": consumer advisories on ActiveMQ.Advisory.Consumer.Topic.t would match it.)
    b = subscribe(second, "b", "/topic/*")
    c = subscribe(acking, "c", ack="client")
    d = subscribe(picky, "d", selector="n > 1")

    def send(n: int) -> None:
        producer.send_frame("SEND", {"destination": "/topic/t", "n": str(n)}, b"x")

    send(1)
    # ``second``'s connection backs up: its copy of 2 waits in its cursor.
    engine.set_writable(second.session, False)
    send(2)
    engine.clock.ms += 1
    engine.set_writable(second.session, True)
    e = subscribe(late, "e")
    send(3)
    send(4)
    lines = event_lines(tmp_path, exporter)
    assert [(line["event"], line["message_id"][-1], line.get("auto_acked")) for line in lines] == [
        # The ack:client subscriber's dispatch follows the enqueue, whatever its place
        # among the subscribers; the one whose selector refuses 1 is in neither.
        ("enqueue", "1", [a, b]),
        ("dispatch", "1", None),
        ("enqueue", "2", [a, d]),
        ("dispatch", "2", None),
        # Delivered a millisecond later, from its cursor.
        ("ack", "2", None),
        # The subscriptions changed: not what was kept for the topic's old subscribers.
        # Those on the topic by name come in the order they subscribed, then the wildcard.
        ("enqueue", "3", [a, d, e, b]),
        ("dispatch", "3", None),
        ("enqueue", "4", [a, d, e, b]),
        ("dispatch", "4", None),
    ]
    assert [lines[i]["consumer"] for i in (1, 3, 6, 8)] == [c[0]] * 4
    assert (lines[4]["consumer"], lines[4]["subscription"], lines[4]["auto"]) == (*b, True)
    assert (lines[4]["ts"], lines[4]["latency_ms"]) == (TS + 1, 1)
    assert all(lines[i]["latency_ms"] == 0 and lines[i]["ts"] == TS for i in (0, 2))
    # The deliveries themselves are what they were.
    peers = (first, second, acking, picky, late)
    got = [[frame.headers["n"] for frame in peer.messages()] for peer in peers]
    assert got == [["1", "2", "3", "4"]] * 3 + [["2", "3", "4"], ["3", "4"]]


def test_a_queues_consumers_each_have_their_own_pair_in_the_enqueue_line(tmp_path: Path) -> None:
    # A consumer's pair is kept encoded from one message to the next (the same ids);
    # another consumer's is not taken for it.
    engine, exporter = exporting(tmp_path)
    producer, first, second = Peer(engine), Peer(engine), Peer(engine)
    a = subscribe(first, "a", "/queue/q")
    for n in range(4):
        if n == 2:
            b = subscribe(second, "b", "/queue/q")
        producer.send_frame("SEND", {"destination": "/queue/q"}, b"x")
    lines = event_lines(tmp_path, exporter)
    took = {
        frame.headers["message-id"]: pair
        for peer, pair in ((first, a), (second, b))
        for frame in peer.messages()
    }
    assert [line["auto_acked"] for line in lines] == [[took[line["message_id"]]] for line in lines]
    assert sorted(map(tuple, took.values())) == [tuple(a)] * 3 + [tuple(b)]


def test_a_fan_out_not_right_after_its_enqueue_is_a_line_for_each_delivery(tmp_path: Path) -> None:
    engine, exporter = exporting(tmp_path)
    first, second = Peer(engine), Peer(engine)
    pairs = [subscribe(first, "a"), subscribe(second, "b")]
    subs = (*first.session.subscriptions.values(), *second.session.subscriptions.values())
    message = Message(1, "ID:f-1", "/topic/t", {}, b"body", origin="p-1")
    message.arrived = TS
    exporter.enqueued(message)
    exporter.flow_released("/topic/t", 4, "p-2", "space", 7)
    exporter.fanned_out(message, subs)
    # Never enqueued (a dead letter to a topic): no enqueue line to go into.
    other = Message(2, "ID:f-2", "/topic/t", {}, b"body")
    other.arrived = TS
    exporter.fanned_out(other, subs)
    lines = event_lines(tmp_path, exporter)
    assert [(line["event"], line.get("message_id"), line.get("auto")) for line in lines] == [
        ("enqueue", "ID:f-1", None),
        ("flow-release", None, None),
        ("ack", "ID:f-1", True),
        ("ack", "ID:f-1", True),
        ("ack", "ID:f-2", True),
        ("ack", "ID:f-2", True),
    ]
    assert [[line["consumer"], line["subscription"]] for line in lines[2:]] == pairs * 2
    assert all("auto_acked" not in line for line in lines)


def test_a_line_json_must_write_keeps_its_fan_out(tmp_path: Path) -> None:
    """A lone surrogate (not UTF-8) in a name: msgspec refuses the line, which ``json``
    writes, with the subscribers' ``auto_acked`` kept encoded read back into it, or not
    encoded when it is what msgspec refuses."""
    engine, exporter = exporting(tmp_path)
    first, second = Peer(engine), Peer(engine)
    pairs = [subscribe(first, "a"), subscribe(second, "b")]
    subs = (*first.session.subscriptions.values(), *second.session.subscriptions.values())
    for seq, destination in enumerate(("/topic/t", "/topic/\udcff", "/topic/t"), 1):
        message = Message(seq, f"ID:f-{seq}", destination, {}, b"body", origin="p-1")
        message.arrived = TS
        exporter.enqueued(message)
        exporter.fanned_out(message, subs)
    # And in a subscription's id (which no frame can give: a parser takes UTF-8 only).
    subs[1].id = "b\udcff"
    message = Message(4, "ID:f-4", "/topic/t", {}, b"body", origin="p-1")
    exporter.enqueued(message)
    exporter.fanned_out(message, list(subs))
    lines = event_lines(tmp_path, exporter)
    assert [(line["destination"], line["auto_acked"]) for line in lines] == [
        ("/topic/t", pairs),
        ("/topic/\udcff", pairs),
        ("/topic/t", pairs),
        ("/topic/t", [pairs[0], [pairs[1][0], "b\udcff"]]),
    ]


def test_a_sink_that_does_not_take_fan_outs_is_told_of_each_delivery() -> None:
    engine = Engine(clock=Clock(TS), stores=memory_stores())
    events = engine.observer.events = Recorder()
    producer, first, acking, second = Peer(engine), Peer(engine), Peer(engine), Peer(engine)
    subscribe(first, "a")
    subscribe(acking, "c", ack="client")
    subscribe(second, "b")
    producer.send_frame("SEND", {"destination": "/topic/t"}, b"x")
    assert events.calls == [
        ("enqueue", "/topic/t"),
        ("dispatch", "/topic/t", True),
        ("dispatch", "/topic/t", True),
        ("dispatch", "/topic/t", False),
    ]
