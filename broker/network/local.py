"""A bridge's local side: a STOMP client of this broker's engine, without a socket.

The engine sees an ordinary session (``Engine.open_internal_session``: connected, STOMP
1.2, the broker's own principal): it SUBSCRIBEs, SENDs and ACKs with frames through
``Engine.handle``, and what the engine writes to it (MESSAGE, RECEIPT) goes through a
real ``broker.io.outbox.Outbox``, so prefetch credit, the holds that keep a RECEIPT or a
MESSAGE back until the store has made it durable, flow control and write coalescing are
the engine's own.  The outbox writes the pieces it was pushed to ``_Pipe``, which hands
them back to the bridge: a subscription's MESSAGE as its pieces, read by the core's
definition (``pieces.read_pieces``), anything else parsed into a frame.

Frames handed in are run at once; the engine's end-of-batch work (``Engine.flush``:
the store batch) runs once per loop turn, as after a socket read, so a burst of
forwarded messages shares one group commit.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, cast

from broker.core.base.pieces import MESSAGE_HEAD, read_pieces
from broker.io.outbox import Outbox
from protocol.errors import StompError
from protocol.frames import V1_2, Frame
from protocol.parser import FrameParser

if TYPE_CHECKING:
    import asyncio
    from collections.abc import Callable

    from broker.core.base.pieces import MessagePieces
    from broker.core.engine import Engine, Session

log = logging.getLogger("stompd.network")

#: Nothing more is dispatched to a bridge while this much waits for the store.
_HELD_HIGH_WATER = 1 << 20


class LocalClient:
    """The engine as a STOMP peer: ``send`` frames to it; ``on_message`` gets a
    subscription's MESSAGEs as their pieces, ``on_frame`` every other frame it writes."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        engine: Engine,
        on_message: Callable[[MessagePieces], None],
        on_frame: Callable[[Frame], None],
        on_failure: Callable[[BaseException], None],
        on_reading: Callable[[bool], None],
        max_frame_size: int,
        label: str,
    ) -> None:
        self._engine = engine
        self._on_message = on_message
        self._on_frame = on_frame
        self._written: list[list[bytes]] = []
        self._on_failure = on_failure
        #: Told False when the engine stops reading this client (its SENDs wait for room).
        self._on_reading = on_reading
        #: The bridge's, for the log (``BridgeSettings.label``).
        self._label = label
        self._loop = loop
        self._parser = FrameParser(max_frame_size=max_frame_size + (64 << 10), max_headers=10_000)
        self._parser.version = V1_2
        self._pipe = _Pipe(self)
        self._flush_scheduled = False
        self._read_scheduled = False
        self.closed = False
        #: The bridge's own say (its remote link is backed up).
        self._wanted = True
        self._outbox_writable = True
        self._outbox = _LocalOutbox(
            self._loop,
            self._pipe,  # type: ignore[arg-type]
            self._failed,
            self.close,
            held_limit=_HELD_HIGH_WATER,
            on_writable=self._outbox_changed,
            meter=engine.usage.memory,
        )
        self.session: Session = engine.open_internal_session(self._outbox)
        #: What the connection list shows as its login.
        self.session.login = f"(network bridge {label})"

    # -- frames in -------------------------------------------------------------------

    def send(self, command: str, headers: dict[str, str], body: bytes = b"") -> None:
        """Hand a frame to the engine; a ``StompError`` it raises is the caller's."""
        if self.closed:
            return
        engine = self._engine
        if not self._flush_scheduled:
            self._flush_scheduled = True
            engine.clock.set(time.time())
            self._loop.call_soon(self._flush)
        engine.handle(self.session, Frame(command, headers, body))

    def offer(self, command: str, headers: dict[str, str], body: bytes = b"") -> bool:
        """``send``, and False if the engine refused the frame (logged: the bridge goes on)."""
        try:
            self.send(command, headers, body)
        except StompError as exc:
            log.error(
                "network bridge %s: %s %s refused here: %s",
                self._label,
                command,
                headers.get("destination") or headers.get("id"),
                exc,
            )
            return False
        return True

    def _flush(self) -> None:
        self._flush_scheduled = False
        if not self.closed:
            self._engine.flush()

    # -- frames out ------------------------------------------------------------------

    def received(self, chunks: list[bytes]) -> None:
        """What the outbox wrote in one flush, as the pieces it was pushed in.  Read in a
        turn of their own: a write can come from inside the engine (an outbox past its
        high-water mark writes at once), and what the bridge does with a frame (an ACK)
        must not run inside another frame's work."""
        self._written.append(chunks)
        if not self._read_scheduled:
            self._read_scheduled = True
            self._loop.call_soon(self._read)

    def _read(self) -> None:
        self._read_scheduled = False
        written, self._written = self._written, []
        try:
            for chunks in written:
                if self.closed:
                    return
                self._frames(chunks)
        except Exception as exc:
            # Whatever went wrong, the frames after it must not be left unread in flight:
            # the bridge ends this session (what it held goes back) and starts over.
            log.exception("network bridge: handling a frame from this broker failed")
            self._on_failure(exc)

    def _frames(self, chunks: list[bytes]) -> None:
        """A MESSAGE from a subscription comes as its pieces (``Subscription.deliver``;
        ``pieces.read_pieces`` reads them): those go to ``on_message`` unparsed.
        Anything else (a RECEIPT, a browser's end) is a whole frame, parsed."""
        parser = self._parser
        on_frame = self._on_frame
        on_message = self._on_message
        n = len(chunks)
        i = 0
        while i < n and not self.closed:
            part = chunks[i]
            if part.startswith(MESSAGE_HEAD):
                read = read_pieces(chunks, i, V1_2)
                if read is not None:
                    pieces, i = read
                    on_message(pieces)
                    continue
            parser.feed(part)
            i += 1
            while (frame := parser.next_frame()) is not None:
                on_frame(frame)

    def _failed(self, exc: BaseException) -> None:
        """The engine gave up on this session (a refused parked SEND, a slow consumer)."""
        if not self.closed:
            self._on_failure(exc)

    # -- flow ------------------------------------------------------------------------

    def set_wanted(self, wanted: bool) -> None:
        """The bridge can (not) take more now: its link to the remote broker is backed up."""
        self._wanted = wanted
        self._update()

    def _outbox_changed(self, writable: bool) -> None:
        self._outbox_writable = writable
        self._update()

    def _update(self) -> None:
        if self.closed:
            return
        writable = self._wanted and self._outbox_writable
        if writable != self.session.writable:
            self._engine.set_writable(self.session, writable)

    def reading(self, paused: bool) -> None:
        self._on_reading(not paused)

    def close(self) -> None:
        """End the session: what it had in flight goes back to its queues."""
        if self.closed:
            return
        self.closed = True
        self._engine.close_session(self.session)
        self._engine.flush()


class _LocalOutbox(Outbox):
    """An outbox whose writes keep their pieces (no join: the client reads them apart)."""

    __slots__ = ()

    def _write(self, transport: asyncio.Transport, chunks: list[bytes]) -> None:
        cast("_Pipe", transport).write_chunks(chunks)


class _Pipe:
    """The transport the outbox writes to: straight back to the client."""

    __slots__ = ("_client",)

    def __init__(self, client: LocalClient) -> None:
        self._client = client

    def write_chunks(self, chunks: list[bytes]) -> None:
        self._client.received(chunks)

    def write(self, data: bytes) -> None:
        self._client.received([data])

    def is_closing(self) -> bool:
        return self._client.closed

    def get_write_buffer_size(self) -> int:
        return 0

    def pause_reading(self) -> None:
        self._client.reading(True)

    def resume_reading(self) -> None:
        self._client.reading(False)

    def close(self) -> None:
        self._client.close()

    def abort(self) -> None:
        self._client.close()
