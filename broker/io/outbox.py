"""Per-connection write coalescing: everything pushed in one loop turn goes out in one write."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import asyncio
    from collections.abc import Callable


class Outbox:
    """What the core writes through; also its way to pause reading or end the connection."""

    __slots__ = (
        "_chunks",
        "_close",
        "_fail",
        "_finish",
        "_holds",
        "_limit",
        "_loop",
        "_pending",
        "_scheduled",
        "_transport",
        "wrote_at",
    )

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        transport: asyncio.Transport,
        fail: Callable[[BaseException], None],
        close: Callable[[], None],
        limit: int = 256 * 1024,
    ) -> None:
        self._loop = loop
        self._transport = transport
        self._fail = fail
        self._close = close
        self._chunks: list[bytes] = []
        self._pending = 0
        #: Past this many bytes in one turn, write now: the transport then tells us
        #: (pause_writing) to stop dispatching, instead of a turn's worth piling up here.
        self._limit = limit
        self._scheduled = False
        #: While above zero nothing is written: the store has not yet made durable what
        #: the queued frames acknowledge (see broker.core.persistence).
        self._holds = 0
        self._finish: Callable[[], None] | None = None
        #: Loop time of the last flush, so heart-beats go out only on idle connections.
        self.wrote_at = loop.time()

    def push(self, parts: tuple[bytes, ...]) -> None:
        self._chunks.extend(parts)
        self._pending += sum(map(len, parts))
        if self._holds:
            return
        if self._pending > self._limit:
            self.flush()
        elif not self._scheduled:
            self._scheduled = True
            # One write per loop turn, not one per frame (nats-server's flushClients).
            self._loop.call_soon(self.flush)

    def flush(self) -> None:
        self._scheduled = False
        if self._holds:
            return
        chunks = self._chunks
        if not chunks:
            return
        self._chunks = []
        self._pending = 0
        transport = self._transport
        if transport.is_closing():
            return
        self._write(transport, chunks)
        self.wrote_at = self._loop.time()

    def _write(self, transport: asyncio.Transport, chunks: list[bytes]) -> None:
        # One write per flush; a message-oriented transport (WebSocket) overrides this.
        transport.write(b"".join(chunks))

    def hold(self) -> None:
        self._holds += 1

    def release(self) -> None:
        self._holds -= 1
        if self._holds:
            return
        self.flush()
        finish, self._finish = self._finish, None
        if finish is not None:
            finish()

    def finish(self, then: Callable[[], None]) -> None:
        """Write what is queued, then ``then()`` (closing): after any hold is released."""
        if self._holds:
            self._finish = then
            return
        self.flush()
        then()

    def pause_reading(self) -> None:
        self._transport.pause_reading()

    def resume_reading(self) -> None:
        if not self._transport.is_closing():
            self._transport.resume_reading()

    def fail(self, exc: BaseException) -> None:
        self._fail(exc)

    def close(self) -> None:
        self._close()
