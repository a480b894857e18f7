"""The bytes at the start of every message body: who sent it, which one, and when.

The accounting lives in the body, not in STOMP headers, so it survives brokers that
rename, drop or re-encode headers.  The send time is CLOCK_MONOTONIC (time.monotonic_ns),
which on Linux is one clock for every process on the machine, so a consumer in another
worker process can subtract it from its own reading.
"""

from __future__ import annotations

import struct

# magic, run id, producer, priority, sequence, send time (ns)
STAMP = struct.Struct("<IIIIQQ")
STAMP_SIZE = STAMP.size  # the smallest --size the tool accepts
MAGIC = 0x31465053  # b"SPF1" little-endian: tells our bodies from anything else on the queue
PAD_BYTE = b"."


def padding(size: int) -> bytes:
    """Filler after the stamp so the body is `size` bytes.  Printable, NUL-free."""
    return PAD_BYTE * max(0, size - STAMP_SIZE)
