"""A fake STOMP "broker" for testing stompd-perf itself, and a yardstick for its speed.

It answers CONNECT and SUBSCRIBE, and turns every SEND into MESSAGEs straight away:
round-robin to a queue's subscribers (kept until one subscribes), to every subscriber
of a topic.  No persistence, no priorities, no selectors, ACKs ignored; receipts are
answered for any frame that asks.  `drop_every=N` silently loses every N-th SEND and
`duplicate_every=M` delivers every M-th twice, and `refuse=DEST` answers SEND and
SUBSCRIBE to DEST with an ERROR, so tests can check that the tool counts what a faulty
broker does.  It does almost no work per message, so the rate the tool
reaches against it is the tool's own ceiling.

    python -m perf.sink --port 0 [--drop-every N] [--duplicate-every M]
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import threading
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

from perf.frames import FrameError, FrameSplitter, RawFrame, header

if TYPE_CHECKING:
    from collections.abc import Sequence


PUMP_SLICE = 256  # backlog messages handed out per loop turn


@dataclass(slots=True)
class _Subscription:
    conn: SinkConnection
    sub_id: bytes
    destination: bytes


@dataclass(slots=True)
class _Destination:
    name: bytes
    subscribers: list[_Subscription] = field(default_factory=list)
    backlog: deque[bytes] = field(default_factory=deque)  # queue bodies nobody has taken yet
    next_subscriber: int = 0
    pumping: bool = False  # a _pump of the backlog is scheduled

    def next(self) -> _Subscription:
        """Round-robin over the subscribers (a queue)."""
        index = self.next_subscriber % len(self.subscribers)
        self.next_subscriber = index + 1
        return self.subscribers[index]


class Sink:
    def __init__(self, drop_every: int = 0, duplicate_every: int = 0, refuse: bytes | None = None) -> None:
        self.drop_every = drop_every
        self.duplicate_every = duplicate_every
        self.refuse = refuse  # SEND and SUBSCRIBE to this destination get an ERROR frame
        self.sends = 0  # SENDs routed (committed, for transactions)
        self.dropped = 0
        self.duplicated = 0
        self.delivered = 0
        # What clients sent, by command, and which commands asked for a RECEIPT: lets the
        # tool's tests check it really pipelines, batches transactions and asks for receipts.
        self.commands: Counter[bytes] = Counter()
        self.receipts: Counter[bytes] = Counter()
        self._destinations: dict[bytes, _Destination] = {}
        self._connections: set[SinkConnection] = set()
        self._dirty: set[SinkConnection] = set()
        self._paused_writers = 0
        self._message_id = 0
        self._server: asyncio.Server | None = None

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> int:
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(lambda: SinkConnection(self), host, port)
        return cast("int", self._server.sockets[0].getsockname()[1])

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            for conn in list(self._connections):
                conn.transport.close()
            await self._server.wait_closed()

    # -- routing ------------------------------------------------------------------------
    def destination(self, name: bytes) -> _Destination:
        dest = self._destinations.get(name)
        if dest is None:
            dest = self._destinations[name] = _Destination(name)
        return dest

    def route(self, name: bytes, body: bytes) -> None:
        self.sends += 1
        if self.drop_every and self.sends % self.drop_every == 0:
            self.dropped += 1
            return
        copies = 1
        if self.duplicate_every and self.sends % self.duplicate_every == 0:
            self.duplicated += 1
            copies = 2
        dest = self.destination(name)
        for _ in range(copies):
            if name.startswith(b"/topic/"):
                for sub in dest.subscribers:
                    self._deliver(sub, body)
            elif dest.subscribers and not dest.backlog:
                self._deliver(dest.next(), body)
            else:
                dest.backlog.append(body)  # behind the backlog still being pumped, in order

    def _deliver(self, sub: _Subscription, body: bytes) -> None:
        self._message_id += 1
        mid = b"sink-%d" % self._message_id
        sub.conn.out.append(
            b"MESSAGE\nsubscription:%s\nmessage-id:%s\ndestination:%s\nack:%s\ncontent-length:%d\n\n"
            % (sub.sub_id, mid, sub.destination, mid, len(body))
        )
        sub.conn.out.append(body)
        sub.conn.out.append(b"\0")
        self.delivered += 1
        self._dirty.add(sub.conn)

    def subscribe(self, sub: _Subscription) -> None:
        dest = self.destination(sub.destination)
        dest.subscribers.append(sub)
        self._pump(dest)

    def _pump(self, dest: _Destination) -> None:
        """Hand a queue's backlog out a slice at a time, while consumers keep up.

        All of a million-message backlog in one go would be a gigabyte in one write list;
        instead, one slice per loop turn, and none while a consumer's transport is full
        (writer_resumed starts the pump again).
        """
        dest.pumping = False
        for _ in range(PUMP_SLICE):
            if not dest.backlog or not dest.subscribers:
                break
            self._deliver(dest.next(), dest.backlog.popleft())
        self.flush()
        if dest.backlog and dest.subscribers and not self._paused_writers:
            dest.pumping = True
            asyncio.get_running_loop().call_soon(self._pump, dest)

    def unsubscribe(self, conn: SinkConnection, sub_id: bytes | None) -> None:
        for dest in self._destinations.values():
            dest.subscribers = [
                s for s in dest.subscribers if not (s.conn is conn and (sub_id is None or s.sub_id == sub_id))
            ]

    def flush(self) -> None:
        """One write per connection per read: the sink's whole answer to a burst of SENDs."""
        dirty, self._dirty = self._dirty, set()
        for conn in dirty:
            conn.flush()

    # -- backpressure -------------------------------------------------------------------
    # A consumer that cannot keep up fills its transport; stop reading producers until it
    # drains rather than buffer without bound.
    def writer_paused(self) -> None:
        self._paused_writers += 1
        if self._paused_writers == 1:
            for conn in self._connections:
                conn.transport.pause_reading()

    def writer_resumed(self) -> None:
        self._paused_writers -= 1
        if self._paused_writers == 0:
            for conn in self._connections:
                if not conn.transport.is_closing():
                    conn.transport.resume_reading()
            for dest in self._destinations.values():
                if dest.backlog and not dest.pumping:
                    self._pump(dest)


class SinkConnection(asyncio.Protocol):
    def __init__(self, sink: Sink) -> None:
        self.sink = sink
        self.transport: asyncio.Transport
        self.out: list[bytes] = []
        self._splitter = FrameSplitter()
        self._transactions: dict[bytes, list[tuple[bytes, bytes]]] = {}
        self._paused = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast("asyncio.Transport", transport)
        self.transport.set_write_buffer_limits(1 << 20, 1 << 18)
        self.sink._connections.add(self)
        if self.sink._paused_writers:
            self.transport.pause_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        self.sink._connections.discard(self)
        self.sink.unsubscribe(self, None)
        if self._paused:
            self._paused = False
            self.sink.writer_resumed()

    def pause_writing(self) -> None:
        self._paused = True
        self.sink.writer_paused()

    def resume_writing(self) -> None:
        if self._paused:
            self._paused = False
            self.sink.writer_resumed()

    def flush(self) -> None:
        out, self.out = self.out, []
        if out and not self.transport.is_closing():
            self.transport.writelines(out)

    def data_received(self, data: bytes) -> None:
        try:
            frames = self._splitter.feed(data)
        except FrameError as exc:
            self.transport.write(b"ERROR\nmessage:%s\n\n\0" % str(exc).encode())
            self.transport.close()
            return
        for frame in frames:
            self._handle(frame)
        if self.out:  # our own answers: CONNECTED, RECEIPTs
            self.sink._dirty.add(self)
        self.sink.flush()

    def _handle(self, frame: RawFrame) -> None:
        command, head = frame.command, frame.head
        self.sink.commands[command] += 1
        if self.sink.refuse is not None and header(head, b"destination") == self.sink.refuse:
            receipt = header(head, b"receipt")
            receipt_line = b"receipt-id:%s\n" % receipt if receipt is not None else b""
            self.out.append(b"ERROR\n%smessage:refused by the sink\n\n\0" % receipt_line)
            return
        if command == b"SEND":
            dest = header(head, b"destination") or b""
            tx = header(head, b"transaction")
            if tx is not None:
                self._transactions.setdefault(tx, []).append((dest, frame.body))
            else:
                self.sink.route(dest, frame.body)
        elif command in (b"CONNECT", b"STOMP"):
            versions = (header(head, b"accept-version") or b"1.0").split(b",")
            version = b"1.2" if b"1.2" in versions else b"1.0"
            self.out.append(b"CONNECTED\nversion:%s\nserver:stompd-perf-sink\nheart-beat:0,0\n\n\0" % version)
        elif command == b"SUBSCRIBE":
            sub_id = header(head, b"id") or header(head, b"destination") or b""
            # Receipt first: a queue's backlog is delivered the moment it subscribes.
            self._receipt(head)
            self.sink.subscribe(_Subscription(self, sub_id, header(head, b"destination") or b""))
            return
        elif command == b"UNSUBSCRIBE":
            self.sink.unsubscribe(self, header(head, b"id") or header(head, b"destination"))
        elif command == b"BEGIN":
            self._transactions[header(head, b"transaction") or b""] = []
        elif command == b"COMMIT":
            for dest, body in self._transactions.pop(header(head, b"transaction") or b"", []):
                self.sink.route(dest, body)
        elif command == b"ABORT":
            self._transactions.pop(header(head, b"transaction") or b"", None)
        elif command == b"DISCONNECT":
            self._receipt(head)
            self.flush()
            self.transport.close()
            return
        self._receipt(head)

    def _receipt(self, head: bytes) -> None:
        receipt = header(head, b"receipt")
        if receipt is not None:
            self.sink.receipts[head.partition(b"\n")[0]] += 1
            self.out.append(b"RECEIPT\nreceipt-id:%s\n\n\0" % receipt)


class SinkThread:
    """A sink on its own thread and event loop, for tests: `with SinkThread() as sink:`."""

    def __init__(self, drop_every: int = 0, duplicate_every: int = 0, refuse: bytes | None = None) -> None:
        self.sink = Sink(drop_every, duplicate_every, refuse)
        self.host = "127.0.0.1"
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._main, name="stompd-perf-sink", daemon=True)

    def _main(self) -> None:
        asyncio.set_event_loop(self._loop)
        self.port = self._loop.run_until_complete(self.sink.start(self.host, 0))
        self._ready.set()
        self._loop.run_forever()
        self._loop.run_until_complete(self.sink.close())
        self._loop.close()

    def __enter__(self) -> SinkThread:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("sink did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)


async def _serve(host: str, port: int, drop_every: int, duplicate_every: int) -> None:
    sink = Sink(drop_every, duplicate_every)
    bound = await sink.start(host, port)
    print(f"stompd-perf sink listening on {host}:{bound}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await sink.close()
    print(
        f"sink: {sink.sends} sends, {sink.delivered} deliveries, {sink.dropped} dropped, "
        f"{sink.duplicated} duplicated",
        file=sys.stderr,
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m perf.sink", description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0: any free port (printed on stdout)")
    parser.add_argument("--drop-every", type=int, default=0, metavar="N", help="lose every N-th SEND")
    parser.add_argument(
        "--duplicate-every", type=int, default=0, metavar="M", help="deliver every M-th twice"
    )
    args = parser.parse_args(argv)
    try:
        import uvloop

        loop_factory = uvloop.new_event_loop
    except ImportError:  # pragma: no cover - uvloop is a dependency on Linux
        loop_factory = None
    with asyncio.Runner(loop_factory=loop_factory) as runner:
        runner.run(_serve(args.host, args.port, args.drop_every, args.duplicate_every))
    return 0


if __name__ == "__main__":
    sys.exit(main())
