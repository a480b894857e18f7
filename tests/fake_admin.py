"""A stand-in for the core's admin service (``AdminService``): a pretend broker whose
queues are lists.

It lets the tests drive what the real engine cannot do at will (an operation held at a
batch, failing half-way) through the real HTTP server, the real operation registry and
the real ``stompd-admin``: long operations run in batches with a pause between them,
report progress, honour cancellation and can fail half-way.  As the service does, it
hands its work over as ``Steps`` run by its ``chores`` (the real ``Chores``).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

from broker.core.admin.errors import Invalid, NotFound
from broker.core.admin.views import (
    BridgeInfo,
    BrowsedMessage,
    BrowsePage,
    ConnectionInfo,
    DestinationInfo,
    Health,
    Meter,
    Progress,
    SubscriptionInfo,
    Usage,
)
from broker.core.base.chores import Chores, Steps, Wait, value
from broker.core.base.selector import Selector
from broker.http.server import HttpServer

T = TypeVar("T")


def stepped(work: Coroutine[Any, Any, T]) -> Steps[T]:
    """``work`` (run on the server's loop) as ``Steps``: one ``Wait``, resumed when it is done."""
    wait = Wait()
    task = asyncio.ensure_future(work)
    task.add_done_callback(lambda _: wait.resume())
    try:
        yield wait
    finally:
        task.cancel()
    return task.result()


@dataclass
class FakeMessage:
    id: str
    headers: dict[str, str]
    body: bytes
    priority: int = 4

    def get(self, name: str) -> str | None:
        return self.headers.get(name)


@dataclass
class FakeOps:
    #: The messages each queue holds.
    held: dict[str, list[FakeMessage]] = field(default_factory=dict)
    batch: int = 10
    #: Seconds between batches (lets a client see a running operation).
    pause: float = 0.0
    #: Fail with this after the first batch (None: never).
    fail_with: Exception | None = None
    #: Operations wait for this before each batch (None: they don't).
    gate: asyncio.Event | None = None
    #: Each batch takes one permit (None: no limit): a test lets batches through one by one.
    permits: asyncio.Semaphore | None = None
    chores: Chores = field(default_factory=Chores)
    #: What /health answers.
    healthy: Health = field(default_factory=lambda: Health(True))

    def __post_init__(self) -> None:
        self.destinations = FakeDestinations(self)
        self.queues = FakeQueues(self)
        self.connections = FakeConnections()
        self.subscriptions = FakeSubscriptions()

    def acting_as(self, user: str | None) -> FakeOps:
        # A pretend broker with no authorization entries: anyone may do anything.
        return self

    def queue(self, name: str) -> list[FakeMessage]:
        if name not in self.held:
            raise NotFound(f"no queue {name}")
        return self.held[name]

    def info(self, name: str) -> DestinationInfo:
        depth = len(self.queue(name))
        return DestinationInfo(name, "queue", depth, depth, 0, 0, 0, 0, 0, None, 0, 1 << 20, depth, 0, False)

    def usage(self) -> Usage:
        meter = Meter(0, 1, 0)
        return Usage(meter, meter, meter, 0, len(self.held), 0)

    def network(self) -> Steps[list[BridgeInfo]]:
        return value([])

    def health(self) -> Health:
        return self.healthy


class FakeDestinations:
    def __init__(self, ops: FakeOps) -> None:
        self.ops = ops

    def every(self) -> Steps[list[DestinationInfo]]:
        return value([self.ops.info(name) for name in sorted(self.ops.held)])

    def get(self, name: str) -> DestinationInfo:
        return self.ops.info(name)

    def create(self, name: str) -> DestinationInfo:
        self.ops.held.setdefault(name, [])
        return self.ops.info(name)

    def delete(self, name: str) -> Steps[int]:
        self.ops.queue(name)
        return value(len(self.ops.held.pop(name)))


class FakeConnections:
    def every(self) -> Steps[list[ConnectionInfo]]:
        return value([])

    def get(self, connection_id: str) -> tuple[ConnectionInfo, list[SubscriptionInfo]]:
        raise NotFound(connection_id)

    def close(self, connection_id: str) -> None:
        raise NotFound(connection_id)


class FakeSubscriptions:
    def every(self) -> Steps[list[SubscriptionInfo]]:
        return value([])

    def browse(self, client_id: str, name: str, *args: object) -> Steps[BrowsePage]:
        raise NotFound(f"no durable subscription {name!r} of client {client_id!r}")

    def purge(self, client_id: str, name: str, progress: Progress) -> Steps[None]:
        raise NotFound(f"no durable subscription {name!r} of client {client_id!r}")

    def delete(self, client_id: str, name: str) -> int:
        raise NotFound(f"no durable subscription {name!r} of client {client_id!r}")

    def of_topic(self, name: str, limit: int) -> Steps[tuple[list[SubscriptionInfo], int]]:
        raise NotFound(f"no topic {name}")


class FakeQueues:
    def __init__(self, ops: FakeOps) -> None:
        self.ops = ops

    def browse(
        self, name: str, selector: Selector | None, limit: int, cursor: str | None, preview: int
    ) -> Steps[BrowsePage]:
        self.ops.queue(name)
        if cursor is not None and not cursor.isdigit():
            raise Invalid(f"bad cursor {cursor!r}")
        messages = [m for m in self.ops.held[name] if selector is None or selector(m)]  # type: ignore[arg-type]
        start = int(cursor or 0)
        page = messages[start : start + limit]
        end = start + len(page)
        return value(
            BrowsePage(
                [
                    BrowsedMessage(
                        m.id,
                        m.priority,
                        False,
                        1_700_000_000_000,
                        0,
                        False,
                        m.headers,
                        len(m.body),
                        m.body[:preview],
                    )
                    for m in page
                ],
                str(end) if end < len(messages) else None,
            )
        )

    async def _scan(
        self,
        name: str,
        selector: Selector | None,
        limit: int | None,
        progress: Progress,
        apply: str | None,
        target: str | None,
    ) -> None:
        ops = self.ops
        source = ops.held[name]
        progress.total = len(source)
        kept: list[FakeMessage] = []
        index = 0
        while index < len(source):
            if ops.gate is not None:
                await ops.gate.wait()
            if ops.permits is not None:
                await ops.permits.acquire()
            if progress.cancelled:
                kept.extend(source[index:])
                break
            for message in source[index : index + ops.batch]:
                progress.scanned += 1
                matches = (selector is None or selector(message)) and (  # type: ignore[arg-type]
                    limit is None or progress.matched < limit
                )
                if matches:
                    progress.matched += 1
                if matches and apply is not None:
                    progress.applied += 1
                    if target is not None:
                        ops.held.setdefault(target, []).append(message)
                    if apply == "copy":
                        kept.append(message)
                else:
                    kept.append(message)
            index += ops.batch
            if ops.fail_with is not None:
                raise ops.fail_with
            await asyncio.sleep(ops.pause)
        ops.held[name] = kept

    def _run(
        self,
        name: str,
        selector: Selector | None,
        limit: int | None,
        progress: Progress,
        apply: str | None,
        target: str | None,
    ) -> Steps[None]:
        self.ops.queue(name)
        return stepped(self._scan(name, selector, limit, progress, apply, target))

    def count(self, name: str, selector: Selector | None, progress: Progress) -> Steps[None]:
        return self._run(name, selector, None, progress, None, None)

    def move(
        self, source: str, target: str, selector: Selector | None, limit: int | None, progress: Progress
    ) -> Steps[None]:
        return self._run(source, selector, limit, progress, "move", target)

    def copy(
        self, source: str, target: str, selector: Selector | None, limit: int | None, progress: Progress
    ) -> Steps[None]:
        return self._run(source, selector, limit, progress, "copy", target)

    def remove(
        self, name: str, selector: Selector | None, limit: int | None, progress: Progress
    ) -> Steps[None]:
        return self._run(name, selector, limit, progress, "remove", None)

    def purge(self, name: str, progress: Progress) -> Steps[None]:
        return self._run(name, None, None, progress, "remove", None)


class FakeServer:
    """The real HttpServer over FakeOps, on its own event loop in a thread."""

    def __init__(self, ops: FakeOps) -> None:
        self.ops = ops
        self.loop = asyncio.new_event_loop()
        self.port = 0
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> FakeServer:
        self._thread.start()
        assert self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._stop is not None
        self.loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def call(self, fn: object) -> None:
        self.loop.call_soon_threadsafe(fn)  # type: ignore[arg-type]

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_until_complete(self._main())
        self.loop.close()

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        server = HttpServer(self.ops)  # type: ignore[arg-type]
        self.port = await server.start("127.0.0.1", 0)
        self._ready.set()
        await self._stop.wait()
        await server.stop()


def messages(n: int, prefix: str = "m") -> list[FakeMessage]:
    """n messages with an integer header ``n`` (0..n-1) and a text body."""
    return [
        FakeMessage(
            f"{prefix}-{i}", {"n": str(i), "kind": "even" if i % 2 == 0 else "odd"}, f"body {i}".encode()
        )
        for i in range(n)
    ]
