"""Per-connection write coalescing: everything pushed in one loop turn goes out in one write."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import asyncio


class Outbox:
    __slots__ = ("_chunks", "_loop", "_scheduled", "_transport", "wrote_at")

    def __init__(self, loop: asyncio.AbstractEventLoop, transport: asyncio.WriteTransport) -> None:
        self._loop = loop
        self._transport = transport
        self._chunks: list[bytes] = []
        self._scheduled = False
        #: Loop time of the last flush, so heart-beats go out only on idle connections.
        self.wrote_at = loop.time()

    def push(self, parts: tuple[bytes, ...]) -> None:
        self._chunks.extend(parts)
        if not self._scheduled:
            self._scheduled = True
            # One write per loop turn, not one per frame (nats-server's flushClients).
            self._loop.call_soon(self.flush)

    def flush(self) -> None:
        self._scheduled = False
        chunks = self._chunks
        if not chunks:
            return
        self._chunks = []
        transport = self._transport
        if transport.is_closing():
            return
        transport.write(b"".join(chunks))
        self.wrote_at = self._loop.time()
