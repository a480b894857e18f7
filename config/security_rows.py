"""A configuration's users and authorization entries, read in a process of its own:
``python -m config.security_rows FILE`` (stompd's SIGHUP reload runs it).

Parsing a big file is seconds of Python that, in a thread of the broker's process, holds
the GIL the broker's clients need (a 15.5 MiB file of 148,000 users stalled them for a
third of a second): here it costs the broker nothing but a core.  The ``-D`` definitions
come on stdin as a JSON object (never on the command line, where ``ps`` would show them);
the answer goes to stdout as frames, each a 4-byte big-endian length and a pickle:

- ``("errors", [str, ...])``: the file does not load; nothing else follows;
- ``("rules", authentication, authorization)``: ``authentication`` is None (no users) or
  ``(anonymous_allowed, anonymous_user, anonymous_group, user_count)``, ``authorization``
  the ``config.model.Authorization`` (small) or None;
- ``("users", [(name, scheme, text, groups), ...])``: ``CHUNK`` users at a time, in the
  file's order (scheme "" and text "": a user without a password), then ``("end",)``;
- ``("failed", traceback)``: a bug of ours stopped the read.

Small frames, so that the reader unpickles a few thousand users at a time: one pickle of
them all would be one long call into C, holding the GIL as the parse did.
"""

from __future__ import annotations

import ctypes
import json
import pickle
import signal
import struct
import sys
import traceback
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Final

from config.issues import ConfigError
from config.loader import load

if TYPE_CHECKING:
    from collections.abc import Iterator

#: Users a frame carries.
CHUNK: Final = 2000
#: A frame's length prefix.
LENGTH: Final = struct.Struct(">I")

Row = tuple[str, str, str, tuple[str, ...]]


def frames(path: Path, defines: dict[str, str]) -> Iterator[tuple[Any, ...]]:
    """What the child writes, frame by frame."""
    try:
        config = load(path, defines).config
    except ConfigError as exc:
        yield ("errors", [str(error) for error in exc.errors])
        return
    authentication = config.authentication
    summary = None
    if authentication is not None:
        summary = (
            authentication.anonymous_access_allowed,
            authentication.anonymous_user,
            authentication.anonymous_group,
            len(authentication.users),
        )
    yield ("rules", summary, config.authorization)
    users = authentication.users if authentication is not None else ()
    for start in range(0, len(users), CHUNK):
        rows: list[Row] = []
        for user in users[start : start + CHUNK]:
            password = user.password
            scheme, text = (password.scheme, password.text) if password is not None else ("", "")
            rows.append((user.username, scheme, text, tuple(sorted(user.groups))))
        yield ("users", rows)
    yield ("end",)


def write(out: IO[bytes], frame: tuple[Any, ...]) -> None:
    data = pickle.dumps(frame, protocol=pickle.HIGHEST_PROTOCOL)
    out.write(LENGTH.pack(len(data)) + data)


def read(source: IO[bytes]) -> tuple[Any, ...] | None:
    """The next frame (None: the stream ended)."""
    head = source.read(LENGTH.size)
    if len(head) < LENGTH.size:
        return None
    (size,) = LENGTH.unpack(head)
    data = source.read(size)
    if len(data) < size:
        return None
    frame: tuple[Any, ...] = pickle.loads(data)
    return frame


def main() -> int:
    _die_with_parent()
    path = Path(sys.argv[1])
    defines = json.loads(sys.stdin.read() or "{}")
    out = sys.stdout.buffer
    try:
        for frame in frames(path, defines):
            write(out, frame)
    except Exception:
        # A bug of ours: the reload says so (and why), and changes nothing.
        write(out, ("failed", traceback.format_exc()))
    out.flush()
    return 0


def _die_with_parent() -> None:
    """Linux: this process goes when the broker does (a read that hangs on a dead network
    mount must not outlive it)."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
    except OSError:
        return
    pr_set_pdeathsig = 1
    libc.prctl(pr_set_pdeathsig, signal.SIGKILL)


if __name__ == "__main__":
    sys.exit(main())
