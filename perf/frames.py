"""The little of STOMP the load tool needs: an incremental frame splitter and encoders.

This is deliberately not the project's `protocol` package: stompd-perf must measure any
broker, including one whose codec is broken, so it shares no code with the broker under
test.  Frames are kept as raw header blocks; callers pull the few headers they need with
`header()`, which is much cheaper per message than building a dict.
"""

from __future__ import annotations

from typing import NamedTuple

_CONTENT_LENGTH = b"\ncontent-length:"


class RawFrame(NamedTuple):
    command: bytes
    # Command line plus header lines, without the blank line.  It starts with the command,
    # so every header line is preceded by b"\n" and can be found with one bytes.find().
    head: bytes
    body: bytes


def header(head: bytes, name: bytes) -> bytes | None:
    """Value of the first `name` header (STOMP 1.2: the first repeated header wins).

    The value is returned still escaped: the tool only echoes values back (ack ids,
    receipt ids) or shows them, and echoing the escaped form is what the spec wants.
    """
    key = b"\n" + name + b":"
    start = head.find(key)
    if start < 0:
        return None
    start += len(key)
    end = head.find(b"\n", start)
    value = head[start:] if end < 0 else head[start:end]
    return value[:-1] if value.endswith(b"\r") else value


class FrameError(Exception):
    """The peer sent bytes that are not STOMP."""


class FrameSplitter:
    """Bytes in, complete frames out, however the bytes are chunked.

    The buffer is immutable `bytes`: a read that holds whole frames is used as it is, and
    each frame's head and body are one slice (one copy) each.  A frame whose body is still
    arriving is not rescanned on every read: `_need` remembers how many bytes must be
    buffered before it can complete, so a 10 MB body read in 64 KB chunks costs O(n).
    """

    __slots__ = ("_buf", "_need", "max_frame")

    def __init__(self, max_frame: int = 64 * 1024 * 1024) -> None:
        self._buf = b""
        self._need = 0
        self.max_frame = max_frame

    def feed(self, data: bytes) -> list[RawFrame]:
        buf = self._buf + data if self._buf else data
        size = len(buf)
        if size < self._need:
            self._buf = buf
            return []
        self._need = 0
        frames: list[RawFrame] = []
        pos = 0
        find = buf.find
        while pos < size:
            # Heart-beats and the optional EOLs between frames.
            char = buf[pos]
            if char == 10 or char == 13:
                pos += 1
                continue
            head_end = find(b"\n\n", pos)
            # CRLF line endings: "\r\n\r\n" contains "\n\r\n", never "\n\n".  Only look for
            # it before the first "\n\n", which keeps the usual LF case to one short scan.
            crlf_end = find(b"\n\r\n", pos, head_end if head_end >= 0 else size)
            if crlf_end >= 0:
                head = buf[pos:crlf_end].replace(b"\r\n", b"\n")
                body_start = crlf_end + 3
            elif head_end >= 0:
                head = buf[pos:head_end]
                body_start = head_end + 2
            else:
                if size - pos > self.max_frame:
                    raise FrameError("header block too large")
                break
            length_at = head.find(_CONTENT_LENGTH)
            if length_at >= 0:
                line_end = head.find(b"\n", length_at + 1)
                raw = head[length_at + len(_CONTENT_LENGTH) : line_end if line_end >= 0 else len(head)]
                try:
                    length = int(raw)
                except ValueError:
                    raise FrameError(f"bad content-length {raw!r}") from None
                if length > self.max_frame:
                    raise FrameError("frame too large")
                end = body_start + length
                if end >= size:
                    self._need = end + 1 - pos  # measured from where the kept bytes start
                    break
                if buf[end] != 0:
                    raise FrameError("frame body not followed by NUL")
            else:
                end = find(b"\0", body_start)
                if end < 0:
                    if size - pos > self.max_frame:
                        raise FrameError("frame too large")
                    break
            command_end = head.find(b"\n")
            command = head if command_end < 0 else head[:command_end]
            frames.append(RawFrame(command.rstrip(b"\r"), head, buf[body_start:end]))
            pos = end + 1
        self._buf = buf[pos:] if pos < size else b""
        return frames


_ESCAPES = str.maketrans({"\\": "\\\\", ":": "\\c", "\n": "\\n", "\r": "\\r"})


def escape(value: str, version: str) -> str:
    """STOMP 1.1/1.2 header value escaping (1.0 has none).  1.1 has no \\r escape."""
    if version == "1.0":
        return value
    escaped = value.translate(_ESCAPES)
    return escaped.replace("\\r", "\r") if version == "1.1" else escaped


def encode(command: str, headers: dict[str, str], body: bytes = b"", version: str = "1.2") -> bytes:
    """A whole frame.  Used off the hot path; producers pre-encode their SEND prefix."""
    escape_values = command not in ("CONNECT", "STOMP")
    lines = [command]
    for name, value in headers.items():
        if escape_values:
            name, value = escape(name, version), escape(value, version)
        lines.append(f"{name}:{value}")
    return ("\n".join(lines) + "\n\n").encode() + body + b"\0"
