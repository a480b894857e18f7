"""Pending messages in strict priority order (9 first), FIFO within a priority.

A cursor is what a queue, or a topic subscription, keeps its undispatched messages
in.  This one holds them in memory; the swapping cursor (memory head, disk tail)
keeps the same interface.

Removal from the middle (a selector or message group picked a message past the head)
is lazy: the message's sequence number goes into ``_removed`` and is skipped when the
head reaches it, so every operation is O(1) amortised whatever the depth.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator

    from broker.core.message import Message

LEVELS = 10


class MemoryCursor:
    __slots__ = ("_levels", "_removed", "bytes", "count")

    def __init__(self) -> None:
        self._levels: list[deque[Message]] = [deque() for _ in range(LEVELS)]
        self._removed: set[int] = set()
        self.count = 0
        self.bytes = 0

    def __len__(self) -> int:
        return self.count

    def push(self, message: Message) -> None:
        self._levels[message.priority].append(message)
        self.count += 1
        self.bytes += message.size

    def push_returned(self, message: Message) -> None:
        """Put back a message that was dispatched: it goes before newer ones."""
        level = self._levels[message.priority]
        seq = message.seq
        self.count += 1
        self.bytes += message.size
        if seq in self._removed:
            # Taken lazily and never popped: its old slot is still in place, in order.
            self._removed.discard(seq)
            for i, pending in enumerate(level):
                if pending.seq == seq:
                    level[i] = message
                    return
        index = 0
        # Returned messages are almost always older than everything pending, so this
        # stops at once; it walks further only after selector-driven dispatch.
        for pending in level:
            if pending.seq > seq:
                break
            index += 1
        level.insert(index, message)

    def pop(self) -> Message | None:
        if not self.count:
            return None
        removed = self._removed
        for priority in range(LEVELS - 1, -1, -1):
            level = self._levels[priority]
            while level:
                message = level.popleft()
                if removed and message.seq in removed:
                    removed.discard(message.seq)
                    continue
                self.count -= 1
                self.bytes -= message.size
                return message
        return None

    def peek(self) -> Message | None:
        removed = self._removed
        for priority in range(LEVELS - 1, -1, -1):
            level = self._levels[priority]
            while level:
                message = level[0]
                if removed and message.seq in removed:
                    removed.discard(message.seq)
                    level.popleft()
                    continue
                return message
        return None

    def remove(self, message: Message) -> None:
        """Take out a message met while iterating (lazy; see module docstring)."""
        self._removed.add(message.seq)
        self.count -= 1
        self.bytes -= message.size

    def __iter__(self) -> Iterator[Message]:
        """Pending messages, best first.  Safe against ``remove`` of the current one."""
        removed = self._removed
        for priority in range(LEVELS - 1, -1, -1):
            for message in tuple(self._levels[priority]):
                if message.seq not in removed:
                    yield message

    def clear(self) -> list[Message]:
        messages = list(self)
        for level in self._levels:
            level.clear()
        self._removed.clear()
        self.count = 0
        self.bytes = 0
        return messages
