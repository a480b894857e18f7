"""A destination's last hour: depth, messages in and messages out, every 10 s, in a fixed ring.

One ``History`` per destination that has had anything in it (a never-used one has none),
its samples in one preallocated array: ``SLOTS`` samples of three counts, 16-bit
(``array('H')``, ``NARROW_BYTES``) until one does not fit, then 32-bit (``array('I')``,
``WIDE_BYTES``, copied once), so a destination's hour costs one of those two sizes
whatever happens to it, and nothing is allocated per sample.  A sample is taken for a
*period*, the clock's ms divided by ``INTERVAL_MS``; it holds the depth then, and how
many messages came in and went out since the sample before, so a rate is a count over
the interval, never a difference of two readings taken at odd times.  After ``SLOTS``
periods of nothing (empty, no traffic) the ring goes (what it said is all zeros) and
comes back, zeroed and narrow, with the next message.
"""

from __future__ import annotations

import sys
from array import array
from typing import Final

#: One sample every 10 s, an hour of them.
INTERVAL_MS: Final = 10_000
SLOTS: Final = 360
#: A sample's fields, in this order in the ring.
DEPTH, CAME, WENT = 0, 1, 2
_FIELDS: Final = 3
#: A count is kept to 32 bits (past that it stays at the most the ring can hold); a
#: narrow ring holds 16.
_MOST: Final = 0xFFFFFFFF
_NARROW_MOST: Final = 0xFFFF
_EMPTY: Final = array("H", [0]) * (SLOTS * _FIELDS)
#: What a ring costs in RAM (charged to memory usage while it exists), narrow and wide.
NARROW_BYTES: Final = sys.getsizeof(_EMPTY)
WIDE_BYTES: Final = sys.getsizeof(array("I", _EMPTY.tolist()))


class History:
    __slots__ = ("came", "first", "newest", "quiet_since", "ring", "went")

    def __init__(self, period: int) -> None:
        #: The samples, ``SLOTS`` of them, period ``p`` at ``p % SLOTS`` (None: all zeros).
        self.ring: array[int] | None = None
        #: The first period sampled, and the newest.
        self.first = period
        self.newest = period - 1
        #: The counters (messages in, messages out) as the newest sample read them.
        self.came = 0
        self.went = 0
        #: The period since which every sample has been all zeros.
        self.quiet_since = period

    def record(self, period: int, depth: int, came: int, went: int, room: bool = True) -> int:
        """Sample ``period``: ``depth`` now, the in and out counters as they are now;
        ``room``: whether memory has room to make or widen the ring now.  Returns the
        bytes the ring took (positive) or gave back (negative).

        Periods no pass sampled (the loop held, the clock moved on) share what came and
        went between them evenly, at today's depth: a missed sample makes no spike.
        Without room for a ring, the history starts again once there is (what happened
        meanwhile is not known, so nothing is said of it); without room to widen one,
        its counts stay at the most 16 bits hold."""
        newest = self.newest
        if period <= newest:
            return 0
        came_now = came - self.came if came > self.came else 0
        went_now = went - self.went if went > self.went else 0
        self.came = came
        self.went = went
        self.newest = period
        busy = depth or came_now or went_now
        if not busy and period - self.quiet_since >= SLOTS:
            # An hour of nothing: every sample in the ring is zero.
            ring = self.ring
            if ring is not None:
                self.ring = None
                return -(NARROW_BYTES if ring.itemsize == 2 else WIDE_BYTES)
            return 0
        if busy:
            self.quiet_since = period + 1
        grown = 0
        ring = self.ring
        if ring is None:
            if not busy:
                return 0  # zeros, as the missing ring says
            if not room:
                self.first = period + 1
                return 0
            ring = self.ring = _EMPTY[:]
            grown = NARROW_BYTES
        gap = period - newest
        if ring.itemsize == 2 and room and max(depth, came_now, went_now) > _NARROW_MOST:
            # Too big for 16 bits: the ring is 32-bit from now on (a copy, once).
            ring = self.ring = array("I", ring.tolist())
            grown += WIDE_BYTES - NARROW_BYTES
        most = _NARROW_MOST if ring.itemsize == 2 else _MOST
        depth = min(depth, most)
        share_in, share_out = min(came_now // gap, most), min(went_now // gap, most)
        for missed in range(period - min(gap, SLOTS) + 1, period):
            at = (missed % SLOTS) * _FIELDS
            ring[at] = depth
            ring[at + CAME] = share_in
            ring[at + WENT] = share_out
        # The newest period takes the remainder.
        at = (period % SLOTS) * _FIELDS
        ring[at] = depth
        ring[at + CAME] = min(came_now - share_in * (gap - 1), most)
        ring[at + WENT] = min(went_now - share_out * (gap - 1), most)
        return grown

    def samples(self) -> list[tuple[int, int, int, int]]:
        """(period, depth, in, out) for each period of the last hour sampled, oldest first."""
        start = max(self.first, self.newest - SLOTS + 1)
        ring = self.ring
        if ring is None:
            return [(period, 0, 0, 0) for period in range(start, self.newest + 1)]
        out = []
        for period in range(start, self.newest + 1):
            at = (period % SLOTS) * _FIELDS
            out.append((period, ring[at], ring[at + CAME], ring[at + WENT]))
        return out


#: What a ``History`` costs without its ring: its object, with the collector's head, and
#: the three period numbers it holds (ints of their own, past the small ones Python shares).
HOLDER_BYTES: Final = 16 + History.__basicsize__ + 3 * sys.getsizeof(1 << 40)
#: The history of a destination found busy while memory had no room even for a holder:
#: none (it says nothing), shared, never recorded into; the next sample with room makes
#: its own and starts there.
NO_ROOM: Final = History(0)
