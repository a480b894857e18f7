"""The broker core's cost per message without sockets: 1 KiB SEND frames parsed, routed to
one auto-ack consumer on a queue (or topic), MESSAGE bytes built.  The hot path minus the
event loop and the kernel, so that a change to it shows above the noise of a shared machine.

Run: ``python benchmarks/bench_engine.py [--messages N] [--destination /topic/x]
[--subscribers N] [--secured] [--persistent] [--export] [--io]``.  ``--subscribers``: that many
auto-ack consumers (a topic's fan-out: ``--destination /topic/x --subscribers 4`` is
topic 1->4).  ``--secured``: a user logs in and authorization entries are
checked (broker/security).  ``--persistent``: ``persistent:true`` SENDs, every store write
built as for LevelDB and then dropped by a committer that says each batch is durable at
once (the core's own cost of persistence; the writer thread's is ``bench_persist_cpu.py``'s).
``--export``: the event export on (broker/export, into a temporary directory, its
writer thread running; ticked as the broker ticks, every 50 ms of the run's CPU; malloc
tuned as ``broker.app.tune_malloc`` tunes the broker's process for it), and
the engine's thread's CPU printed beside the process's (the writer's threads included,
and an older checkout's writer process).
``--io``: every session writes through the IO edge's own ``broker.io.outbox.Outbox``
(its coalescing, counting and flow-control checks) onto a transport that takes what it
is given, its one write a turn run when the batch's turn ends, instead of a counter of
frames: the write path the broker runs, less the kernel.
Prints SEND->MESSAGE/s and microseconds each (best of 5), in CPU time: on a machine
others share, wall time mostly measures them.
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from broker.core.base.clock import Clock
from broker.core.base.observe import Traffic
from broker.core.engine import Engine
from broker.security.guard import Security
from config.model import Authentication, Authorization, AuthorizationEntry, Password, User
from protocol import V1_2, Frame, FrameParser, encode_frame
from store.api import Stores
from store.memory import MemoryDatabase, memory_stores, memory_temp_store
from store.persistent import MessageStore
from store.worker import DeferredWorker

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


class SinkTransport:
    """What an Outbox writes to: takes every write, never full, never closing (the
    Outbox's own Traffic counts what it wrote)."""

    def write(self, data: bytes) -> None: ...

    def is_closing(self) -> bool:
        return False

    def get_write_buffer_size(self) -> int:
        return 0

    def pause_reading(self) -> None: ...
    def resume_reading(self) -> None: ...


class TurnLoop:
    """The little of an event loop an Outbox uses: ``call_soon`` runs at the turn's end."""

    def __init__(self) -> None:
        self._soon: list[Callable[[], object]] = []

    def call_soon(self, callback: Callable[[], object]) -> None:
        self._soon.append(callback)

    def time(self) -> float:
        return 0.0

    def end_turn(self) -> None:
        soon, self._soon = self._soon, []
        for callback in soon:
            callback()


class FramesWritten:
    """An Outbox on a transport that takes everything, with CountingOutbox's count of frames."""

    def __init__(self, loop: TurnLoop) -> None:
        from broker.io.outbox import Outbox

        self.traffic = Traffic()
        self.outbox = Outbox(loop, SinkTransport(), self.fail, lambda: None, traffic=self.traffic)  # type: ignore[arg-type]

    @property
    def frames(self) -> int:
        return self.traffic.frames_out

    @staticmethod
    def fail(exc: BaseException) -> None:
        raise exc


def dropping_stores() -> Stores:
    store = MessageStore(MemoryDatabase("dropped"))
    store.use_committer(DroppingCommitter())
    return Stores(messages=store, temp=memory_temp_store(), worker=DeferredWorker())


def security() -> Security:
    users = Authentication(users=(User("app", Password("plain", "pw"), frozenset({"users"})),))
    entries = (
        AuthorizationEntry("queue", ">", frozenset({"users"}), frozenset({"users"}), frozenset({"users"})),
        AuthorizationEntry("topic", ">", frozenset({"users"}), frozenset({"users"}), frozenset({"users"})),
        AuthorizationEntry("queue", "SECRET.>", frozenset({"admins"}), frozenset({"admins"}), frozenset()),
    )
    return Security(users, Authorization(entries=entries))


def cpu_with_children() -> float:
    """This process's CPU and its finished children's (an older checkout's export writer)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def run(
    destination: str,
    count: int,
    secured: bool = False,
    export: bool = False,
    persistent: bool = False,
    subscribers: int = 1,
    io: bool = False,
) -> tuple[float, float]:
    """CPU seconds of the process and of this thread (the engine's) for ``count`` messages."""
    clock = Clock(int(time.time() * 1000))
    stores = dropping_stores() if persistent else memory_stores()
    engine = Engine(clock=clock, stores=stores, guard=security() if secured else None)
    exporter = None
    if export:
        from broker.core.admin.readout import Readout
        from broker.export.exporter import Exporter, ExportSettings

        tmp = tempfile.TemporaryDirectory(prefix="bench-engine-")
        exporter = Exporter(ExportSettings(Path(tmp.name)), Readout(engine))
        exporter.start()
    loop = TurnLoop()
    if io:
        written = [FramesWritten(loop) for _ in range(subscribers + 1)]
        producer: Any = written[0].outbox
        consumers: list[Any] = written[1:]
        outboxes = [w.outbox for w in written]
    else:
        producer = CountingOutbox()
        consumers = [CountingOutbox() for _ in range(subscribers)]
        outboxes = [producer, *consumers]
    sender = engine.open_session(producer)
    receivers = [engine.open_session(outbox) for outbox in outboxes[1:]]
    for session in (sender, *receivers):
        engine.handle(session, Frame("CONNECT", {"accept-version": "1.2", "login": "app", "passcode": "pw"}))
    for receiver in receivers:
        engine.handle(receiver, Frame("SUBSCRIBE", {"destination": destination, "id": "1"}))
    engine.flush()
    loop.end_turn()
    before = [consumer.frames for consumer in consumers]
    headers = {"destination": destination, "content-length": "1024"}
    if persistent:
        headers["persistent"] = "true"
    send = Frame("SEND", headers, b"x" * 1024)
    wire = encode_frame(send, V1_2) * BATCH
    parser = FrameParser()
    parser.version = V1_2
    start = cpu_with_children()
    start_thread = time.thread_time()
    next_tick = start_thread + 0.05
    for _ in range(count // BATCH):
        parser.feed(wire)
        while (frame := parser.next_frame()) is not None:
            engine.handle(sender, frame)
        engine.flush()
        loop.end_turn()
        if exporter is not None and time.thread_time() >= next_tick:
            next_tick += 0.05
            clock.set(time.time())
            exporter.tick()
    if exporter is not None:
        # Everything written: the writer's work counts too.
        exporter.close()
        tmp.cleanup()
    elapsed = cpu_with_children() - start
    elapsed_thread = time.thread_time() - start_thread
    delivered = sum(consumer.frames for consumer in consumers) - sum(before)
    expected = count // BATCH * BATCH * (subscribers if destination.startswith("/topic/") else 1)
    assert delivered >= expected, delivered
    return elapsed, elapsed_thread


def main() -> None:
    arguments = argparse.ArgumentParser(description=__doc__)
    arguments.add_argument("--messages", type=int, default=100_000)
    arguments.add_argument("--destination", default="/queue/bench")
    arguments.add_argument("--subscribers", type=int, default=1)
    arguments.add_argument("--secured", action="store_true")
    arguments.add_argument("--persistent", action="store_true")
    arguments.add_argument("--export", action="store_true")
    arguments.add_argument("--io", action="store_true", help="write through broker.io.outbox.Outbox")
    options = arguments.parse_args()
    if options.export:
        # As the broker's process does with the export on (an older checkout may not).
        from broker import app

        tune = getattr(app, "tune_malloc", None)
        if tune is not None:
            tune(export=True)
    runs = [
        run(
            options.destination,
            options.messages,
            options.secured,
            options.export,
            options.persistent,
            options.subscribers,
            options.io,
        )
        for _ in range(REPEATS)
    ]
    best, best_thread = min(runs)
    rate = options.messages / best
    each = best / options.messages * 1e6
    secured = ", authorization on" if options.secured else ""
    persistent = ", persistent" if options.persistent else ""
    export = ", export on" if options.export else ""
    export += ", through the Outbox" if options.io else ""
    thread = f"; engine thread {best_thread / options.messages * 1e6:.2f} us" if options.export else ""
    fan_out = f" to {options.subscribers} subscribers" if options.subscribers > 1 else ""
    what = f"{options.destination} SEND->MESSAGE{fan_out}, 1 KiB{secured}{persistent}{export}"
    print(f"{what}: {rate:>10,.0f} msgs/s ({each:.2f} us each{thread})")


if __name__ == "__main__":
    main()
