"""A consumer of the load: it subscribes, acks as told, and counts what it received (lost,
duplicated, out of order, latency).  Its hot path is ``on_messages``: no per-message
allocation beyond the frame itself, only local variables in its loop."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from perf.frames import escape, header
from perf.histogram import Histogram
from perf.payload import MAGIC, STAMP, STAMP_SIZE

if TYPE_CHECKING:
    import asyncio
    from collections.abc import Callable

    from perf.client import StompConnection
    from perf.frames import RawFrame
    from perf.settings import Settings

# The bitmap of seen sequences grows in steps of this many bytes (32768 sequences).
SEEN_GROWTH = 4096
#: --ack-receipts: past this many ACK receipts kept, the answered ones are let go.
ACK_RECEIPTS_KEPT = 4096


@dataclass(slots=True)
class Outage:
    """One lost connection, with --failover: when it was noticed, when a broker of the
    list answered CONNECT again, and when the first RECEIPT (a producer) or MESSAGE (a
    consumer) came from it."""

    down_ns: int
    back_ns: int
    resumed_ns: int = 0


class Consumer:
    def __init__(
        self,
        number: int,
        settings: Settings,
        run_id: int,
        conn: StompConnection,
        group: int,
        seen: dict[int, bytearray],
    ) -> None:
        self.number = number
        self.settings = settings
        self.run_id = run_id
        self.conn = conn
        self.group = group
        self.seen = seen
        self.latency = Histogram()
        self.warm_ns = 0  # set when the start time is known; messages sent before it are not timed
        self.received = 0
        self.distinct = 0
        self.foreign = 0
        self.out_of_order = 0
        self.window_received = 0
        self.window_bytes = 0
        self.last_receive_ns = 0
        self._last_seq: dict[int, int] = {}  # (producer << 4 | priority) -> highest sequence
        self._sub_id = f"perf-{number}"
        self.subscribed = False
        #: The longest wait between two reads that brought messages (a failover's gap).
        self.longest_gap_ns = 0
        self.outages: list[Outage] = []
        #: --ack-receipts: the RECEIPT of each ACK sent (answered ones are pruned now and then).
        self.ack_receipts: list[asyncio.Future[None]] = []
        self._ack_frames: Callable[[list[RawFrame]], list[bytes]] | None = None
        self.attach(conn)

    def attach(self, conn: StompConnection) -> None:
        """Receive on ``conn`` (at the start, and after a failover)."""
        self.conn = conn
        self._ack_frames = self._make_ack_encoder()
        conn.on_messages = self.on_messages

    async def subscribe(self) -> None:
        s = self.settings
        headers = {"destination": s.destination, "id": self._sub_id, "ack": s.ack}
        if s.prefetch is not None:
            # ActiveMQ reads the first, RabbitMQ the second; each ignores the other.
            headers["activemq.prefetchSize"] = str(s.prefetch)
            headers["prefetch-count"] = str(s.prefetch)
        if s.selector:
            headers["selector"] = s.selector
        await self.conn.request("SUBSCRIBE", headers, s.connect_timeout)
        self.subscribed = True

    def _make_ack_encoder(self) -> Callable[[list[RawFrame]], list[bytes]] | None:
        mode = self.settings.ack
        if mode == "auto":
            return None
        version = self.conn.version
        sub = escape(self._sub_id, version).encode()

        with_receipts = self.settings.ack_receipts

        def ack_of(frame: RawFrame) -> bytes:
            # 1.2 acknowledges by the MESSAGE's `ack` header, 1.1 by message-id plus
            # subscription, 1.0 by message-id alone.  Values go back still escaped.
            end = b"\n\n\0"
            if with_receipts:
                receipt_id, fut = self.conn.new_receipt()
                self.ack_receipts.append(fut)
                end = b"\nreceipt:" + receipt_id + end
            if version == "1.2":
                return b"ACK\nid:" + (header(frame.head, b"ack") or b"") + end
            mid = header(frame.head, b"message-id") or b""
            if version == "1.1":
                return b"ACK\nsubscription:" + sub + b"\nmessage-id:" + mid + end
            return b"ACK\nmessage-id:" + mid + end

        if mode == "client":
            # Cumulative: one ACK for the last message of each read acknowledges the read.
            return lambda frames: [ack_of(frames[-1])]
        return lambda frames: [ack_of(f) for f in frames]

    def on_messages(self, frames: list[RawFrame]) -> None:
        now = time.monotonic_ns()
        warm_ns = self.warm_ns
        timed = now >= warm_ns
        unpack = STAMP.unpack_from
        run_id = self.run_id
        seen = self.seen
        last_seq = self._last_seq
        record = self.latency.record
        received = distinct = foreign = disorder = nbytes = 0
        for frame in frames:
            body = frame.body
            if len(body) < STAMP_SIZE:
                foreign += 1
                continue
            magic, run, producer, prio, seq, sent_ns = unpack(body)
            if magic != MAGIC or run != run_id:
                foreign += 1  # left on the destination by an earlier run, or not ours
                continue
            received += 1
            nbytes += len(body)
            bits = seen.get(producer)
            if bits is None:
                bits = seen[producer] = bytearray(SEEN_GROWTH)
            index = seq >> 3
            if index >= len(bits):
                bits.extend(bytes(index - len(bits) + SEEN_GROWTH))
            mask = 1 << (seq & 7)
            if bits[index] & mask:
                continue  # a duplicate: counted by received - distinct, not timed or ordered
            bits[index] |= mask
            distinct += 1
            key = producer << 4 | prio
            if seq < last_seq.get(key, -1):
                disorder += 1
            else:
                last_seq[key] = seq
            if sent_ns >= warm_ns:  # sent in the warm-up: not timed, however late it comes
                record(now - sent_ns)
        self.received += received
        self.distinct += distinct
        self.foreign += foreign
        self.out_of_order += disorder
        if timed:
            self.window_received += received
            self.window_bytes += nbytes
        if received:
            if self.last_receive_ns and now - self.last_receive_ns > self.longest_gap_ns:
                self.longest_gap_ns = now - self.last_receive_ns
            if self.outages and not self.outages[-1].resumed_ns:
                self.outages[-1].resumed_ns = now
            self.last_receive_ns = now
        if self._ack_frames is not None and not self.conn.is_closed:
            assert self.conn.transport is not None
            self.conn.transport.writelines(self._ack_frames(frames))
            if len(self.ack_receipts) > ACK_RECEIPTS_KEPT:
                self.ack_receipts = [fut for fut in self.ack_receipts if not fut.done()]

    def unanswered_acks(self) -> int:
        """ACKs whose RECEIPT did not come (or came as an ERROR)."""
        return sum(1 for fut in self.ack_receipts if not fut.done() or fut.exception() is not None)
