"""CONNECT negotiation, receipts, heart-beats: raw frames and stomp.py, all versions."""

from __future__ import annotations

import socket
import time

import pytest

from tests.clients import client
from tests.conftest import BrokerServer
from tests.stomp_raw import RawClient

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("version", ["1.0", "1.1", "1.2"])
def test_stomp_py_connects_with_each_version(broker_server: BrokerServer, version: str) -> None:
    with client(broker_server.port, version) as c:
        c.subscribe("/queue/hello")
        c.send("/queue/hello", "hi")
        assert c.listener.wait_messages(1)[0].body == "hi"


def test_connected_headers(broker_server: BrokerServer) -> None:
    raw = RawClient(broker_server.port)
    connected = raw.connect("1.0,1.1,1.2", **{"heart-beat": "0,0"})
    assert connected.headers["version"] == "1.2"
    assert connected.headers["server"].startswith("stompd/")
    assert connected.headers["session"]
    assert connected.headers["heart-beat"] == "0,0"


def test_highest_common_version_is_chosen(broker_server: BrokerServer) -> None:
    raw = RawClient(broker_server.port)
    assert raw.connect("1.0,1.1").headers["version"] == "1.1"


def test_no_accept_version_means_1_0(broker_server: BrokerServer) -> None:
    raw = RawClient(broker_server.port)
    raw.send("CONNECT", {"login": "x", "passcode": "y"})
    frame = raw.recv()
    assert frame.command == "CONNECTED"
    assert frame.headers["version"] == "1.0"


def test_stomp_frame_and_no_host_accepted(broker_server: BrokerServer) -> None:
    raw = RawClient(broker_server.port)
    raw.send("STOMP", {"accept-version": "1.2"})
    assert raw.recv().command == "CONNECTED"


def test_unsupported_version_gets_error_and_close(broker_server: BrokerServer) -> None:
    raw = RawClient(broker_server.port)
    raw.send("CONNECT", {"accept-version": "2.0", "host": "x"})
    frame = raw.recv()
    assert frame.command == "ERROR"
    assert "1.2" in frame.body.decode()
    assert raw.closed_by_peer()


def test_receipt_on_every_client_frame(broker_server: BrokerServer) -> None:
    raw = RawClient(broker_server.port)
    raw.connect()
    raw.send("SUBSCRIBE", {"destination": "/queue/r", "id": "s", "receipt": "1"})
    raw.send("SEND", {"destination": "/queue/none", "receipt": "2"}, b"x")
    raw.send("BEGIN", {"transaction": "t", "receipt": "3"})
    raw.send("COMMIT", {"transaction": "t", "receipt": "4"})
    raw.send("UNSUBSCRIBE", {"id": "s", "receipt": "5"})
    raw.send("DISCONNECT", {"receipt": "6"})
    ids = [raw.recv().headers["receipt-id"] for _ in range(6)]
    assert ids == ["1", "2", "3", "4", "5", "6"]
    assert raw.closed_by_peer()


def test_subscribe_receipt_comes_before_any_message(broker_server: BrokerServer) -> None:
    producer = RawClient(broker_server.port)
    producer.connect()
    for i in range(50):
        producer.send("SEND", {"destination": "/queue/early"}, b"m%d" % i)
    producer.send("DISCONNECT", {"receipt": "done"})
    assert producer.recv().command == "RECEIPT"
    consumer = RawClient(broker_server.port)
    consumer.connect()
    consumer.send("SUBSCRIBE", {"destination": "/queue/early", "id": "a", "receipt": "sub"})
    first = consumer.recv()
    assert first.command == "RECEIPT" and first.headers["receipt-id"] == "sub"
    assert [consumer.recv().body for _ in range(50)] == [b"m%d" % i for i in range(50)]


def test_broker_sends_heartbeats(broker_server: BrokerServer) -> None:
    raw = RawClient(broker_server.port)
    connected = raw.connect(**{"heart-beat": "0,200"})
    assert connected.headers["heart-beat"].split(",")[0] == "200"
    raw.sock.settimeout(2)
    start = time.monotonic()
    beats = 0
    while time.monotonic() - start < 1.0:
        data = raw.sock.recv(10)
        beats += data.count(b"\n")
    assert beats >= 3


def test_client_that_stops_beating_is_closed(broker_server: BrokerServer) -> None:
    raw = RawClient(broker_server.port)
    connected = raw.connect(**{"heart-beat": "200,0"})
    assert connected.headers["heart-beat"].split(",")[1] == "200"
    # Keep beating for a while: the connection stays up (tolerant by default).
    for _ in range(5):
        time.sleep(0.15)
        raw.send_bytes(b"\n")
    raw.send("SEND", {"destination": "/queue/hb", "receipt": "alive"}, b"x")
    assert raw.recv().headers["receipt-id"] == "alive"
    # Then go silent: closed after two read-check periods of 200 ms (plus a tick), as ActiveMQ.
    start = time.monotonic()
    assert raw.closed_by_peer(timeout=3)
    assert time.monotonic() - start < 2.0


def test_connection_without_connect_is_closed_eventually(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from broker.io.limits import ConnectionLimits
    from tests.conftest import start_broker

    thread = start_broker(tmp_path, limits=ConnectionLimits(connect_timeout=0.3))
    try:
        with socket.create_connection(("127.0.0.1", thread.port), timeout=3) as sock:
            assert sock.recv(100) == b""
    finally:
        thread.stop()
