"""Bounded memory over real TCP: swap to the LevelDB temp store, flow control, seed 002."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from broker.core.base.settings import CoreSettings
from tests.clients import client, eventually
from tests.conftest import BrokerServer, start_broker
from tests.stomp_raw import RawClient

pytestmark = pytest.mark.integration

KB = 1024
BODY = "x" * 1000


@contextmanager
def limited(tmp_path: Path, **settings: object) -> Iterator[BrokerServer]:
    thread = start_broker(tmp_path / "data", core=CoreSettings(**settings))  # type: ignore[arg-type]
    try:
        yield BrokerServer("127.0.0.1", thread.port, thread)
    finally:
        thread.stop()


@pytest.fixture
def small_broker(tmp_path: Path) -> Iterator[BrokerServer]:
    with limited(tmp_path, memory_limit=512 * KB, temp_limit=64 << 20) as broker:
        yield broker


@pytest.mark.parametrize("prioritized", [True, False])
def test_queue_far_past_the_memory_limit(tmp_path: Path, prioritized: bool) -> None:
    n = 3000  # ~3 MB of bodies, six times the memory limit
    settings = {"memory_limit": 512 * KB, "temp_limit": 64 << 20, "prioritized_messages": prioritized}
    with limited(tmp_path, **settings) as small_broker:
        with client(small_broker.port) as p:
            for i in range(n):
                p.send("/queue/big", f"{i:06d}{BODY}", priority=str(9 if i % 100 == 0 else 4))
            p.sync()
        engine = small_broker.engine
        assert engine.queues["/queue/big"].cursor.disk_total > n // 2
        assert engine.usage.memory.peak <= 512 * KB
        assert engine.usage.temp.peak > 1 << 20
        with client(small_broker.port) as c:
            c.subscribe("/queue/big")
            got = [int(m.body[:6]) for m in c.listener.wait_messages(n, timeout=30)]
        # Priority 9 first with prioritizedMessages, else in the order they were sent.
        high = [i for i in range(n) if i % 100 == 0]
        assert got == (high + [i for i in range(n) if i % 100] if prioritized else list(range(n)))
        # Nothing of the messages left in memory or on disk (the queue itself is charged too,
        # and the levels its cursor made).
        levels = engine.queues["/queue/big"].cursor.charged_bytes
        eventually(
            lambda: (
                engine.usage.temp.used == 0
                and engine.usage.memory.used == engine.destinations.charged + levels
            )
        )


def test_topic_with_a_fast_and_a_slow_subscriber(small_broker: BrokerServer) -> None:
    n = 2000
    slow = RawClient(small_broker.port)
    slow.connect()
    slow.send("SUBSCRIBE", {"destination": "/topic/feed", "id": "s", "receipt": "r"})
    assert slow.recv().command == "RECEIPT"
    with client(small_broker.port) as fast, client(small_broker.port) as p:
        fast.subscribe("/topic/feed")
        for i in range(n):
            p.send("/topic/feed", f"{i:06d}{BODY}")
        p.sync()
        assert [int(m.body[:6]) for m in fast.listener.wait_messages(n, timeout=30)] == list(range(n))
    # The slow one has read nothing yet: its backlog sits on disk, not in memory.
    assert small_broker.engine.usage.memory.peak <= 512 * KB
    got = [int(slow.recv(10).body[:6]) for _ in range(n)]
    assert got == list(range(n))


def test_tiny_temp_limit_seed_002(tmp_path: Path) -> None:
    """A temp limit far below anything allocated up front: everything arrives, the producer resumes."""
    with limited(tmp_path, memory_limit=256 * KB, temp_limit=10 * KB) as broker:
        n = 2000
        done = threading.Event()
        received: list[int] = []

        def produce() -> None:
            with client(broker.port) as p:
                for i in range(n):
                    p.send("/queue/seed2", f"{i:06d}{BODY}")
                p.sync()
            done.set()

        with client(broker.port) as c:
            c.subscribe("/queue/seed2", ack="client-individual", **{"activemq.prefetchSize": "50"})
            producer = threading.Thread(target=produce)
            producer.start()
            while len(received) < n:
                msgs = c.listener.wait_messages(len(received) + 1, timeout=30)
                for m in msgs[len(received) :]:
                    received.append(int(m.body[:6]))
                    c.ack(m)
            producer.join(30)
        assert done.is_set()
        assert received == list(range(n))
        assert broker.engine.flow.stats.blocks >= 1
        assert broker.engine.flow.stats.blocked_now == 0


def test_producer_and_consumer_on_one_connection(tmp_path: Path) -> None:
    with limited(tmp_path, memory_limit=128 * KB, temp_limit=32 * KB) as broker:
        n = 1500
        with client(broker.port) as both:
            both.subscribe("/queue/self", ack="client-individual", **{"activemq.prefetchSize": "2000"})
            acked = 0

            def ack_all() -> None:
                nonlocal acked
                while acked < n:
                    msgs = both.listener.wait_messages(acked + 1, timeout=30)
                    for m in msgs[acked:]:
                        both.ack(m)
                    acked = len(msgs)

            acker = threading.Thread(target=ack_all)
            acker.start()
            for i in range(n):
                both.send("/queue/self", f"{i:06d}{BODY}")
            acker.join(60)
            assert acked == n
            assert [int(m.body[:6]) for m in both.listener.messages] == list(range(n))
        assert broker.engine.flow.stats.blocks >= 1


def test_send_fail_if_no_space_answers_error_and_loses_nothing_else(tmp_path: Path) -> None:
    with limited(tmp_path, memory_limit=64 * KB, temp_limit=16 * KB, send_fail_if_no_space=True) as broker:
        raw = RawClient(broker.port)
        raw.connect()
        accepted = 0
        for i in range(500):
            raw.send("SEND", {"destination": "/queue/full", "receipt": str(i)}, f"{i:06d}{BODY}".encode())
            frame = raw.recv()
            if frame.command == "ERROR":
                assert frame.headers["receipt-id"] == str(i)
                assert "sendFailIfNoSpace" in frame.body.decode()
                break
            accepted += 1
        else:
            raise AssertionError("the broker never ran out of space")
        # Refused alone: the connection goes on.
        assert raw.sync() == []
        raw.close()
        with client(broker.port) as c:
            c.subscribe("/queue/full")
            got = [int(m.body[:6]) for m in c.listener.wait_messages(accepted, timeout=20)]
            assert got == list(range(accepted))
            assert len(c.through_mark("/queue/full")) == accepted


def test_selective_consumer_gets_messages_deep_in_a_swapped_backlog(small_broker: BrokerServer) -> None:
    with client(small_broker.port) as p:
        for i in range(3000):
            p.send("/queue/deep", f"{i:06d}{BODY}", kind="bulk")
        for i in range(5):
            p.send("/queue/deep", f"{9000 + i:06d}{BODY}", kind="rare")
        p.sync()
    queue = small_broker.engine.queues["/queue/deep"]
    assert queue.cursor.disk_total > 1500
    with client(small_broker.port) as c:
        c.subscribe("/queue/deep", selector="kind = 'rare'")
        assert [int(m.body[:6]) for m in c.listener.wait_messages(5, timeout=20)] == list(range(9000, 9005))
    assert queue.cursor.count == 3000
    with client(small_broker.port) as rest:
        rest.subscribe("/queue/deep")
        assert [int(m.body[:6]) for m in rest.listener.wait_messages(3000, timeout=30)] == list(range(3000))


def test_producer_that_hangs_up_while_blocked_loses_nothing(tmp_path: Path) -> None:
    with limited(tmp_path, memory_limit=128 * KB, temp_limit=16 * KB) as broker:
        raw = RawClient(broker.port)
        raw.connect()
        n = 600
        for i in range(n):
            raw.send("SEND", {"destination": "/queue/hangup"}, f"{i:06d}{BODY}".encode())
        eventually(lambda: broker.engine.flow.stats.blocks >= 1)
        raw.close()
        with client(broker.port) as c:
            c.subscribe("/queue/hangup")
            assert [int(m.body[:6]) for m in c.listener.wait_messages(n, timeout=30)] == list(range(n))
