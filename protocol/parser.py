"""Incremental, sans-IO STOMP frame parser: bytes in, ``Frame`` objects out.

Usage (h11 style)::

    parser = FrameParser()
    parser.feed(data)
    while (frame := parser.next_frame()) is not None:
        ...

This is the broker's hot path, so the work per frame is a handful of C-level
calls: one regex search for the end of the header block, one ``decode``, one
``split``, a short loop over the header lines, and one ``find`` (or an index check)
for the NUL.  Every scan remembers where it stopped, so a frame that trickles in
over many reads costs O(size), not O(size**2).
"""

from __future__ import annotations

import re
from typing import Final

from protocol.errors import FrameTooLarge, MalformedFrame, UnknownCommand
from protocol.escaping import unescape
from protocol.frames import ALL_COMMANDS, CLIENT_COMMANDS, SERVER_COMMANDS, UNESCAPED_COMMANDS, V1_0, Frame

# STOMP 1.2 "Augmented BNF": ``frame-stream = 1*frame``, ``frame = command EOL
# *(header EOL) EOL *OCTET NULL *(EOL)`` and ``EOL = [CR] LF``.  The trailing EOLs are
# heart-beats ("Heart-beating"), skipped before each frame.
_HEARTBEATS: Final = re.compile(rb"(?:\r?\n)+")
_HEADER_END: Final = re.compile(rb"\n\r?\n")
_CR: Final = 13
_LF: Final = 10
_CONTENT_LENGTH: Final = "content-length"
# A content-length with more digits than this is over any sane max_frame_size; not
# calling int() on it also avoids Python's 4300-digit int-parsing limit.
_MAX_LENGTH_DIGITS: Final = 15
_COMMAND_LIST: Final = ", ".join(sorted(CLIENT_COMMANDS) + sorted(SERVER_COMMANDS))


class FrameParser:
    """Turns a byte stream into frames; see the module docstring.

    ``version`` governs header unescaping.  It starts at "1.0" (the CONNECT frame is
    never escaped anyway); the connection sets it to the negotiated version once
    CONNECT has been answered.  After a ``StompError`` the parser's state is
    undefined: the connection is to be closed.
    """

    __slots__ = (
        "_body_start",
        "_buf",
        "_command",
        "_headers",
        "_length",
        "_pos",
        "_scan",
        "max_frame_size",
        "max_header_length",
        "max_headers",
        "version",
    )

    def __init__(
        self,
        *,
        max_frame_size: int = 10 * 1024 * 1024,
        max_headers: int = 1000,
        max_header_length: int = 10240,
    ) -> None:
        self.version: str = V1_0
        self.max_frame_size = max_frame_size
        self.max_headers = max_headers
        self.max_header_length = max_header_length
        self._buf = bytearray()
        # Start of the unconsumed bytes; consumed bytes are dropped once per feed().
        self._pos = 0
        # Where the current search (header end, or NUL) resumes.
        self._scan = 0
        # The frame whose headers are parsed and whose body has not fully arrived:
        # ``_headers`` is None between frames.
        self._command = ""
        self._headers: dict[str, str] | None = None
        self._body_start = 0
        self._length = -1

    @property
    def buffered(self) -> int:
        """Bytes received and not yet returned as part of a frame."""
        return len(self._buf) - self._pos

    @property
    def incoming(self) -> int:
        """How big the frame being received will be once whole, as far as is known now:
        its head and the body its content-length announces once its headers are in, else
        the bytes buffered.  (For the edge, once a read's frames are handled: what to
        charge to memory before the rest is read.)"""
        if self._headers is not None and self._length >= 0:
            return self._body_start - self._pos + self._length + 1
        return len(self._buf) - self._pos

    def feed(self, data: bytes) -> None:
        pos = self._pos
        if pos:
            # CPython drops a bytearray's prefix by moving its start pointer; once per
            # feed (not per frame) keeps any copy bounded by one read's leftover.
            del self._buf[:pos]
            self._pos = 0
            self._scan -= pos
            self._body_start -= pos
        self._buf += data

    def next_frame(self) -> Frame | None:
        """The next complete frame, or None until more bytes are fed."""
        # Deliberately one long function: on the hot path every Python-level call
        # and attribute access shows up in the per-frame cost.
        buf = self._buf
        headers = self._headers
        if headers is None:
            pos = self._pos
            if pos >= len(buf):
                return None
            # One comparison for the common case; the regex decides about heart-beats.
            if buf[pos] <= _CR:
                heartbeats = _HEARTBEATS.match(buf, pos)
                if heartbeats is not None:
                    pos = self._pos = heartbeats.end()
                    if pos >= len(buf):
                        return None
            # Resume 2 bytes back: the end marker is up to 3 bytes long.
            scan = self._scan - 2
            start = scan if scan > pos else pos
            marker = _HEADER_END.search(buf, start)
            if marker is None:
                self._scan = len(buf)
                self._check_partial_head(pos, start)
                return None
            head_end, body_start = marker.span()
            raw = buf[pos:head_end]
            try:
                text = raw.decode()
            except UnicodeDecodeError as exc:
                raise MalformedFrame(
                    f"the frame's command and headers are not valid UTF-8 (bad byte at offset {exc.start})"
                ) from None
            if "\0" in text:
                raise _nul_in_head(text)
            if "\r" in text:
                # Only a CR that is part of a CRLF line ending is dropped; the block
                # ends just before a LF, so a final CR is one too.
                text = text.replace("\r\n", "\n")
                if text[-1] == "\r":
                    text = text[:-1]
            command, _, rest = text.partition("\n")
            if command not in ALL_COMMANDS:
                raise UnknownCommand(f"unknown command {command[:64]!r}; the commands are {_COMMAND_LIST}")
            headers = {}
            length = -1
            if rest:
                lines = rest.split("\n")
                if len(lines) > self.max_headers or head_end - pos > self.max_header_length:
                    self._check_head_limits(raw, len(lines))
                if "\\" in rest and self.version != V1_0 and command not in UNESCAPED_COMMANDS:
                    self._unescaped_headers(lines, headers)
                else:
                    for line in lines:
                        name, colon, value = line.partition(":")
                        if not colon:
                            raise _no_colon(lines, line)
                        # STOMP 1.2 "Repeated Header Entries": only the first one counts.
                        if name not in headers:
                            headers[name] = value
                length_text = headers.get(_CONTENT_LENGTH)
                if length_text is not None:
                    # STOMP 1.2 "Header content-length": an octet count.
                    if length_text.isdigit() and length_text.isascii() and len(length_text) < 16:
                        length = int(length_text)
                    else:
                        length = _parse_content_length(length_text)
                    if body_start - pos + length > self.max_frame_size:
                        raise FrameTooLarge(
                            f"content-length {length} makes the frame larger than the maximum frame size "
                            f"of {self.max_frame_size} bytes"
                        )
            scan = body_start
        else:
            command = self._command
            body_start = self._body_start
            length = self._length
            scan = self._scan

        if length >= 0:
            nul = body_start + length
            if nul >= len(buf):
                self._pending(command, headers, body_start, length, scan)
                return None
            if buf[nul]:
                raise MalformedFrame(
                    f"the {length}-byte body given by the content-length header is not followed by a NUL byte"
                )
        else:
            nul = buf.find(b"\0", scan)
            if nul < 0:
                self._pending(command, headers, body_start, length, len(buf))
                # Without a content-length only the NUL ends the frame, so this is
                # what bounds the buffer against a peer that never sends one.
                if len(buf) - self._pos > self.max_frame_size:
                    raise FrameTooLarge(
                        f"the frame is larger than the maximum frame size of {self.max_frame_size} "
                        "bytes and still has no NUL byte ending it"
                    )
                return None
            if nul - self._pos > self.max_frame_size:
                raise FrameTooLarge(
                    f"the frame is {nul - self._pos} bytes, more than the maximum frame size of "
                    f"{self.max_frame_size} bytes"
                )
        self._headers = None
        end = nul + 1
        # The EOL that most peers (ActiveMQ, PHP's client, stompd itself) write after the
        # NUL is skipped here: one comparison instead of the heart-beat regex per frame.
        if end < len(buf) and buf[end] == _LF:
            end += 1
        self._pos = self._scan = end
        # ``b"" + bytearray`` makes bytes with one copy, faster than bytes(buf[a:b]).
        return Frame(command, headers, b"" + buf[body_start:nul])

    def _pending(
        self, command: str, headers: dict[str, str], body_start: int, length: int, scan: int
    ) -> None:
        """Keep a frame whose body has not fully arrived, so its headers are parsed once."""
        self._command = command
        self._headers = headers
        self._body_start = body_start
        self._length = length
        self._scan = scan

    def _unescaped_headers(self, lines: list[str], headers: dict[str, str]) -> None:
        version = self.version
        for number, line in enumerate(lines, 1):
            name, colon, value = line.partition(":")
            if not colon:
                raise MalformedFrame(f"header line {number} has no ':' separating name and value")
            try:
                name = unescape(name, version)
                value = unescape(value, version)
            except MalformedFrame as exc:
                raise MalformedFrame(f"header line {number}: {exc}") from None
            if name not in headers:
                headers[name] = value

    def _check_head_limits(self, raw: bytearray, count: int) -> None:
        if count > self.max_headers:
            raise FrameTooLarge(f"the frame has {count} headers, more than the limit of {self.max_headers}")
        limit = self.max_header_length
        for number, line in enumerate(raw.split(b"\n")):
            size = len(line) - line.endswith(b"\r")
            if size > limit:
                what = "the command line" if number == 0 else f"header line {number}"
                raise FrameTooLarge(f"{what} is {size} bytes long, more than the limit of {limit} bytes")

    def _check_partial_head(self, pos: int, start: int) -> None:
        """Reject an incomplete header block that can already be seen to be bad: too large,
        or holding a NUL (searched from ``start``, where this read's search began)."""
        buf = self._buf
        if buf.find(0, start) >= 0:
            raise _nul_in_head(buf[pos:].decode(errors="replace"))
        size = len(buf) - pos
        if size > self.max_frame_size:
            raise FrameTooLarge(
                f"the frame's headers exceed the maximum frame size of {self.max_frame_size} bytes"
            )
        # The line being received may end in CR before its LF arrives, hence + 2.
        tail = self.max_header_length + 2
        if size >= tail and buf.find(b"\n", len(buf) - tail) < 0:
            raise FrameTooLarge(f"a header line is longer than the limit of {self.max_header_length} bytes")


def _nul_in_head(head: str) -> MalformedFrame:
    """A NUL in the command or a header.  NUL ends a frame (STOMP 1.0 "the frame is
    terminated by a null byte", 1.1/1.2 ``NULL`` after the body): no escape can carry
    one, a peer that scans for it would cut the frame there, and relayed in a MESSAGE
    it would cut that frame short for such consumers.  So never a header value, in any
    version (ActiveMQ 5.17 takes it and relays it as is)."""
    line = head[: head.index("\0")].count("\n")
    where = "the command line" if line == 0 else f"header line {line}"
    return MalformedFrame(f"{where} holds a NUL byte, which only ends a frame (no header may contain one)")


def _no_colon(lines: list[str], line: str) -> MalformedFrame:
    return MalformedFrame(f"header line {lines.index(line) + 1} has no ':' separating name and value")


def _parse_content_length(value: str) -> int:
    """The slow path: be liberal about blanks around the number (some 1.0 clients
    write "content-length: 5"), strict about the rest."""
    digits = value.strip(" \t")
    if not (digits.isascii() and digits.isdigit()):
        raise MalformedFrame(f"the content-length header {value[:64]!r} is not a non-negative integer")
    if len(digits) > _MAX_LENGTH_DIGITS:
        raise FrameTooLarge(f"content-length {digits[:64]} is larger than any allowed frame")
    return int(digits)
