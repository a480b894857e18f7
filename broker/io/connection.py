"""One client connection: bytes from the transport -> parser -> engine, and back.

This is the only place that knows both the transport and the engine, and it decides
nothing: frames go to the engine, errors become one ERROR frame and a clean close,
``pause_writing``/``resume_writing`` go to the outbox, whose verdict (with what it
holds) becomes the session's ``writable`` flag, and a timer keeps the negotiated
heart-beats.

A CONNECT whose password takes long to check (a hash) waits for its verdict with the
connection's reading paused: the check runs in a worker thread (broker/io/verifier.py),
then the CONNECT and whatever frames came after it are handled in order.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from typing import TYPE_CHECKING, Final, cast

from broker.core.base.errors import AccessDenied, closes, to_error_frame
from broker.core.base.guard import NotAuthenticated
from broker.core.engine import AWAIT_CONNECT, CONNECTED
from broker.io.outbox import Outbox
from broker.io.reading import LOGIN, MEMORY, TURN, ReadGate
from protocol.encoder import encode_frame
from protocol.errors import FrameTooLarge, StompError
from protocol.frames import CONNECT, STOMP
from protocol.parser import FrameParser

if TYPE_CHECKING:
    from collections.abc import Callable

    from broker.core.engine import Engine, Session
    from broker.io.limits import ConnectionLimits
    from broker.io.listener import Gate
    from broker.io.logins import FailedLogins
    from broker.io.verifier import Verifier
    from protocol.frames import Frame

log = logging.getLogger("stompd.connection")

HEARTBEAT = b"\n"
#: Work one connection's frames may make in one turn of the loop before the others go,
#: about 2 ms of it: a frame read costs ``FRAME_IN``, each frame it made the broker send
#: one (a topic publish to 10,000 subscribers is 10,000); so at most 128 frames read (a
#: SUBSCRIBE's handling costs ~15 us), or a few big fan-outs.
TURN_BUDGET: Final = 2048
FRAME_IN: Final = 16
#: And the time one turn may take, whatever its frames are counted as: a kind of frame
#: that costs more than its count says (a SUBSCRIBE with a selector to compile, a big
#: composite SEND, a host that is busy) still lets the others go within a few ms.
TURN_SECONDS: Final = 0.002
#: A frame on its way in bigger than this is charged to memoryUsage whole as soon as its
#: size is known (its content-length), before its body is read, and reading pauses while
#: memory has no room for it: a big frame is flow control, not a memory spike.  Smaller
#: ones cost nothing (one comparison a read).
CHARGE_ABOVE: Final = 1 << 20
#: How often a connection paused for want of memory for its frame looks again.
MEMORY_POLL_S: Final = 0.05


class StompConnection(asyncio.Protocol):
    #: What the core writes through (a WebSocket connection sends one message per frame).
    outbox_class: type[Outbox] = Outbox

    def __init__(
        self,
        engine: Engine,
        limits: ConnectionLimits,
        registry: set[StompConnection],
        verifier: Verifier,
        gate: Gate | None = None,
        logins: FailedLogins | None = None,
        turn_clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self._engine = engine
        #: What a turn's time is read from (a test's own clock; uvloop's ``loop.time()``
        #: stands still within a callback).
        self._turn_clock = turn_clock
        self._verifier = verifier
        #: Failed logins, counted to answer them late (None: answered at once).
        self._logins = logins
        #: A failed login's answer, waiting on the loop's timer (reading is paused meanwhile).
        self._refusing: asyncio.TimerHandle | None = None
        #: The task awaiting a CONNECT's slow password check (reading is paused meanwhile).
        self._verifying: asyncio.Task[None] | None = None
        #: The limits of the listener it came in on (each transportConnector has its own).
        self._limits = limits
        self._registry = registry
        #: Its listener's maximumConnections count (None once it is not counted in it).
        self._gate = gate
        self._loop = asyncio.get_running_loop()
        self._parser = FrameParser(
            max_frame_size=limits.max_frame_size,
            max_headers=limits.max_headers,
            max_header_length=limits.max_header_length,
        )
        self._transport: asyncio.Transport | None = None
        self._reading: ReadGate | None = None
        #: The next turn's go at the frames already read (the turn budget was spent).
        self._continue: asyncio.Handle | None = None
        self._outbox: Outbox | None = None
        self._session: Session | None = None
        self._last_read = self._loop.time()
        self._timer: asyncio.TimerHandle | None = None
        self._heartbeats_started = False
        #: When heart-beating started (the CONNECT was handled): a client silent since gets
        #: a period more, as ActiveMQ's first read check comes a period late.
        self._beats_from = 0.0
        self._tick_s = 1.0
        self._closed = False
        #: Bytes of the frame being received charged to the memory meter (``_reserve``).
        self._reserved = 0
        #: The next look for room for it, while reading waits for memory.
        self._memory_wait: asyncio.TimerHandle | None = None
        self.peer = "?"
        #: The peer's address alone (what failed logins count against).
        self._address: str | None = None
        #: Epoch seconds, for the admin API's connection list.
        self.connected_at = time.time()
        #: The connector it came in on (its name) and that connector's transport (stomp,
        #: stomp+ssl, ws, ...): the console groups connections by them (``StompServer``).
        self.via: tuple[str, str] = ("stomp", "stomp")

    @property
    def session_id(self) -> str | None:
        return self._session.id if self._session is not None else None

    # -- asyncio.Protocol ------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports implement asyncio.Transport without subclassing it.
        transport = cast("asyncio.Transport", transport)
        if self._gate is not None:
            refusal = self._gate.admit()
            if refusal is not None:
                self._gate.refuse(transport, refusal)
                self._gate = None
                self._closed = True
                return
        self._transport = transport
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        self._address = str(peer[0]) if isinstance(peer, tuple) else None
        transport.set_write_buffer_limits(high=self._limits.write_high_water)
        self._reading = ReadGate(transport)
        self._outbox = self.outbox_class(
            self._loop,
            transport,
            self._fail,
            self._close,
            self._limits.write_high_water,
            max_pending=self._limits.max_pending,
            held_limit=self._limits.held_high_water,
            on_writable=self._writable_changed,
            meter=self._engine.usage.memory,
            traffic=self._engine.observer.traffic,
            reading=self._reading,
        )
        self._session = self._engine.open_session(self._outbox, f"{self._scheme(transport)}://{self.peer}")
        self._registry.add(self)
        self._timer = self._loop.call_later(self._limits.connect_timeout, self._connect_deadline)

    def _scheme(self, transport: asyncio.Transport) -> str:
        """How ActiveMQ writes its clients' addresses: ``tcp://`` (TLS too: ActiveMQ's
        SslTransport is a TcpTransport)."""
        return "tcp"

    def data_received(self, data: bytes) -> None:
        session = self._session
        if session is None or self._closed or self._refusing is not None:
            return
        self._last_read = self._loop.time()
        self._engine.observer.traffic.bytes_in += len(data)
        self._parser.feed(data)
        if self._verifying is None and self._continue is None:
            self._handle_frames(session)

    def _handle_frames(
        self, session: Session, verified: Frame | None = None, pending: Frame | None = None
    ) -> None:
        """Hand the engine ``verified`` (a CONNECT back from its password check) or
        ``pending`` (a frame read, left for this turn), then every whole frame the parser
        holds, until a CONNECT needs a slow check or the turn's budget is spent."""
        parser = self._parser
        engine = self._engine
        engine.clock.set(time.time())
        traffic = engine.observer.traffic
        # The turn budget: frames in plus frames they sent out (a topic's fan-out), and time.
        spent = -traffic.frames_out
        clock = self._turn_clock
        deadline = clock() + TURN_SECONDS
        frame = verified if verified is not None else pending
        try:
            if frame is None:
                frame = parser.next_frame()
            while frame is not None:
                if self._reserved:
                    # Whole now: what it holds is charged as the message it becomes.
                    self._unreserve()
                if frame is not verified:
                    # The verified CONNECT was counted when it was parsed.
                    traffic.frames_in += 1
                    if session.phase is AWAIT_CONNECT:
                        self._default_heart_beat(frame)
                        if self._check_slowly(session, frame):
                            return
                try:
                    engine.handle(session, frame)
                except StompError as exc:
                    if closes(exc):
                        raise
                    # Refused for what it means: the ERROR, and the next frame.
                    self._tell(exc)
                if session.closing:
                    self._close()
                    return
                parser.version = session.version
                spent += FRAME_IN
                if spent + traffic.frames_out >= TURN_BUDGET or clock() >= deadline:
                    frame = parser.next_frame()
                    if frame is not None:
                        # Enough for one turn of the loop: the others go first, then the rest.
                        self._next_turn(session, frame)
                    return
                frame = parser.next_frame()
        except Exception as exc:
            # Ours to explain (StompError) or our bug: _fail tells them apart.
            self._fail(exc)
            return
        finally:
            engine.flush()
        if self._reserved or parser.incoming > CHARGE_ABOVE:
            self._reserve()
        if not self._heartbeats_started and session.phase is CONNECTED:
            self._start_heartbeats()

    def _reserve(self) -> None:
        """Charge the frame being received to memory, whole, before the rest is read; while
        there is no room for it, reading waits (and looks again every ``MEMORY_POLL_S``)."""
        if self._closed or self._reading is None:
            return
        want = self._parser.incoming
        more = want - self._reserved
        meter = self._engine.usage.memory
        if more > 0:
            if not meter.fits(more):
                if want > meter.limit:
                    self._fail(
                        FrameTooLarge(
                            f"a frame of {want} bytes is more than the memory limit (memoryUsage) "
                            f"of {meter.limit} bytes"
                        )
                    )
                    return
                self._reading.pause(MEMORY)
                if self._memory_wait is None:
                    self._memory_wait = self._loop.call_later(MEMORY_POLL_S, self._memory_poll)
                return
            meter.charge(more)
            self._reserved = want
        self._reading.resume(MEMORY)

    def _memory_poll(self) -> None:
        self._memory_wait = None
        self._reserve()

    def _unreserve(self) -> None:
        self._engine.usage.memory.release(self._reserved)
        self._reserved = 0
        if self._memory_wait is not None:
            self._memory_wait.cancel()
            self._memory_wait = None

    def _next_turn(self, session: Session, frame: Frame) -> None:
        """Handle ``frame``, and the rest already read, in a later turn of the loop."""
        assert self._reading is not None
        self._reading.pause(TURN)
        self._continue = self._loop.call_soon(self._go_on, session, frame)

    def _go_on(self, session: Session, frame: Frame) -> None:
        self._continue = None
        if self._closed:
            return
        self._handle_frames(session, pending=frame)
        if self._continue is None and self._verifying is None and self._reading is not None:
            self._reading.resume(TURN)

    def _check_slowly(self, session: Session, frame: Frame) -> bool:
        """Whether ``frame`` is a CONNECT whose password is now being checked off the loop."""
        if frame.command not in (CONNECT, STOMP):
            return False
        headers = frame.headers
        check = self._engine.guard.slow_login(headers.get("login"), headers.get("passcode"))
        if check is None:
            return False
        assert self._reading is not None
        self._reading.pause(LOGIN)
        self._verifying = self._loop.create_task(self._verify(session, frame, check))
        return True

    async def _verify(self, session: Session, frame: Frame, check: Callable[[], object]) -> None:
        try:
            verdict = await self._verifier.run(check, lambda: not self._closed)
        except Exception as exc:
            self._verifying = None
            self._fail(exc)
            return
        self._verifying = None
        if self._closed:
            return
        session.login_verdict = verdict
        self._handle_frames(session, frame)
        if not self._closed and self._verifying is None and self._reading is not None:
            self._reading.resume(LOGIN)

    def eof_received(self) -> bool | None:
        return None

    def pause_writing(self) -> None:
        if self._outbox is not None:
            self._outbox.pause_writing()

    def resume_writing(self) -> None:
        if self._outbox is not None:
            self._outbox.resume_writing()

    def _writable_changed(self, writable: bool) -> None:
        """The outbox's verdict (transport buffer, held bytes) on dispatching to it."""
        if self._session is not None and not (writable and self._closed):
            self._engine.set_writable(self._session, writable)

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        if self._gate is not None:
            self._gate.leave()
            self._gate = None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._continue is not None:
            self._continue.cancel()
            self._continue = None
        if self._refusing is not None:
            self._refusing.cancel()
            self._refusing = None
        self._registry.discard(self)
        if self._reserved or self._memory_wait is not None:
            self._unreserve()
        if self._session is not None:
            self._engine.close_session(self._session)

    # -- closing ---------------------------------------------------------------

    def _fail(self, exc: BaseException) -> None:
        """Tell the client what went wrong in one ERROR frame, then close cleanly (a failed
        login after several: later, broker/io/logins.py), unless the error keeps the
        connection (``errors.closes``)."""
        if self._closed or self._refusing is not None:
            return
        if not closes(exc):
            # A frame refused later (a parked SEND past its deadline): the ERROR alone.
            assert isinstance(exc, StompError)
            self._tell(exc)
            return
        if isinstance(exc, NotAuthenticated) and self._logins is not None and self._session is not None:
            delay = self._logins.failed(self._address, self._session.login)
            if delay > 0 and self._reading is not None:
                # Nothing more is read or handled until it is answered; others are served.
                self._reading.pause(LOGIN)
                self._refusing = self._logins.later(delay, lambda: self._refuse(exc))
                return
        self._answer(exc)

    def _refuse(self, exc: BaseException) -> None:
        self._refusing = None
        if not self._closed:
            self._answer(exc)

    def _tell(self, exc: StompError) -> None:
        """The ERROR for a frame refused for what it means; the connection goes on.  A
        refusal of rights is logged (who tried what); the other mistakes only at debug, so
        that a client's stream of them cannot fill the log."""
        level = logging.INFO if isinstance(exc, AccessDenied) else logging.DEBUG
        log.log(level, "refused a frame from %s: %s: %s", self.peer, exc.summary, exc)
        assert self._session is not None and self._outbox is not None
        self._outbox.push((encode_frame(to_error_frame(exc, exc.receipt_id), self._session.version),))

    def _answer(self, exc: BaseException) -> None:
        receipt = exc.receipt_id if isinstance(exc, StompError) else None
        if isinstance(exc, StompError):
            log.info("closing %s after error: %s: %s", self.peer, exc.summary, exc)
        frame = to_error_frame(exc, receipt)
        assert self._session is not None and self._outbox is not None
        self._outbox.push((encode_frame(frame, self._session.version),))
        self._close()

    def _close(self) -> None:
        """Flush what is queued (RECEIPT, ERROR), then close; the transport drains first."""
        if self._closed:
            return
        self._closed = True
        if self._session is not None:
            # Stop dispatching to it now; connection_lost gives back what it held.
            self._engine.close_session(self._session)
        transport = self._transport
        if self._outbox is not None and transport is not None:
            # A RECEIPT still waiting for the store goes out before the close.
            self._outbox.finish(transport.close)
        elif transport is not None:
            transport.close()

    def close(self) -> None:
        """Server shutdown."""
        self._close()

    def abort(self) -> None:
        """Server shutdown, for a client that does not read what it was sent."""
        if self._transport is not None:
            self._transport.abort()

    def _default_heart_beat(self, frame: Frame) -> None:
        """ActiveMQ's transport.defaultHeartBeat: a CONNECT without a heart-beat header is
        taken as one that asked for the listener's default (ProtocolConverter does the
        same), so even a STOMP 1.0 client that dies silently is noticed."""
        default = self._limits.default_heart_beat
        if frame.command in (CONNECT, STOMP) and "heart-beat" not in frame.headers and any(default):
            frame.headers["heart-beat"] = f"{default[0]},{default[1]}"

    # -- timers ----------------------------------------------------------------

    def _connect_deadline(self) -> None:
        self._timer = None
        if self._refusing is not None:
            # A failed login, answered soon: its ERROR says more than a silent close.
            return
        if self._session is not None and self._session.phase is AWAIT_CONNECT and not self._closed:
            log.info("closing %s: no CONNECT within %.0f s", self.peer, self._limits.connect_timeout)
            self._close()

    def _start_heartbeats(self) -> None:
        self._heartbeats_started = True
        self._beats_from = self._loop.time()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        session = self._session
        assert session is not None
        intervals = [ms for ms in (session.heartbeat_send_ms, session.heartbeat_recv_ms) if ms]
        if intervals:
            self._tick_s = max(min(intervals) / 2000.0, 0.05)
            self._timer = self._loop.call_later(self._tick_s, self._heartbeat_tick)

    def _heartbeat_tick(self) -> None:
        self._timer = None
        session = self._session
        if self._closed or session is None or self._transport is None or self._outbox is None:
            return
        now = self._loop.time()
        recv_ms = session.heartbeat_recv_ms
        if recv_ms and (now - self._last_read) * 1000 > recv_ms * self._limits.heartbeat_grace * (
            # ActiveMQ's read check (AbstractInactivityMonitor): every interval x
            # hbGracePeriodMultiplier it closes a client it read nothing from since the
            # last check, so one is closed 1 to 2 periods after its last byte, 2 to 3
            # after its CONNECT (it waits a period before its first check; measured on
            # 5.17).  We close at the latest of those: never before ActiveMQ would.
            3 if self._last_read <= self._beats_from else 2
        ):
            log.info("closing %s: no data or heart-beat for %.1f s", self.peer, now - self._last_read)
            self._close()
            return
        send_ms = session.heartbeat_send_ms
        if send_ms and (now - self._outbox.wrote_at) * 1000 >= send_ms * 0.9:
            self._outbox.push((HEARTBEAT,))
            # Not a frame: the outbox counted it as one.
            self._engine.observer.traffic.frames_out -= 1
            self._outbox.flush()
        self._timer = self._loop.call_later(self._tick_s, self._heartbeat_tick)
