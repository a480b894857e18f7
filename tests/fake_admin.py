"""An ``AdminOps`` that pretends to be a broker whose core has the admin operations.

It lets the tests drive what the real engine cannot do yet (browse, move, ... answer
501 there) through the real HTTP server, the real operation registry and the real
``stompd-admin``: long operations run in batches with a pause between them, report
progress, honour cancellation and can fail half-way.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass, field

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
from broker.core.base.selector import Selector
from broker.http.server import HttpServer


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
    queues: dict[str, list[FakeMessage]] = field(default_factory=dict)
    batch: int = 10
    #: Seconds between batches (lets a client see a running operation).
    pause: float = 0.0
    #: Fail with this after the first batch (None: never).
    fail_with: Exception | None = None
    #: Operations wait for this before each batch (None: they don't).
    gate: asyncio.Event | None = None
    #: Each batch takes one permit (None: no limit): a test lets batches through one by one.
    permits: asyncio.Semaphore | None = None

    def acting_as(self, user: str | None) -> FakeOps:
        # A pretend broker with no authorization entries: anyone may do anything.
        return self

    def _queue(self, name: str) -> list[FakeMessage]:
        if name not in self.queues:
            raise NotFound(f"no queue {name}")
        return self.queues[name]

    def _info(self, name: str) -> DestinationInfo:
        depth = len(self._queue(name))
        return DestinationInfo(name, "queue", depth, depth, 0, 0, 0, 0, 0, None, 0, 1 << 20, depth, 0, False)

    async def list_destinations(self) -> list[DestinationInfo]:
        return [self._info(name) for name in sorted(self.queues)]

    def destination(self, name: str) -> DestinationInfo:
        return self._info(name)

    def create(self, name: str) -> DestinationInfo:
        self.queues.setdefault(name, [])
        return self._info(name)

    async def subscriptions(self) -> list[SubscriptionInfo]:
        return []

    async def connections(self) -> list[ConnectionInfo]:
        return []

    def connection(self, connection_id: str) -> tuple[ConnectionInfo, list[SubscriptionInfo]]:
        raise NotFound(connection_id)

    def close_connection(self, connection_id: str) -> None:
        raise NotFound(connection_id)

    def usage(self) -> Usage:
        meter = Meter(0, 1, 0)
        return Usage(meter, meter, meter, 0, len(self.queues), 0)

    def network(self) -> list[BridgeInfo]:
        return []

    def health(self) -> Health:
        return Health(True)

    async def _delete(self, name: str) -> int:
        return len(self.queues.pop(name))

    def delete(self, name: str) -> asyncio.Future[int] | object:
        self._queue(name)
        return self._delete(name)

    async def _browse(
        self, name: str, selector: Selector | None, limit: int, cursor: str | None, preview: int
    ) -> BrowsePage:
        messages = [m for m in self.queues[name] if selector is None or selector(m)]  # type: ignore[arg-type]
        start = int(cursor or 0)
        page = messages[start : start + limit]
        end = start + len(page)
        return BrowsePage(
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

    def browse(
        self, name: str, selector: Selector | None, limit: int, cursor: str | None, preview: int
    ) -> object:
        self._queue(name)
        if cursor is not None and not cursor.isdigit():
            raise Invalid(f"bad cursor {cursor!r}")
        return self._browse(name, selector, limit, cursor, preview)

    async def _scan(
        self,
        name: str,
        selector: Selector | None,
        limit: int | None,
        progress: Progress,
        apply: str | None,
        target: str | None,
    ) -> None:
        source = self.queues[name]
        progress.total = len(source)
        kept: list[FakeMessage] = []
        index = 0
        while index < len(source):
            if self.gate is not None:
                await self.gate.wait()
            if self.permits is not None:
                await self.permits.acquire()
            if progress.cancelled:
                kept.extend(source[index:])
                break
            for message in source[index : index + self.batch]:
                progress.scanned += 1
                matches = (selector is None or selector(message)) and (
                    limit is None or progress.matched < limit
                )  # type: ignore[arg-type]
                if matches:
                    progress.matched += 1
                if matches and apply is not None:
                    progress.applied += 1
                    if target is not None:
                        self.queues.setdefault(target, []).append(message)
                    if apply == "copy":
                        kept.append(message)
                else:
                    kept.append(message)
            index += self.batch
            if self.fail_with is not None:
                raise self.fail_with
            await asyncio.sleep(self.pause)
        self.queues[name] = kept

    def count(self, name: str, selector: Selector | None, progress: Progress) -> object:
        self._queue(name)
        return self._scan(name, selector, None, progress, None, None)

    def move(
        self, source: str, target: str, selector: Selector | None, limit: int | None, progress: Progress
    ) -> object:
        self._queue(source)
        return self._scan(source, selector, limit, progress, "move", target)

    def copy(
        self, source: str, target: str, selector: Selector | None, limit: int | None, progress: Progress
    ) -> object:
        self._queue(source)
        return self._scan(source, selector, limit, progress, "copy", target)

    def remove(self, name: str, selector: Selector | None, limit: int | None, progress: Progress) -> object:
        self._queue(name)
        return self._scan(name, selector, limit, progress, "remove", None)

    def purge(self, name: str, progress: Progress) -> object:
        self._queue(name)
        return self._scan(name, None, None, progress, "remove", None)

    def browse_subscription(self, client_id: str, name: str, *args: object) -> object:
        raise NotFound(f"no durable subscription {name!r} of client {client_id!r}")

    def purge_subscription(self, client_id: str, name: str, progress: Progress) -> object:
        raise NotFound(f"no durable subscription {name!r} of client {client_id!r}")

    def delete_subscription(self, client_id: str, name: str) -> int:
        raise NotFound(f"no durable subscription {name!r} of client {client_id!r}")

    def topic_subscribers(self, name: str, limit: int) -> object:
        raise NotFound(f"no topic {name}")


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
