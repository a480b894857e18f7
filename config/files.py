"""Reading the files a configuration names, without letting one of them never end.

Only a regular file is read: ``/dev/zero`` would grow without bound, a FIFO would block
the reader until some writer came, and opening some devices does something by itself.  So
the path is looked at (``stat``) before it is opened, opened without waiting for a writer
(``O_NONBLOCK``, in case it was swapped for a FIFO in between), looked at again through the
open descriptor, and read up to a size cap plus one byte: a file that grows while it is read
is still refused at the cap, and memory stays bounded by it.
"""

from __future__ import annotations

import os
import stat
from typing import TYPE_CHECKING, Final

from config.units import format_size

if TYPE_CHECKING:
    from pathlib import Path

#: A configuration or properties file is a few kilobytes; anything this big is a mistake or
#: an attack.
MAX_BYTES: Final = 16 << 20
_CHUNK: Final = 1 << 20

_KINDS: Final = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class FileRefused(ValueError):
    """The file exists but is not one to read: not a regular file, or too big.  (Other
    failures, a missing or unreadable file, are the ``OSError`` they are.)"""


def read_regular(path: Path, limit: int = MAX_BYTES) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them.

    Raises ``FileRefused`` saying why not (without the path: the caller names it), or
    ``OSError``."""
    _check(os.stat(path).st_mode, limit, None)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        _check(info.st_mode, limit, info.st_size)
        chunks: list[bytes] = []
        total = 0
        while total <= limit:
            chunk = os.read(fd, min(_CHUNK, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > limit:
            raise FileRefused(_too_big(limit))
        return b"".join(chunks)
    finally:
        os.close(fd)


def _check(mode: int, limit: int, size: int | None) -> None:
    if not stat.S_ISREG(mode):
        kind = next((name for test, name in _KINDS if test(mode)), "a special file")
        raise FileRefused(f"not a regular file ({kind}): only regular files are read")
    if size is not None and size > limit:
        raise FileRefused(_too_big(limit))


def _too_big(limit: int) -> str:
    return f"larger than {format_size(limit)}: too big for a configuration file"
