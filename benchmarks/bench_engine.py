"""The broker core's cost per message without sockets: 1 KiB SEND frames parsed, routed to
one auto-ack consumer on a queue (or topic), MESSAGE bytes built.  The hot path minus the
event loop and the kernel, so that a change to it shows above the noise of a shared machine.

Run: ``python benchmarks/bench_engine.py [--messages N] [--destination /topic/x] [--secured]
[--persistent]``.  ``--secured``: a user logs in and authorization entries are checked
(broker/security).  ``--persistent``: ``persistent:true`` SENDs, every store write built
as for LevelDB and then dropped by a committer that says each batch is durable at once
(the core's own cost of persistence; the writer thread's is ``bench_persist_cpu.py``'s).
Prints SEND->MESSAGE/s and microseconds each (best of 5), in CPU time: on a machine
others share, wall time mostly measures them.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from broker.core.clock import Clock
from broker.core.engine import Engine
from broker.security.guard import Security
from config.model import Authentication, Authorization, AuthorizationEntry, Password, User
from protocol import V1_2, Frame, FrameParser, encode_frame
from store.api import Stores
from store.memory import MemoryDatabase, memory_stores, memory_temp_store
from store.persistent import MessageStore
from store.worker import InlineWorker

if TYPE_CHECKING:
    from collections.abc import Callable

    from store.api import Batch

REPEATS = 5
BATCH = 1000


class CountingOutbox:
    """Takes what the engine writes, counting frames."""

    def __init__(self) -> None:
        self.frames = 0

    def push(self, parts: tuple[bytes, ...]) -> None:
        self.frames += 1

    def hold(self) -> None: ...
    def release(self) -> None: ...
    def pause_reading(self) -> None: ...
    def resume_reading(self) -> None: ...
    def close(self) -> None: ...

    def fail(self, exc: BaseException) -> None:
        raise exc


class DroppingCommitter:
    """Takes each batch and says it is durable at once, writing nothing: the engine's side
    of persistence alone (nothing is read back: the consumer keeps up)."""

    def submit_batch(self, batch: Batch, on_durable: Callable[[], None] | None = None) -> None:
        if on_durable is not None:
            on_durable()

    def get(self, key: bytes) -> bytes | None:
        return None

    def range(
        self, start: bytes, stop: bytes, limit: int | None = None, *, keys_only: bool = False
    ) -> list[tuple[bytes, bytes]]:
        return []

    def close(self, timeout: float = 30.0) -> None:
        return None


def dropping_stores() -> Stores:
    store = MessageStore(MemoryDatabase("dropped"))
    store.use_committer(DroppingCommitter())
    return Stores(messages=store, temp=memory_temp_store(), worker=InlineWorker())


def security() -> Security:
    users = Authentication(users=(User("app", Password("plain", "pw"), frozenset({"users"})),))
    entries = (
        AuthorizationEntry("queue", ">", frozenset({"users"}), frozenset({"users"}), frozenset({"users"})),
        AuthorizationEntry("topic", ">", frozenset({"users"}), frozenset({"users"}), frozenset({"users"})),
        AuthorizationEntry("queue", "SECRET.>", frozenset({"admins"}), frozenset({"admins"}), frozenset()),
    )
    return Security(users, Authorization(entries=entries))


def run(destination: str, count: int, secured: bool = False, persistent: bool = False) -> float:
    stores = dropping_stores() if persistent else memory_stores()
    engine = Engine(clock=Clock(1_000_000), stores=stores, guard=security() if secured else None)
    producer, consumer = CountingOutbox(), CountingOutbox()
    sender, receiver = engine.open_session(producer), engine.open_session(consumer)
    for session in (sender, receiver):
        engine.handle(session, Frame("CONNECT", {"accept-version": "1.2", "login": "app", "passcode": "pw"}))
    engine.handle(receiver, Frame("SUBSCRIBE", {"destination": destination, "id": "1"}))
    engine.flush()
    headers = {"destination": destination, "content-length": "1024"}
    if persistent:
        headers["persistent"] = "true"
    send = Frame("SEND", headers, b"x" * 1024)
    wire = encode_frame(send, V1_2) * BATCH
    parser = FrameParser()
    parser.version = V1_2
    start = time.process_time()
    for _ in range(count // BATCH):
        parser.feed(wire)
        while (frame := parser.next_frame()) is not None:
            engine.handle(sender, frame)
        engine.flush()
    elapsed = time.process_time() - start
    assert consumer.frames >= count // BATCH * BATCH, consumer.frames
    return elapsed


def main() -> None:
    arguments = argparse.ArgumentParser(description=__doc__)
    arguments.add_argument("--messages", type=int, default=100_000)
    arguments.add_argument("--destination", default="/queue/bench")
    arguments.add_argument("--secured", action="store_true")
    arguments.add_argument("--persistent", action="store_true")
    options = arguments.parse_args()
    best = min(
        run(options.destination, options.messages, options.secured, options.persistent)
        for _ in range(REPEATS)
    )
    rate = options.messages / best
    each = best / options.messages * 1e6
    secured = ", authorization on" if options.secured else ""
    persistent = ", persistent" if options.persistent else ""
    print(
        f"{options.destination} SEND->MESSAGE, 1 KiB{secured}{persistent}: "
        f"{rate:>10,.0f} msgs/s ({each:.2f} us each)"
    )


if __name__ == "__main__":
    main()
