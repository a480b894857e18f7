"""Bytes waiting to be written to a connection are bounded, over real TCP (issue 10, item 4)."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

from broker.core.base.settings import CoreSettings
from broker.io.limits import ConnectionLimits
from protocol.encoder import encode_frame
from protocol.frames import Frame
from tests.conftest import start_broker
from tests.stomp_raw import RawClient

pytestmark = pytest.mark.integration

KB = 1024
#: What a connection may hold while the store makes its dispatches durable.
HELD_HIGH_WATER = ConnectionLimits().held_high_water


def test_an_auto_ack_consumer_of_a_stored_backlog_never_gets_more_than_the_held_high_water_mark_queued(
    tmp_path: Path,
) -> None:
    thread = start_broker(tmp_path / "data", core=CoreSettings(memory_limit=64 * KB))
    try:
        producer = RawClient(thread.port)
        producer.connect()
        for i in range(2000):
            headers = {"destination": "/queue/backlog", "persistent": "true"}
            if i % 100 == 99:
                headers["receipt"] = str(i)
            producer.send("SEND", headers, b"%06d" % i + b"x" * 1000)
            if i % 100 == 99:
                assert producer.recv(10).command == "RECEIPT"
        consumer = RawClient(thread.port)
        consumer.connect()
        consumer.send("SUBSCRIBE", {"destination": "/queue/backlog", "id": "1"})
        got = [int(consumer.recv(10).body[:6]) for _ in range(2000)]
        assert got == list(range(2000))
        assert thread.broker is not None
        # Every dispatch waited for its mark to be durable, with the outbox held: it
        # filled to its held high-water mark (plus the frame that crossed it), no further.
        peaks = [c._outbox.peak_pending for c in thread.broker.server.connections if c._outbox is not None]
        assert max(peaks) <= HELD_HIGH_WATER + 2 * KB
    finally:
        thread.stop()


def test_a_client_that_sends_and_never_reads_is_cut_as_a_slow_consumer(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    limits = ConnectionLimits(max_pending=256 * KB)
    thread = start_broker(tmp_path / "data", limits=limits)
    try:
        flood = RawClient(thread.port, timeout=10)
        flood.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 * KB)
        flood.connect()
        # Large receipt ids make large RECEIPTs: 30,000 of them (7 MB) cannot all wait in
        # the kernel's buffers (4 MB at most here) and the broker's 256 KB.
        frames = [
            encode_frame(Frame("SEND", {"destination": "/queue/flood", "receipt": f"{'r' * 200}{i}"}), "1.2")
            for i in range(30_000)
        ]
        flood.sock.settimeout(10)
        try:
            flood.sock.sendall(b"".join(frames))
        except OSError:
            pass  # the broker stopped reading once it cut the connection
        assert thread.broker is not None
        engine = thread.broker.engine
        deadline = time.monotonic() + 10
        while len(engine.sessions) and time.monotonic() < deadline:
            time.sleep(0.01)  # waits for the cut to happen
        assert not engine.sessions, "the flooding client was never cut"
        assert "slow consumer" in caplog.text
        # (That it was told with an ERROR, when it reads to the end, is shown on a mock
        # transport in tests/broker/test_outbox.py: a client that does not read cannot
        # always be told here, since the kernel may reset the connection first, as
        # nats-server's cut slow consumers see EOF.)
        flood.close()
        # The broker carries on, with every message it receipted.
        other = RawClient(thread.port)
        other.connect()
        other.send("SUBSCRIBE", {"destination": "/queue/flood", "id": "1", "receipt": "s"})
        assert other.recv(5).command == "RECEIPT"
        assert other.recv(5).command == "MESSAGE"
    finally:
        thread.stop()
