"""Per-connection write coalescing and bounded pending bytes.

Everything pushed in one loop turn goes out in one write.  What waits to be written
(here, and in the transport's buffer) is bounded the way nats-server bounds a
client's pending bytes (client.go ``queueOutbound``: the producer stalls at 75 % of
``max_pending``, the connection is cut at 100 %):

* past ``limit`` bytes (the high-water mark) the connection stops being writable: the engine stops
  dispatching to it (messages wait in their cursors, where the memory and temp limits
  hold producers back).  A held outbox (see ``hold``) stops too, past ``held_limit``
  bytes: it writes nothing, so without this an auto-ack subscription would empty a
  whole backlog into it.
* past ``max_pending`` bytes (output the engine cannot stop: RECEIPTs to a client
  that sends and never reads) the client is a slow consumer: an ERROR, and the
  connection is closed.

Bytes held while the store makes something durable are charged to the memory meter.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from broker.core.base.errors import SlowConsumer
from broker.core.base.observe import Traffic
from broker.io.reading import FLOW

if TYPE_CHECKING:
    import asyncio
    from collections.abc import Callable

    from broker.core.base.usage import UsageMeter
    from broker.io.reading import ReadGate

log = logging.getLogger("stompd.connection")


class Outbox:
    """What the core writes through; also its way to pause reading or end the connection."""

    __slots__ = (
        "_backlog",
        "_chunks",
        "_close",
        "_cut",
        "_fail",
        "_finish",
        "_held_bytes",
        "_held_from",
        "_held_limit",
        "_holds",
        "_limit",
        "_loop",
        "_max_pending",
        "_meter",
        "_on_writable",
        "_paused",
        "_pending",
        "_reading",
        "_scheduled",
        "_traffic",
        "_transport",
        "_writable",
        "peak_pending",
        "wrote_at",
    )

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        transport: asyncio.Transport,
        fail: Callable[[BaseException], None],
        close: Callable[[], None],
        limit: int = 256 * 1024,
        *,
        max_pending: int = 64 << 20,
        held_limit: int | None = None,
        on_writable: Callable[[bool], None] | None = None,
        meter: UsageMeter | None = None,
        traffic: Traffic | None = None,
        reading: ReadGate | None = None,
    ) -> None:
        self._loop = loop
        #: Where flow control stops and resumes reading (None: the transport itself).
        self._reading = reading
        #: Where frames and bytes written are counted (one per connection if not shared).
        self._traffic = traffic if traffic is not None else Traffic()
        self._transport = transport
        self._fail = fail
        self._close = close
        self._chunks: list[bytes] = []
        self._pending = 0
        #: The high-water mark: past this many bytes in one turn, write now (the
        #: transport then says pause_writing).
        self._limit = limit
        #: Past this many bytes held, stop dispatching (``limit`` if not given).
        self._held_limit = limit if held_limit is None else held_limit
        #: Past this many bytes waiting (here and in the transport), a slow consumer.
        self._max_pending = max_pending
        self._on_writable = on_writable
        self._meter = meter
        self._scheduled = False
        #: While above zero nothing is written: the store has not yet made durable what
        #: the queued frames acknowledge (see broker.core.storage.persistence).
        self._holds = 0
        #: Where the oldest hold began in ``_chunks`` (what ``drop_held`` drops).
        self._held_from = 0
        #: Bytes pushed while held (charged to ``meter`` until written or dropped).
        self._held_bytes = 0
        self._finish: Callable[[], None] | None = None
        #: The transport's buffer is above its high-water mark (pause_writing).
        self._paused = False
        #: Held bytes are above ``limit``.
        self._backlog = False
        self._writable = True
        #: Cut as a slow consumer: nothing more is queued.
        self._cut = False
        #: The most bytes ever queued here at once (held, or within one turn).
        self.peak_pending = 0
        #: Loop time of the last flush, so heart-beats go out only on idle connections.
        self.wrote_at = loop.time()

    def push(self, parts: tuple[bytes, ...]) -> None:
        if self._cut:
            return
        self._chunks.extend(parts)
        self._traffic.frames_out += 1
        n = sum(map(len, parts))
        pending = self._pending = self._pending + n
        if pending > self.peak_pending:
            self.peak_pending = pending
        if self._holds:
            self._held_bytes += n
            if self._meter is not None:
                self._meter.charge(n)
            if self._pending > self._held_limit:
                if self._pending > self._max_pending:
                    self._slow_consumer(self._pending)
                elif not self._backlog:
                    self._backlog = True
                    self._update_writable()
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
        self._traffic.bytes_out += self._pending
        self._pending = 0
        self._unheld()
        transport = self._transport
        if transport.is_closing():
            return
        self._write(transport, chunks)
        self.wrote_at = self._loop.time()
        buffered = transport.get_write_buffer_size()
        if buffered > self._max_pending:
            self._slow_consumer(buffered)

    def _write(self, transport: asyncio.Transport, chunks: list[bytes]) -> None:
        # One write per flush; a message-oriented transport (WebSocket) overrides this.
        transport.write(b"".join(chunks))

    def _unheld(self) -> None:
        if self._held_bytes and self._meter is not None:
            self._meter.release(self._held_bytes)
        self._held_bytes = 0
        if self._backlog:
            self._backlog = False
            self._update_writable()

    # -- holds (broker.core.storage.persistence) ---------------------------------------------

    def hold(self) -> None:
        if not self._holds:
            self._held_from = len(self._chunks)
        self._holds += 1

    def release(self) -> None:
        if not self._holds:
            # Cut as a slow consumer while held: nothing is held any more.
            return
        self._holds -= 1
        if self._holds:
            return
        self.flush()
        finish, self._finish = self._finish, None
        if finish is not None:
            finish()

    def drop_held(self) -> None:
        """Throw away what was pushed while held: what it acknowledged never became durable."""
        if self._holds:
            dropped = self._chunks[self._held_from :]
            del self._chunks[self._held_from :]
            self._pending -= sum(map(len, dropped))
            self._unheld()

    def finish(self, then: Callable[[], None]) -> None:
        """Write what is queued, then ``then()`` (closing): after any hold is released."""
        if self._holds:
            self._finish = then
            return
        self.flush()
        then()

    # -- flow control ----------------------------------------------------------------

    def pause_writing(self) -> None:
        """The transport's buffer passed its high-water mark."""
        self._paused = True
        self._update_writable()

    def resume_writing(self) -> None:
        self._paused = False
        self._update_writable()

    @property
    def writable(self) -> bool:
        return self._writable

    @property
    def held_bytes(self) -> int:
        """Bytes pushed while held, not yet written (charged to the memory meter)."""
        return self._held_bytes

    def _update_writable(self) -> None:
        writable = not (self._paused or self._backlog)
        if writable != self._writable:
            self._writable = writable
            if self._on_writable is not None:
                self._on_writable(writable)

    def _slow_consumer(self, pending: int) -> None:
        if self._cut:
            return
        self._cut = True
        # Nothing more is dispatched to it; the cut itself waits for the end of this
        # turn, so that no dispatch loop is left half-way through a closed connection.
        self._backlog = True
        self._update_writable()
        log.warning(
            "slow consumer: %d bytes wait to be written (max %d); closing", pending, self._max_pending
        )
        self._loop.call_soon(self._cut_now)

    def _cut_now(self) -> None:
        # What is queued is not worth keeping, nor worth waiting for the store: the
        # ERROR goes out alone, now (the holds' releases, when they come, find none).
        self._chunks = []
        self._pending = 0
        self._holds = 0
        self._unheld()
        self._cut = False
        # Cut once: the ERROR's own write must not count as another slow consumer.
        limit, self._max_pending = self._max_pending, 1 << 62
        self._fail(
            SlowConsumer(
                f"slow consumer: more than {limit} bytes waited to be written to this "
                "connection, so it was closed (unacknowledged messages go back to their queues)"
            )
        )
        self._cut = True

    def pause_reading(self) -> None:
        if self._reading is not None:
            self._reading.pause(FLOW)
        else:
            self._transport.pause_reading()

    def resume_reading(self) -> None:
        if self._reading is not None:
            self._reading.resume(FLOW)
        elif not self._transport.is_closing():
            self._transport.resume_reading()

    def fail(self, exc: BaseException) -> None:
        self._fail(exc)

    def close(self) -> None:
        self._close()
