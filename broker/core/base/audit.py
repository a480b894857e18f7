"""Which forwarded messages this broker already has: ActiveMQ's producer audit.

A message that crossed a network bridge keeps the id its first broker gave it.  When a
link or a broker dies with a message in flight, the sender sends it again (it never
had the receipt), and the receiver may already hold it: the audit says so, and the
copy is dropped (but receipted, so the sender lets go of it).

Ids are ``<prefix><sequence>`` (stompd's ``ID-<boot>-<seq>``, ActiveMQ's
``ID:host-...:1:1:1:<seq>``): for each prefix, a window of the last ``window``
sequence numbers is kept as bits, ActiveMQ's ``ActiveMQMessageAudit`` (a ``BitArrayBin``
per producer).  A sequence older than the window is taken as new, as ActiveMQ does; an
id that does not end in digits is remembered in a bounded set of its own.  The oldest
prefix is forgotten past ``origins`` of them.  Memory is bounded: ``window / 8`` bytes a
prefix.

Ids are kept per origin, the broker the message was first on (``bridging.origin_of``):
an id is a copy only of one from the same origin, so whatever one origin's ids are, no
other origin's message is taken for a copy.  And an id is recorded only once its message
is stored (``Scheduler.deliver``), never when it arrives: a SEND in a transaction that
is aborted, or one refused after waiting for room, leaves nothing here.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Final

#: Sequence numbers remembered per prefix (ActiveMQ's audit depth is 2,048 per producer;
#: a prefix here is a whole broker's sequence, shared by all its destinations).
WINDOW: Final = 1 << 16
#: Prefixes (brokers' boots, foreign producers; of any origin) remembered at once.
ORIGINS: Final = 256
_DIGITS: Final = "0123456789"
#: More digits than this is not a sequence number.
_MAX_DIGITS: Final = 18


class _Bits:
    """One prefix's window: bit ``seq % size`` says whether ``seq`` was seen, for the
    sequences from ``high - size + 1`` to ``high``."""

    __slots__ = ("bits", "high")

    def __init__(self, size: int, seq: int) -> None:
        self.bits = bytearray(size >> 3)
        self.high = seq


class ProducerAudit:
    __slots__ = ("_origins", "_others", "_size", "_windows", "duplicates")

    def __init__(self, window: int = WINDOW, origins: int = ORIGINS) -> None:
        if window < 8 or window & (window - 1):
            raise ValueError("the window is a power of two, at least 8")
        self._size = window
        self._origins = origins
        #: (origin, prefix) -> its window.
        self._windows: OrderedDict[tuple[str, str], _Bits] = OrderedDict()
        #: (origin, id) of ids without a sequence number, the last ``window`` of them.
        self._others: OrderedDict[tuple[str, str], None] = OrderedDict()
        #: Copies found so far (the caller drops them).
        self.duplicates = 0

    def seen(self, origin: str, message_id: str) -> bool:
        """Whether ``message_id`` of ``origin`` was recorded (and is still in its window)."""
        prefix, seq = _split(message_id)
        if seq < 0:
            return (origin, message_id) in self._others
        window = self._windows.get((origin, prefix))
        if window is None or seq > window.high or seq <= window.high - self._size:
            return False
        index = seq & (self._size - 1)
        return bool(window.bits[index >> 3] & (1 << (index & 7)))

    def record(self, origin: str, message_id: str) -> None:
        """``message_id`` of ``origin`` is stored here: a copy of it is one from now on."""
        prefix, seq = _split(message_id)
        if seq < 0:
            others = self._others
            key = (origin, message_id)
            others[key] = None
            others.move_to_end(key)
            if len(others) > self._size:
                others.popitem(last=False)
            return
        size = self._size
        windows = self._windows
        key = (origin, prefix)
        window = windows.get(key)
        if window is None:
            window = windows[key] = _Bits(size, seq)
            if len(windows) > self._origins:
                windows.popitem(last=False)
        else:
            windows.move_to_end(key)
            if seq > window.high:
                _clear(window.bits, window.high + 1, seq - window.high, size)
                window.high = seq
            elif seq <= window.high - size:
                return
        index = seq & (size - 1)
        window.bits[index >> 3] |= 1 << (index & 7)


def _split(message_id: str) -> tuple[str, int]:
    """(prefix, sequence), or (id, -1) for an id that does not end in a number."""
    prefix = message_id.rstrip(_DIGITS)
    digits = len(message_id) - len(prefix)
    if not digits or digits > _MAX_DIGITS:
        return message_id, -1
    return prefix, int(message_id[len(prefix) :])


def _clear(bits: bytearray, start: int, count: int, size: int) -> None:
    """Clear the bits of sequences ``start`` .. ``start + count - 1`` (they are new)."""
    if count >= size:
        bits[:] = bytes(len(bits))
        return
    index = start & (size - 1)
    # Bit by bit up to a byte boundary, whole bytes, then bit by bit again (the usual
    # case, the next sequence, is one bit).
    while count and index & 7:
        bits[index >> 3] &= ~(1 << (index & 7)) & 0xFF
        index = (index + 1) & (size - 1)
        count -= 1
    while count >= 8:
        whole = min(count >> 3, (size - index) >> 3)
        first = index >> 3
        bits[first : first + whole] = bytes(whole)
        index = (index + (whole << 3)) & (size - 1)
        count -= whole << 3
    while count:
        bits[index >> 3] &= ~(1 << (index & 7)) & 0xFF
        index = (index + 1) & (size - 1)
        count -= 1
