"""Transformations in the core without sockets (broker/core/delivery/transforming.py): a
map SEND is kept in ActiveMQ's text of it, a subscriber that asked for a form gets that
form, once for a topic's subscribers alike, and a subscriber that asked for nothing gets
the message itself; persistence and redelivery keep it."""

from __future__ import annotations

from broker.core.base import xstream
from broker.core.base.message import Message
from broker.core.delivery import transforming
from tests.broker.harness import Peer, new_engine, run_io

J = b'{"map":{"entry":[{"string":["name","Dejan"]},{"string":"city","int":5}]}}'
COMPACT = b"<map><entry><string>a</string><long>5</long></entry></map>"
MAP = ("map", {"a": ("long", 5)})


def test_a_map_send_keeps_activemqs_text_of_it() -> None:
    engine = new_engine()
    producer, consumer = Peer(engine), Peer(engine)
    consumer.send_frame("SUBSCRIBE", {"destination": "/queue/q", "id": "1"})
    producer.send_frame("SEND", {"destination": "/queue/q", "transformation": "jms-map-xml"}, COMPACT)
    [frame] = consumer.messages()
    assert frame.body == xstream.write(MAP, False)
    assert frame.headers["transformation"] == "jms-map-xml"
    assert "transformation-error" not in frame.headers


def test_each_subscriber_gets_the_form_it_asked_for_and_redelivered_keeps_it() -> None:
    engine = new_engine()
    producer, as_json, plain = Peer(engine), Peer(engine), Peer(engine)
    as_json.send_frame(
        "SUBSCRIBE", {"destination": "/queue/q", "id": "1", "ack": "client", "transformation": "jms-json"}
    )
    producer.send_frame(
        "SEND", {"destination": "/queue/q", "transformation": "jms-map-xml", "persistent": "true"}, COMPACT
    )
    run_io(engine)
    [first] = as_json.messages()
    assert first.headers["transformation"] == "jms-map-json"
    assert xstream.read(first.body, True) == MAP
    as_json.send_frame("UNSUBSCRIBE", {"id": "1"})
    plain.send_frame("SUBSCRIBE", {"destination": "/queue/q", "id": "2"})
    run_io(engine)
    [again] = plain.messages()
    assert again.headers["redelivered"] == "true"
    assert again.headers["transformation"] == "jms-map-xml"
    assert again.body == xstream.write(MAP, False)


def test_one_view_for_a_topics_subscribers_alike_and_none_for_the_rest() -> None:
    message = Message(1, "ID-1", "/topic/t", {"transformation": "jms-map-json"}, J)
    as_xml = transforming.view(message, "jms-map-xml")
    assert as_xml is not message
    assert transforming.view(message, "jms-map-xml") is as_xml
    assert as_xml.id == message.id
    assert xstream.read(as_xml.body, False) == xstream.read(J, True)
    assert as_xml.headers == {"transformation": "jms-map-xml"}
    # Nothing changes: the message itself.
    assert transforming.view(message, "jms-map-json") is message
    sized = Message(2, "ID-2", "/topic/t", {"transformation": "jms-map-json"}, J, content_length=True)
    assert transforming.view(sized, "jms-map-xml") is sized


def test_a_send_records_why_a_body_did_not_read() -> None:
    headers = {"transformation": "jms-map-json"}
    assert transforming.sent(headers, b"[1]") == b"[1]"
    assert headers["transformation-error"].startswith("not JSON of one element")
    headers = {"transformation": "jms-map-json"}
    big = b'{"map":{"entry":{"string":["a","' + b"x" * transforming.MAX_CONVERTED + b'"]}}}'
    assert transforming.sent(headers, big) == big
    assert "not converted" in headers["transformation-error"]
    headers = {"transformation": "jms-byte"}
    assert transforming.sent(headers, b"x") == b"x"
    assert headers == {"transformation": "jms-byte"}


def test_a_send_without_the_header_is_not_looked_at() -> None:
    engine = new_engine()
    producer, consumer = Peer(engine), Peer(engine)
    consumer.send_frame("SUBSCRIBE", {"destination": "/queue/q", "id": "1", "transformation": "jms-map-json"})
    producer.send_frame("SEND", {"destination": "/queue/q"}, COMPACT)
    [frame] = consumer.messages()
    assert frame.body == COMPACT
    assert frame.headers["transformation"] == "jms-map-json"
