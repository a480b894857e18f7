"""What the engine tests share (tests/broker/harness.py drives the engine; this module
builds engines and runs the steps several test modules take): a swapping engine over an
in-memory store that counts its reads, an engine over a real message store, sends and
their bodies, a client-individual consumer that NACKs, the admin operations run to the
end, an authorization entry, an event sink that records its calls, a peer with n
subscriptions and an engine whose chores' wakes are counted.

Moved here from the test modules that defined them (test_swap, test_persistence,
test_admin, test_redelivery, test_security, test_observe, test_many), which still import them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from broker.core.admin.service import AdminService
from broker.core.base.clock import Clock
from broker.core.base.message import Message
from broker.core.base.observe import EventSink
from broker.core.base.settings import CoreSettings
from broker.core.engine import Engine
from config.model import AuthorizationEntry
from protocol.frames import Frame
from store.api import Stores
from store.memory import MemoryDatabase, memory_message_store, memory_temp_store
from store.persistent import MessageStore
from store.temp import TempStore
from store.worker import DeferredWorker
from tests.broker.harness import Peer, admin, run_io

KB = 1024


class CountingStore(MemoryDatabase):
    """Counts the records read, to show that scans do not re-read the backlog."""

    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    def range(self, start: bytes, stop: bytes, limit: int | None = None, *, keys_only: bool = False):  # type: ignore[no-untyped-def]
        rows = super().range(start, stop, limit, keys_only=keys_only)
        self.reads += len(rows)
        return rows


def swapping_engine(
    memory: int = 64 * KB, temp: int = 64 << 20, **settings: object
) -> tuple[Engine, CountingStore]:
    store = CountingStore()
    core = CoreSettings(memory_limit=memory, temp_limit=temp, page_size=50, **settings)  # type: ignore[arg-type]
    stores = Stores(messages=memory_message_store(), temp=TempStore(store), worker=DeferredWorker())
    engine = Engine(core, Clock(1_000_000), stores=stores)
    return engine, store


def send(
    peer: Peer, destination: str, n: int, *, priority: int | None = None, start: int = 0, **headers: str
) -> None:
    for i in range(start, start + n):
        h = {"destination": destination, **headers}
        if priority is not None:
            h["priority"] = str(priority)
        peer.send_frame("SEND", h, b"%06d" % i + b"x" * 1000)
    peer.engine.flush()


def bodies(peer: Peer) -> list[int]:
    return [int(f.body[:6]) for f in peer.received() if f.command == "MESSAGE"]


class StoredEngine:
    def __init__(self, path: Path, **settings: object) -> None:
        self.posted: list[Callable[[], None]] = []
        self.store = MessageStore.open(path)
        self.store.start_committer(self.posted.append, lambda exc: None)
        core = CoreSettings(memory_limit=64 * KB, page_size=50, **settings)  # type: ignore[arg-type]
        stores = Stores(messages=self.store, temp=memory_temp_store(), worker=DeferredWorker())
        self.engine = Engine(core, Clock(1_000_000), stores=stores)
        self.recovered = self.engine.recover()

    def settle(self) -> None:
        """Wait for the store, then run its completions and the worker's as the loop would."""
        for _ in range(5):
            self.engine.flush()
            assert self.store.committer is not None
            self.store.committer.flush_wait()
            posted, self.posted[:] = list(self.posted), []
            for callback in posted:
                self.engine.after_io(callback)
            run_io(self.engine)

    def close(self) -> None:
        self.settle()
        self.store.close()


BODY = b"x" * 200


def ops(engine: Engine) -> AdminService:
    return admin(engine)


def filled(n: int = 600) -> tuple[Engine, Peer]:
    """``n`` messages with ``n`` = 0..n-1: priorities 9, 4 and 0 in turn, every third
    persistent, in a queue that dispatches them by priority."""
    engine, _ = swapping_engine(prioritized_messages=True)
    producer = Peer(engine)
    for i in range(n):
        headers = {"destination": "/queue/q", "n": str(i), "priority": str((9, 4, 0)[i % 3])}
        if i % 2:
            headers["persistent"] = "true"
        producer.send_frame("SEND", headers, BODY)
    queue = engine.queues["/queue/q"]
    assert queue.cursor.disk_total > n // 2 and queue.cursor.mem_count > 0
    return engine, producer


CLIENT_INDIVIDUAL = {"ack": "client-individual"}


def consumer(engine: Engine, destination: str, version: str = "1.2", **headers: str) -> Peer:
    peer = Peer(engine, version)
    peer.send_frame("SUBSCRIBE", {"destination": destination, "id": "1", **CLIENT_INDIVIDUAL, **headers})
    return peer


def nack(peer: Peer, frame: Frame, **headers: str) -> None:
    if peer.session.version == "1.2":
        peer.send_frame("NACK", {"id": frame.headers["ack"], **headers})
    else:
        ids = {"message-id": frame.headers["message-id"], "subscription": frame.headers["subscription"]}
        peer.send_frame("NACK", {**ids, **headers})


def nack_until_dead(peer: Peer) -> int:
    """NACK each delivery until none comes back; how many deliveries there were."""
    deliveries = 0
    while got := peer.messages():
        (frame,) = got
        deliveries += 1
        nack(peer, frame)
        assert deliveries < 100, "never dead-lettered"
    return deliveries


def entry(
    kind: str | None, pattern: str, read: str = "", write: str = "", admin: str = ""
) -> AuthorizationEntry:
    def groups(text: str) -> frozenset[str]:
        return frozenset(filter(None, text.split(",")))

    return AuthorizationEntry(kind, pattern, groups(read), groups(write), groups(admin))  # type: ignore[arg-type]


class Recorder(EventSink):
    """Keeps (event, destination, cause-or-target) for each call."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def enqueued(self, message: Message) -> None:
        self.calls.append(("enqueue", message.destination))

    def dispatched(self, message: Message, consumer: str, subscription: str, auto: bool) -> None:
        self.calls.append(("dispatch", message.destination, auto))

    def acked(self, message: Message, consumer: str, subscription: str) -> None:
        self.calls.append(("ack", message.destination))

    def nacked(self, message: Message, consumer: str, subscription: str) -> None:
        self.calls.append(("nack", message.destination))

    def redelivered(self, message: Message, cause: str) -> None:
        self.calls.append(("redeliver", message.destination, cause))

    def expired(self, message: Message, target: str | None) -> None:
        self.calls.append(("expire", message.destination, target))

    def dead_lettered(self, message: Message, cause: str, target: str) -> None:
        self.calls.append(("dead-letter", message.destination, cause, target))

    def moved(self, message: Message, source: str, target: str) -> None:
        self.calls.append(("move", message.headers["n"], source, target))

    def removed(self, message: Message) -> None:
        self.calls.append(("remove", message.headers["n"], message.destination))

    def flow_blocked(self, destination: str, size: int, producer: str, cause: str) -> None:
        self.calls.append(("flow-block", destination, cause))

    def flow_released(self, destination: str, size: int, producer: str, cause: str, wait_ms: int) -> None:
        self.calls.append(("flow-release", destination, cause, wait_ms))


def subscribed(engine: Engine, n: int, destination: str, **headers: str) -> Peer:
    peer = Peer(engine)
    for i in range(n):
        peer.send_frame("SUBSCRIBE", {"destination": destination, "id": str(i), **headers})
    return peer


def driven(engine: Engine) -> list[int]:
    """Install a wake, as the edge does; returns the list of wake calls."""
    woken: list[int] = []
    engine.chores.wake = lambda: woken.append(1)
    return woken
