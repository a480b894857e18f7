"""A destination's statistics: the counters ``/metrics``, the console, the XML feeds,
Jolokia and the statistics plugin read, and the message sizes and enqueue times
ActiveMQ's ``DestinationStatistics`` keeps beside them (its ``messageSize`` and
``processTime``).

A message's size is what the memory limit is charged for it (``Message.size``), as
ActiveMQ's is what its memory usage counts.  Its enqueue time is ActiveMQ's: from the
broker taking it to a dispatch of it, in ms, once per dispatch (a topic's to each
subscriber, a redelivery again).  The minimums are true ones: ActiveMQ's
``TimeStatisticImpl`` takes a 0 for "none yet", so after a 0 ms dispatch the next one
becomes its minimum, whatever it is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from broker.core.base.message import Message


class DestinationStats:
    __slots__ = (
        "dead_lettered",
        "dequeued",
        "dispatched",
        "enqueued",
        "expired",
        "redelivered",
        "size_count",
        "size_max",
        "size_min",
        "size_total",
        "wait_count",
        "wait_max",
        "wait_min",
        "wait_total",
    )

    def __init__(self) -> None:
        self.enqueued = 0
        self.dispatched = 0
        #: Acked: by an ACK (settlement), or at once for an ack:auto subscriber.
        self.dequeued = 0
        self.expired = 0
        self.redelivered = 0
        self.dead_lettered = 0
        self.size_count = self.size_total = self.size_min = self.size_max = 0
        self.wait_count = self.wait_total = self.wait_min = self.wait_max = 0

    def enqueue(self, message: Message) -> None:
        """``message`` came to the destination: counted, and its size."""
        self.enqueued += 1
        size = message.size
        if not self.size_count or size < self.size_min:
            self.size_min = size
        if size > self.size_max:
            self.size_max = size
        self.size_count += 1
        self.size_total += size

    def waited(self, message: Message, now: int, times: int) -> None:
        """``times`` dispatches of ``message`` at ``now`` (clock ms): its enqueue time.

        Its start is when the broker took it (``arrived``), or, for one read back from a
        store, which keeps no such time, its ``timestamp`` (the broker's at the SEND,
        unless the producer set one): none, it is not timed."""
        start = message.arrived or message.timestamp
        if not start:
            return
        ms = now - start
        if ms < 0:
            ms = 0
        if not self.wait_count or ms < self.wait_min:
            self.wait_min = ms
        if ms > self.wait_max:
            self.wait_max = ms
        self.wait_count += times
        self.wait_total += ms * times

    def add_to(self, whole: DestinationStats) -> None:
        """Its sizes and enqueue times into ``whole``'s: a broker's over its destinations
        (in ActiveMQ every destination's statistics feed the broker's, their parent)."""
        if self.size_count:
            if not whole.size_count or self.size_min < whole.size_min:
                whole.size_min = self.size_min
            if self.size_max > whole.size_max:
                whole.size_max = self.size_max
            whole.size_count += self.size_count
            whole.size_total += self.size_total
        if self.wait_count:
            if not whole.wait_count or self.wait_min < whole.wait_min:
                whole.wait_min = self.wait_min
            if self.wait_max > whole.wait_max:
                whole.wait_max = self.wait_max
            whole.wait_count += self.wait_count
            whole.wait_total += self.wait_total

    @property
    def average_size(self) -> int:
        """Bytes, rounded down (ActiveMQ's ``AverageMessageSize`` is a long)."""
        return self.size_total // self.size_count if self.size_count else 0

    @property
    def average_wait(self) -> float:
        """Ms (ActiveMQ's ``AverageEnqueueTime`` is a double)."""
        return self.wait_total / self.wait_count if self.wait_count else 0.0
