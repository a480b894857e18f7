"""A minimal asyncio STOMP connection for load generation.

It is an `asyncio.Protocol`, not a stream pair: writes go straight to the transport
(pipelined, never waiting for the broker), `drain()` blocks only while the transport
is above its high-water mark, and MESSAGE frames are handed to the consumer a whole
read at a time, so acknowledgements can be coalesced into one write per read.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import cast

from perf.frames import FrameError, FrameSplitter, RawFrame, encode, header

# A deep transport buffer keeps the socket full without pausing the producer on every
# write; the low mark leaves room to refill before the kernel buffer runs dry.
WRITE_HIGH_WATER = 1 << 20
WRITE_LOW_WATER = 1 << 18

MessageHandler = Callable[[list[RawFrame]], None]


class StompFailure(Exception):
    """The broker refused us (an ERROR frame), went away, or did not answer in time.

    `counted` is True when the cause is already in the ErrorLog (the ERROR frame, the lost
    connection), so whoever catches it does not count one failure twice.
    """

    def __init__(self, message: str, counted: bool = False) -> None:
        super().__init__(message)
        self.counted = counted


@dataclass(slots=True)
class ErrorLog:
    """ERROR frames and connection failures seen by one worker (kept: the first few)."""

    count: int = 0
    samples: list[str] = field(default_factory=list)

    def add(self, text: str) -> None:
        self.count += 1
        if len(self.samples) < 5:
            self.samples.append(text)


def describe_error(frame: RawFrame) -> str:
    message = header(frame.head, b"message") or b""
    detail = frame.body.strip().split(b"\n", 1)[0][:200]  # not a whole Java stack trace
    text = message.decode("utf-8", "replace")
    if detail:
        text += ": " + detail.decode("utf-8", "replace")
    return "ERROR frame: " + text


class StompConnection(asyncio.Protocol):
    def __init__(self, name: str, errors: ErrorLog, failover: bool = False) -> None:
        self.name = name
        self.errors = errors
        # With --failover a lost connection is not an error: its owner connects again.
        self.failover = failover
        self.version = "1.0"
        self.on_messages: MessageHandler | None = None
        self.transport: asyncio.Transport | None = None
        loop = asyncio.get_running_loop()
        self._loop = loop
        self._splitter = FrameSplitter()
        self._connected: asyncio.Future[None] = loop.create_future()
        self._closed: asyncio.Future[None] = loop.create_future()
        self._receipts: dict[bytes, asyncio.Future[None]] = {}
        self._next_receipt = 0
        self._drain_waiter: asyncio.Future[None] | None = None
        self._paused = False
        self._disconnecting = False  # we are closing it: its end is not an error
        self._loss_counted = False  # the end of this connection is in the ErrorLog already

    # -- asyncio.Protocol callbacks -------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports do not subclass asyncio.Transport, so no isinstance check.
        self.transport = cast("asyncio.Transport", transport)
        self.transport.set_write_buffer_limits(WRITE_HIGH_WATER, WRITE_LOW_WATER)

    def data_received(self, data: bytes) -> None:
        try:
            frames = self._splitter.feed(data)
        except FrameError as exc:
            self._fail(f"{self.name}: unparsable data from broker: {exc}")
            return
        messages: list[RawFrame] | None = None
        for frame in frames:
            if frame.command == b"MESSAGE":
                if messages is None:
                    messages = [frame]
                else:
                    messages.append(frame)
            else:
                self._control_frame(frame)
        if messages is not None and self.on_messages is not None:
            self.on_messages(messages)

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        waiter, self._drain_waiter = self._drain_waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self._disconnecting:
            if not self.failover:
                reason = f": {exc}" if exc else ""
                self.errors.add(f"{self.name}: connection lost{reason}")
            self._loss_counted = True
        failure = self._closed_failure()
        for fut in (self._connected, self._drain_waiter, *self._receipts.values()):
            if fut is not None and not fut.done():
                fut.set_exception(failure)
                fut.exception()  # retrieved: nobody may be waiting for this one
        self._receipts.clear()
        if not self._closed.done():
            self._closed.set_result(None)

    def _closed_failure(self) -> StompFailure:
        return StompFailure(f"{self.name}: connection closed", counted=self._loss_counted)

    # -- frames that are not messages -------------------------------------------------
    def _control_frame(self, frame: RawFrame) -> None:
        command = frame.command
        if command == b"RECEIPT":
            receipt_id = header(frame.head, b"receipt-id")
            fut = self._receipts.pop(receipt_id, None) if receipt_id is not None else None
            if fut is not None and not fut.done():
                fut.set_result(None)
        elif command == b"CONNECTED":
            version = header(frame.head, b"version")
            self.version = version.decode() if version else "1.0"
            if not self._connected.done():
                self._connected.set_result(None)
        elif command == b"ERROR":
            text = f"{self.name}: {describe_error(frame)}"
            if not self._connected.done():
                self._connected.set_exception(StompFailure(text))
                return
            self.errors.add(text)
            # An ERROR answering a frame that asked for a receipt carries its receipt-id:
            # fail that wait now rather than let it time out.
            receipt_id = header(frame.head, b"receipt-id")
            fut = self._receipts.pop(receipt_id, None) if receipt_id is not None else None
            if fut is not None and not fut.done():
                fut.set_exception(StompFailure(text, counted=True))

    def _fail(self, text: str) -> None:
        self.errors.add(text)
        self._loss_counted = True
        self._disconnecting = True  # so connection_lost does not count it again
        if self.transport is not None:
            self.transport.abort()

    # -- used by producers and consumers -------------------------------------------
    @property
    def is_closed(self) -> bool:
        return self._closed.done() or (self.transport is not None and self.transport.is_closing())

    def write(self, data: bytes) -> None:
        transport = self.transport
        assert transport is not None
        if transport.is_closing():
            # uvloop raises on a write to a closed transport: say what happened instead.
            raise self._closed_failure()
        transport.write(data)

    async def drain(self) -> None:
        """Wait while the transport is above its high-water mark (the broker is slower)."""
        if self._closed.done():
            raise self._closed_failure()
        if not self._paused:
            return
        if self._drain_waiter is None:
            self._drain_waiter = self._loop.create_future()
        await self._drain_waiter

    def new_receipt(self) -> tuple[bytes, asyncio.Future[None]]:
        """A receipt id to put on the next frame, and the future its RECEIPT resolves."""
        self._next_receipt += 1
        receipt_id = b"r%d" % self._next_receipt
        fut: asyncio.Future[None] = self._loop.create_future()
        if self._closed.done():
            fut.set_exception(self._closed_failure())
        else:
            self._receipts[receipt_id] = fut
        return receipt_id, fut

    async def request(self, command: str, headers: dict[str, str], timeout: float) -> None:
        """Send a frame with a receipt header and wait for its RECEIPT."""
        receipt_id, fut = self.new_receipt()
        self.write(encode(command, {**headers, "receipt": receipt_id.decode()}, version=self.version))
        try:
            await asyncio.wait_for(fut, timeout)
        except TimeoutError:
            raise StompFailure(f"{self.name}: no RECEIPT for {command} within {timeout:g} s") from None

    async def disconnect(self, timeout: float) -> None:
        """DISCONNECT with a receipt, so everything written before it has been processed."""
        if self._closed.done():
            return
        # From here the broker may close first (right after its RECEIPT): not an error.
        self._disconnecting = True
        try:
            await self.request("DISCONNECT", {}, timeout)
        finally:
            self.close()

    def close(self) -> None:
        self._disconnecting = True
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()

    async def wait_connected(self, timeout: float) -> None:
        try:
            await asyncio.wait_for(asyncio.shield(self._connected), timeout)
        except TimeoutError:
            raise StompFailure(f"{self.name}: no CONNECTED within {timeout:g} s") from None

    async def wait_closed(self) -> None:
        await self._closed


async def connect(
    *,
    name: str,
    host: str,
    port: int,
    vhost: str,
    login: str | None,
    passcode: str | None,
    timeout: float,
    errors: ErrorLog,
    failover: bool = False,
    factory: Callable[[str, ErrorLog, bool], StompConnection] = StompConnection,
) -> StompConnection:
    """A connected STOMP session; `factory` makes the protocol object (a subclass, say)."""
    loop = asyncio.get_running_loop()
    try:
        _, conn = await asyncio.wait_for(
            loop.create_connection(lambda: factory(name, errors, failover), host, port), timeout
        )
    except (OSError, TimeoutError) as exc:
        raise StompFailure(f"{name}: cannot connect to {host}:{port}: {exc or 'timeout'}") from None
    headers = {"accept-version": "1.0,1.1,1.2", "host": vhost, "heart-beat": "0,0"}
    if login is not None:
        headers["login"] = login
    if passcode is not None:
        headers["passcode"] = passcode
    conn.write(encode("CONNECT", headers))
    try:
        await conn.wait_connected(timeout)
    except StompFailure:
        conn.close()
        raise
    return conn


def close_quietly(conn: StompConnection) -> None:
    with contextlib.suppress(Exception):
        conn.close()


#: Between two rounds of the --failover list (stomp.py's first reconnect delay is 0.1 s).
RETRY_S = 0.05


async def connect_any(
    *,
    name: str,
    brokers: Sequence[tuple[str, int]],
    vhost: str,
    login: str | None,
    passcode: str | None,
    timeout: float,
    errors: ErrorLog,
    failover: bool = False,
    deadline: float = 0.0,
) -> StompConnection:
    """The first of ``brokers`` that answers CONNECT.  With ``failover``, the list is tried
    again until ``deadline`` (loop time): a standby of a pair refuses the TCP connection at
    once, and the master may take a while to come."""
    loop = asyncio.get_running_loop()
    while True:
        failures = []
        for host, port in brokers:
            try:
                return await connect(
                    name=name,
                    host=host,
                    port=port,
                    vhost=vhost,
                    login=login,
                    passcode=passcode,
                    timeout=min(timeout, max(deadline - loop.time(), 0.1)) if failover else timeout,
                    errors=errors,
                    failover=failover,
                )
            except StompFailure as exc:
                failures.append(exc)
        if not failover:
            raise failures[0]
        if loop.time() >= deadline:
            raise StompFailure(
                f"{name}: no broker of the failover list answered: {'; '.join(map(str, failures))}"
            )
        await asyncio.sleep(RETRY_S)
