"""Bad input: one clear ERROR frame, and no harm to anyone else.  A stream that cannot be
trusted (framing, size, before CONNECT) is closed cleanly after it; a frame read whole
and refused for what it means keeps the connection (tests/integration/test_refusals.py)."""

from __future__ import annotations

import pytest

from tests.clients import client
from tests.conftest import BrokerServer
from tests.stomp_raw import RawClient

pytestmark = pytest.mark.integration


def error_then_close(raw: RawClient) -> str:
    frame = raw.recv()
    assert frame.command == "ERROR", frame
    assert frame.headers["message"]
    assert raw.closed_by_peer()
    return frame.body.decode()


def error_then_open(raw: RawClient) -> str:
    frame = raw.recv()
    assert frame.command == "ERROR", frame
    assert frame.headers["message"]
    assert raw.sync() == []
    return frame.body.decode()


def test_send_before_connect(broker_server: BrokerServer) -> None:
    raw = RawClient(broker_server.port)
    raw.send("SEND", {"destination": "/queue/a"}, b"x")
    assert "CONNECT" in error_then_close(raw)


def test_unknown_command(broker_server: BrokerServer) -> None:
    raw = RawClient(broker_server.port)
    raw.connect()
    raw.send_bytes(b"FROB\n\n\0")
    assert "FROB" in error_then_close(raw)


def test_server_frame_from_client(broker_server: BrokerServer) -> None:
    raw = RawClient(broker_server.port)
    raw.connect()
    raw.send_bytes(b"MESSAGE\ndestination:/queue/a\n\n\0")
    error_then_close(raw)


def test_malformed_header(broker_server: BrokerServer) -> None:
    raw = RawClient(broker_server.port)
    raw.connect()
    raw.send_bytes(b"SEND\ndestination:/queue/a\nnocolon\n\nx\0")
    error_then_close(raw)


@pytest.mark.parametrize("version", ["1.0", "1.1", "1.2"])
def test_nul_in_a_header_is_refused_and_nothing_is_enqueued(
    broker_server: BrokerServer, version: str
) -> None:
    raw = RawClient(broker_server.port)
    raw.connect(version)
    raw.send_bytes(b"SEND\ndestination:/queue/nul\nx:a\0b\nreceipt:r\n\nbody\0")
    assert "header line 2 holds a NUL byte" in error_then_close(raw)
    with client(broker_server.port) as c:
        c.subscribe("/queue/nul")
        c.send("/queue/nul", "after")
        assert c.listener.wait_messages(1)[0].body == "after"


def test_bad_content_length(broker_server: BrokerServer) -> None:
    raw = RawClient(broker_server.port)
    raw.connect()
    raw.send_bytes(b"SEND\ndestination:/queue/a\ncontent-length:2\n\nxyz\0")
    error_then_close(raw)


@pytest.mark.parametrize(
    ("command", "headers", "needle"),
    [
        ("SEND", {}, "destination"),
        ("SUBSCRIBE", {"destination": "/queue/a"}, "id"),
        ("SUBSCRIBE", {"id": "1"}, "destination"),
        ("UNSUBSCRIBE", {}, "id"),
        ("ACK", {}, "id"),
        ("BEGIN", {}, "transaction"),
    ],
)
def test_missing_required_headers(
    broker_server: BrokerServer, command: str, headers: dict[str, str], needle: str
) -> None:
    raw = RawClient(broker_server.port)
    raw.connect()
    raw.send(command, {**headers, "receipt": "r1"})
    frame = raw.recv()
    assert frame.command == "ERROR"
    assert frame.headers["receipt-id"] == "r1"
    assert needle in frame.body.decode()
    assert raw.sync() == []


@pytest.mark.parametrize("destination", ["/queue/", "/queue/a,", " "])
def test_bad_destination_name(broker_server: BrokerServer, destination: str) -> None:
    # A name without a prefix is a queue (ActiveMQ's rule): only an empty one is wrong.
    raw = RawClient(broker_server.port)
    raw.connect()
    raw.send("SEND", {"destination": destination}, b"x")
    assert "empty name" in error_then_open(raw)


@pytest.mark.parametrize("bad", [{"priority": "high"}, {"priority": "4.5"}, {"expires": "soon"}])
def test_bad_header_values(broker_server: BrokerServer, bad: dict[str, str]) -> None:
    raw = RawClient(broker_server.port)
    raw.connect()
    raw.send("SEND", {"destination": "/queue/a", **bad}, b"x")
    error_then_open(raw)


def test_frame_too_large(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from broker.io.limits import ConnectionLimits
    from tests.conftest import start_broker

    thread = start_broker(tmp_path, limits=ConnectionLimits(max_frame_size=1024))
    try:
        raw = RawClient(thread.port)
        raw.connect()
        raw.send("SEND", {"destination": "/queue/a"}, b"x" * 5000)
        assert "1024" in error_then_close(raw)
    finally:
        thread.stop()


def test_duplicate_subscription_id(broker_server: BrokerServer) -> None:
    raw = RawClient(broker_server.port)
    raw.connect()
    raw.send("SUBSCRIBE", {"destination": "/queue/a", "id": "1"})
    raw.send("SUBSCRIBE", {"destination": "/queue/b", "id": "1"})
    error_then_open(raw)


def test_garbage_bytes_do_not_hurt_other_clients(broker_server: BrokerServer) -> None:
    with client(broker_server.port) as good:
        good.subscribe("/queue/safe")
        for junk in [
            b"\xff\xfe\x00garbage",
            b"CONNECT\nheart-beat:x,y\n\n\0",
            b"\0\0\0",
            b"SEND\n" + b"a" * 20000,
        ]:
            raw = RawClient(broker_server.port)
            raw.send_bytes(junk)
            raw.closed_by_peer(2)
            raw.close()
        good.send("/queue/safe", "still here")
        assert good.listener.wait_messages(1)[0].body == "still here"


def test_error_mid_session_gives_back_unacked_messages(broker_server: BrokerServer) -> None:
    with client(broker_server.port) as p:
        p.send("/queue/giveback", "m")
    raw = RawClient(broker_server.port)
    raw.connect()
    raw.send("SUBSCRIBE", {"destination": "/queue/giveback", "id": "1", "ack": "client"})
    assert raw.recv().command == "MESSAGE"
    raw.send_bytes(b"BOGUS\n\n\0")
    error_then_close(raw)
    with client(broker_server.port) as c:
        c.subscribe("/queue/giveback")
        msg = c.listener.wait_messages(1)[0]
        assert msg.body == "m" and msg.headers["redelivered"] == "true"
