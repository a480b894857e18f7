"""Drive the sans-IO engine directly: frames in, parsed frames out, no sockets."""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from broker.core.admin.service import AdminService
from broker.core.admin.views import ConnectionInfo, DestinationInfo, SubscriptionInfo
from broker.core.base.clock import Clock
from broker.core.base.errors import to_error_frame
from broker.core.base.settings import CoreSettings
from broker.core.delivery.session import Session
from broker.core.engine import Engine
from broker.io.connection import StompConnection
from broker.io.limits import ConnectionLimits
from broker.io.outbox import Outbox
from broker.io.verifier import Verifier
from protocol.encoder import encode_frame
from protocol.frames import Frame
from protocol.parser import FrameParser
from store.api import Failed
from store.memory import memory_stores
from store.worker import DeferredWorker

if TYPE_CHECKING:
    from broker.core.base.chores import Steps
    from store.api import Outcome

T = TypeVar("T")


class ListOutbox:
    def __init__(self) -> None:
        self.parser = FrameParser()
        self.holds = 0
        self.held: list[bytes] = []

    def push(self, parts: tuple[bytes, ...]) -> None:
        if self.holds:
            self.held.append(b"".join(parts))
        else:
            self.parser.feed(b"".join(parts))

    def hold(self) -> None:
        self.holds += 1

    def release(self) -> None:
        self.holds -= 1
        if not self.holds:
            self.parser.feed(b"".join(self.held))
            self.held.clear()

    def drop_held(self) -> None:
        self.held.clear()

    def frames(self) -> list[Frame]:
        out = []
        while (frame := self.parser.next_frame()) is not None:
            out.append(frame)
        return out


class Peer:
    def __init__(self, engine: Engine, version: str = "1.2", **connect: str) -> None:
        self.engine = engine
        self.outbox = ListOutbox()
        self.session: Session = engine.open_session(self.outbox)
        self.send_frame("CONNECT", {"accept-version": version, **connect})
        (connected,) = self.outbox.frames()
        assert connected.command == "CONNECTED"
        self.outbox.parser.version = self.session.version

    def send_frame(self, command: str, headers: dict[str, str] | None = None, body: bytes = b"") -> None:
        """One frame, as if it came in a read of its own (the edge flushes after each read),
        then the disk jobs it asked for, as later turns of the loop."""
        try:
            self.engine.handle(self.session, Frame(command, dict(headers or {}), body))
        finally:
            self.engine.flush()
            run_io(self.engine)

    def received(self) -> list[Frame]:
        return self.outbox.frames()

    def messages(self) -> list[Frame]:
        """The MESSAGE frames received since the last call (anything else is dropped)."""
        return [frame for frame in self.outbox.frames() if frame.command == "MESSAGE"]


def messages_in_memory(engine: Engine) -> int:
    """Bytes the memory meter holds for messages: what it holds less what the destinations,
    subscriptions and their cursors' levels cost (charged to it too, ``Destinations.footprint``)."""
    return engine.usage.memory.used - structures_in_memory(engine)


def structures_in_memory(engine: Engine) -> int:
    """What the memory meter holds that is not messages: what the destinations and
    subscriptions that exist cost (a wildcard queue consumer's joins too), and what their
    cursors made (``Cursor.charged_bytes``)."""
    cursors = {id(queue.cursor): queue.cursor for queue in engine.queues.values()}
    for session in engine.sessions.values():
        cursors.update((id(sub.cursor), sub.cursor) for sub in session.subscriptions.values())
    for durable in engine.durables.records.values():
        if durable.cursor is not None:
            cursors[id(durable.cursor)] = durable.cursor
    levels = sum(cursor.charged_bytes for cursor in cursors.values() if cursor.meter is not None)
    return (
        engine.destinations.charged + engine.destinations.wild.charged + engine.subscribing.charged + levels
    )


def run_io(engine: Engine) -> int:
    """Complete the disk jobs ``engine`` asked for (its stores are ``memory_stores()``), as
    the server's loop would: each outcome on a turn of its own through ``Engine.after_io``,
    and the jobs those ask for in turn; how many ran."""
    worker = engine.disk.worker
    assert isinstance(worker, DeferredWorker), worker
    return worker.run(engine.after_io)


def tick(engine: Engine) -> None:
    """A tick, as the server's timer runs one, then the disk jobs it asked for (due
    scheduled jobs read, retries) come back."""
    engine.tick()
    run_io(engine)


def new_engine(ms: int = 1_000_000, **settings: Any) -> Engine:
    """An engine on in-memory stores, its clock at ``ms``; ``settings`` are ``CoreSettings`` fields."""
    return Engine(CoreSettings(**settings), clock=Clock(ms), stores=memory_stores())


class _Timer:
    __slots__ = ("args", "callback", "cancelled", "when")

    def __init__(self, when: float, callback: Callable[..., Any], args: tuple[Any, ...]) -> None:
        self.when = when
        self.callback = callback
        self.args = args
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class MockLoop:
    """The little of an event loop that ``Outbox`` and ``StompConnection`` use; its time
    moves only when a test calls ``advance`` (uvicorn's MockLoop, with a clock).
    ``run`` runs what is scheduled to run now."""

    def __init__(self) -> None:
        self.ready: deque[tuple[Callable[..., Any], tuple[Any, ...]]] = deque()
        self.now = 0.0
        self.timers: list[tuple[float, int, _Timer]] = []
        self._order = itertools.count()

    def call_soon(self, callback: Callable[..., Any], *args: Any) -> None:
        self.ready.append((callback, args))

    def call_later(self, delay: float, callback: Callable[..., Any], *args: Any) -> _Timer:
        timer = _Timer(self.now + delay, callback, args)
        heapq.heappush(self.timers, (timer.when, next(self._order), timer))
        return timer

    def time(self) -> float:
        return self.now

    def run(self) -> None:
        while self.ready:
            callback, args = self.ready.popleft()
            callback(*args)

    def advance(self, seconds: float) -> None:
        """Move time on by ``seconds``, running each timer at its own time, in order."""
        end = self.now + seconds
        self.run()
        while self.timers and self.timers[0][0] <= end:
            timer = heapq.heappop(self.timers)[2]
            if timer.cancelled:
                continue
            self.now = timer.when
            timer.callback(*timer.args)
            self.run()
        self.now = end


class MockTransport:
    """Keeps what is written (``writes``, one entry per write; ``parser`` reads it back);
    ``keep``: the bytes stay in its buffer, as with a client that does not read."""

    def __init__(self) -> None:
        self.parser = FrameParser()
        self.writes: list[bytes] = []
        self.buffered = 0
        self.closed = False
        self.keep = False
        self.reading = True
        self.high_water: int | None = None

    def write(self, data: bytes) -> None:
        self.writes.append(data)
        self.parser.feed(data)
        if self.keep:
            self.buffered += len(data)

    def get_write_buffer_size(self) -> int:
        return self.buffered

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        self.high_water = high

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 50000) if name == "peername" else default

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.closed = True

    def pause_reading(self) -> None:
        self.reading = False

    def resume_reading(self) -> None:
        self.reading = True

    def frames(self) -> list[Frame]:
        out = []
        while (frame := self.parser.next_frame()) is not None:
            out.append(frame)
        return out


class WirePeer:
    """A client whose session writes through the real ``broker.io.outbox.Outbox``, as
    ``StompConnection`` wires it, onto a mock transport (uvicorn's way of testing)."""

    def __init__(self, engine: Engine, *, limit: int = 256 * 1024, max_pending: int = 64 << 20) -> None:
        self.engine = engine
        self.loop = MockLoop()
        self.transport = MockTransport()
        self.failed: list[BaseException] = []
        self.outbox = Outbox(
            self.loop,  # type: ignore[arg-type]
            self.transport,  # type: ignore[arg-type]
            self._fail,
            self.transport.close,
            limit,
            max_pending=max_pending,
            on_writable=lambda writable: engine.set_writable(self.session, writable),
            meter=engine.usage.memory,
        )
        self.session: Session = engine.open_session(self.outbox)
        self.send_frame("CONNECT", {"accept-version": "1.2"})
        (connected,) = self.received()
        assert connected.command == "CONNECTED"
        self.transport.parser.version = self.session.version

    def _fail(self, exc: BaseException) -> None:
        self.failed.append(exc)
        self.outbox.push((encode_frame(to_error_frame(exc), self.session.version),))
        self.engine.close_session(self.session)
        self.outbox.finish(self.transport.close)

    def send_frame(self, command: str, headers: dict[str, str] | None = None, body: bytes = b"") -> None:
        try:
            self.engine.handle(self.session, Frame(command, dict(headers or {}), body))
        finally:
            self.engine.flush()
            run_io(self.engine)
        self.loop.run()

    def received(self) -> list[Frame]:
        self.loop.run()
        return self.transport.frames()


class ConnectionPeer:
    """The real ``StompConnection`` (the asyncio protocol) on a mock transport and a
    ``MockLoop``: bytes in through ``data_received``, writes recorded, timers run only
    when the test moves the loop's time."""

    def __init__(
        self,
        engine: Engine,
        limits: ConnectionLimits | None = None,
        turn_clock: Callable[[], float] | None = None,
    ) -> None:
        self.engine = engine
        self.loop = MockLoop()
        self.transport = MockTransport()
        self.registry: set[StompConnection] = set()
        # StompConnection takes the loop it runs on from asyncio, as under a real server.
        asyncio.events._set_running_loop(self.loop)  # type: ignore[arg-type]
        try:
            self.connection = StompConnection(
                engine,
                limits or ConnectionLimits(),
                self.registry,
                Verifier(),
                turn_clock=turn_clock or self.loop.time,
            )
        finally:
            asyncio.events._set_running_loop(None)
        self.connection.connection_made(self.transport)  # type: ignore[arg-type]
        self.session: Session = engine.sessions[str(self.connection.session_id)]

    def feed(self, data: bytes) -> None:
        """``data`` arrives in one read; the loop then runs what that scheduled, and the
        disk jobs it asked for come back."""
        self.connection.data_received(data)
        self.loop.run()
        if run_io(self.engine):
            self.loop.run()

    def send_frame(self, command: str, headers: dict[str, str] | None = None, body: bytes = b"") -> None:
        version = self.transport.parser.version
        self.feed(encode_frame(Frame(command, dict(headers or {}), body), version))

    def connect(self, **headers: str) -> Frame:
        self.send_frame("CONNECT", {"accept-version": "1.2", **headers})
        (connected,) = self.received()
        assert connected.command == "CONNECTED", connected
        self.transport.parser.version = connected.headers.get("version", "1.0")
        return connected

    def received(self) -> list[Frame]:
        self.loop.run()
        return self.transport.frames()


def finished(engine: Engine, work: Steps[T]) -> T:
    """``work`` run by the engine's chores, as the admin API has it run, to its end (with no
    loop to come back on, the chores run it at once, and on as each disk job it waits for
    comes back, ``run_io``): its answer, or what it raised."""
    outcomes: list[Outcome[T]] = []
    engine.chores.add(work, outcomes.append)
    engine.chores.run_all()
    while not outcomes and run_io(engine):
        engine.chores.run_all()
    assert outcomes, "the work waits for something no disk job brings"
    outcome = outcomes[0]
    if isinstance(outcome, Failed):
        raise outcome.error
    return outcome.value


def admin(engine: Engine) -> AdminService:
    """The admin service over ``engine`` (no transports: no peer addresses)."""
    return AdminService(engine, dict)


def destination_info(engine: Engine, name: str) -> DestinationInfo:
    """A destination's statistics as the admin API reports them (depth, in flight, expired...)."""
    return admin(engine).destinations.get(name)


def destination_infos(engine: Engine) -> dict[str, DestinationInfo]:
    """Every destination's statistics, by name."""
    return {info.name: info for info in finished(engine, admin(engine).destinations.every())}


def connection_infos(engine: Engine) -> list[ConnectionInfo]:
    return finished(engine, admin(engine).connections.every())


def subscription_infos(engine: Engine) -> list[SubscriptionInfo]:
    """Every subscription, durable ones whose subscriber is away included (``connection`` None)."""
    return finished(engine, admin(engine).subscriptions.every())
