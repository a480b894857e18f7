"""Binary keys.  Big-endian, so LevelDB's byte order is the order we dispatch in.

A message key is ``b"m" + log id (4 bytes) + (9 - priority) (1 byte) + sequence (8 bytes)``:
a range scan over one log yields priority 9 first, then FIFO within a priority, which
is exactly the cursor's order, on disk as in memory.
"""

from __future__ import annotations

import struct
from typing import Final

from store.api import LEVELS

MESSAGE: Final = b"m"
_MESSAGE = struct.Struct(">cIBQ")
_LEVEL = struct.Struct(">cIB")
_LOG = struct.Struct(">cI")
#: The best priority: stored as 0, so that it sorts first.
MAX_PRIORITY: Final = LEVELS - 1
#: Above every key of ours: a ``compact``'s default end.  (With no bounds, plyvel hands
#: LevelDB an empty range, and only the memtable is flushed.)
ALL_KEYS_BELOW: Final = b"\xff" * 32
#: The length of a level's prefix (``level_prefix``) at the head of its message keys.
LEVEL_BYTES: Final = _LEVEL.size


def message_key(log_id: int, priority: int, seq: int) -> bytes:
    return _MESSAGE.pack(MESSAGE, log_id, MAX_PRIORITY - priority, seq)


def unpack_message_key(key: bytes) -> tuple[int, int, int]:
    """-> (log id, priority, sequence)."""
    _, log_id, inverted, seq = _MESSAGE.unpack(key)
    return log_id, MAX_PRIORITY - inverted, seq


def seq_of(key: bytes) -> int:
    """The sequence of a message key (its last 8 bytes)."""
    return int.from_bytes(key[-8:])


def level_prefix(log_id: int, priority: int) -> bytes:
    return _LEVEL.pack(MESSAGE, log_id, MAX_PRIORITY - priority)


def log_prefix(log_id: int) -> bytes:
    return _LOG.pack(MESSAGE, log_id)


def prefix_end(prefix: bytes) -> bytes:
    """The smallest key greater than every key starting with ``prefix``."""
    stripped = prefix.rstrip(b"\xff")
    if not stripped:
        raise ValueError("a prefix of only 0xff bytes has no end")
    return stripped[:-1] + bytes([stripped[-1] + 1])
