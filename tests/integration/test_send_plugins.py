"""timeStampingBrokerPlugin and forcePersistencyModeBrokerPlugin over TCP, on stompd and
on the real ActiveMQ 5.17 where it is installed, one activemq.xml and the same frames: a
message sent with no expiry gets zeroExpirationOverride, a long time to live is cut to
ttlCeiling (both counted from the broker's time stamp), every message comes out
``persistent:true``, and an expired message from a queue ``dropOnly`` names never reaches
ActiveMQ.DLQ."""

from __future__ import annotations

import itertools

import pytest

from protocol.frames import Frame
from tests.side_by_side import side_by_side
from tests.stomp_raw import RawClient

pytestmark = pytest.mark.integration

PLUGINS = (
    "<plugins>"
    '<timeStampingBrokerPlugin zeroExpirationOverride="20000" ttlCeiling="30000"/>'
    '<forcePersistencyModeBrokerPlugin persistenceFlag="true"/>'
    '<discardingDLQBrokerPlugin dropAll="false" dropOnly="plugins\\.drop\\..*"/>'
    "</plugins>"
)
_names = itertools.count(1)


configured_activemq, port = side_by_side(PLUGINS)


def through(port: int, **headers: str) -> Frame:
    """The MESSAGE a queue subscriber gets of one SEND with ``headers``."""
    destination = f"/queue/plugins.q{next(_names)}"
    c = RawClient(port)
    c.connect("1.2")
    c.send("SEND", {"destination": destination, "receipt": "r", **headers}, b"x")
    assert c.recv().command == "RECEIPT"
    c.send("SUBSCRIBE", {"destination": destination, "id": "s"})
    frame = c.recv()
    c.close()
    assert frame.command == "MESSAGE", frame
    return frame


def ttl_of(frame: Frame) -> int:
    return int(frame.headers["expires"]) - int(frame.headers["timestamp"])


def test_a_message_with_no_expiry_gets_the_override(port: int) -> None:
    assert ttl_of(through(port)) == 20000


def test_a_time_to_live_is_cut_to_the_ceiling(port: int) -> None:
    frame = through(port)
    far = int(frame.headers["timestamp"]) + 3_600_000
    assert ttl_of(through(port, expires=str(far))) == 30000


def test_every_message_comes_out_persistent(port: int) -> None:
    assert through(port).headers["persistent"] == "true"
    assert through(port, persistent="false").headers["persistent"] == "true"


def test_a_dead_letter_drop_only_names_is_dropped(port: int) -> None:
    n = next(_names)
    dropped, kept = f"/queue/plugins.drop.q{n}", f"/queue/plugins.keep.q{n}"
    c = RawClient(port)
    c.connect("1.2")
    for name in (dropped, kept):
        # Expired when it comes: dead-lettered at once, or when first dispatched.
        c.send("SEND", {"destination": name, "expires": "1", "receipt": "r"}, name.encode())
        assert c.recv().command == "RECEIPT"
        c.send("SUBSCRIBE", {"destination": name, "id": name, "receipt": "s"})
        assert c.recv().command == "RECEIPT"
    c.send("SEND", {"destination": "/queue/ActiveMQ.DLQ", "receipt": "m"}, b"mark")
    assert c.recv().command == "RECEIPT"
    c.send("SUBSCRIBE", {"destination": "/queue/ActiveMQ.DLQ", "id": "dlq"})
    frames = []
    while (frame := c.recv()).body != b"mark":
        frames.append(frame)
    c.close()
    assert [(f.body, f.headers["original-destination"]) for f in frames] == [(kept.encode(), kept)]
