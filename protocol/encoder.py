"""Frame -> bytes, the inverse of ``FrameParser`` for a given version.

Headers are written in dict order, LF line endings, escaped per version (never for
``UNESCAPED_COMMANDS``).  Escaping is a few C-level passes over the joined header
text rather than a Python-level call per header: this runs once per delivered
MESSAGE.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from protocol.escaping import escape, escape_name
from protocol.frames import UNESCAPED_COMMANDS, V1_0, V1_1, V1_2, Frame

if TYPE_CHECKING:
    from collections.abc import Collection, Iterable

#: An EOL on its own is a heart-beat (STOMP 1.2 "Heart-beating").
HEARTBEAT: Final = b"\n"
#: What ends every frame we write: the NUL, then one EOL, as ActiveMQ writes them.  The
#: grammar allows EOLs after the NUL (STOMP 1.2 "Augmented BNF": ``NULL *( EOL )``), any
#: parser takes the EOL as a heart-beat, and some clients need it: PHP's PECL stomp
#: extension loses every frame after the first of a read when frames come back to back.
FRAME_END: Final = b"\0\n"

_CONTENT_LENGTH: Final = "content-length"
# Control characters that no real header holds; if one does, the slow path is taken.
_NAME_SENTINEL: Final = "\x00"
_LINE_SENTINEL: Final = "\x01"


def encode_frame(frame: Frame, version: str) -> bytes:
    """Serialise ``frame`` for a peer speaking ``version``.

    A body containing NUL gets a ``content-length`` header if it has none (STOMP 1.2
    "Header content-length": otherwise the NUL would end the frame early).  A
    ``content-length`` that disagrees with the body is a bug in the caller and raises
    ``ValueError``: sent as is, it would desynchronise the peer's stream.
    """
    headers = frame.headers
    body = frame.body
    length = headers.get(_CONTENT_LENGTH)
    if length is None:
        if 0 in body:  # an int: ``b"\0" in`` costs a TypeError raised and cleared
            headers = {**headers, _CONTENT_LENGTH: str(len(body))}
    elif length != str(len(body)):
        _check_content_length(length, len(body))
    if headers:
        command = frame.command
        mode = V1_0 if command in UNESCAPED_COMMANDS else version
        head = f"{command}\n{_header_text(headers.items(), mode)}\n"
    else:
        head = f"{frame.command}\n\n"
    return b"".join((head.encode(), body, FRAME_END))


def encode_headers(headers: Iterable[tuple[str, str]] | dict[str, str], version: str) -> bytes:
    """Header lines, each ending in LF, escaped per ``version`` (no command, no blank line).

    For building frames from cached parts: ``b"MESSAGE\\n" + encode_headers(...) +
    b"\\n" + body + FRAME_END``.  Pass version "1.0" for headers of frames that are never
    escaped (CONNECTED).
    """
    items = headers.items() if isinstance(headers, dict) else list(headers)
    if not items:
        return b""
    return _header_text(items, version).encode()


def _header_text(items: Collection[tuple[str, str]], version: str) -> str:
    """``name:value`` lines each ending in LF, escaped per ``version``."""
    if version in (V1_2, V1_1):
        # Join with placeholder separators, escape the whole text with a few
        # replace() calls, then put the real separators in: a handful of C-level
        # passes instead of a Python-level call per header.  Relayed message-ids
        # such as "ID:host-1-2" hold ':', so this is the common path, not a rare one.
        text = _LINE_SENTINEL.join(map(_NAME_SENTINEL.join, items))
        if text.count(_NAME_SENTINEL) != len(items) or text.count(_LINE_SENTINEL) != len(items) - 1:
            return "".join([f"{escape(name, version)}:{escape(value, version)}\n" for name, value in items])
        if "\\" in text:
            text = text.replace("\\", "\\\\")
        if "\n" in text:
            text = text.replace("\n", "\\n")
        if ":" in text:
            text = text.replace(":", "\\c")
        if version == V1_2 and "\r" in text:
            text = text.replace("\r", "\\r")
        return text.replace(_NAME_SENTINEL, ":").replace(_LINE_SENTINEL, "\n") + "\n"
    if version == V1_0:
        pairs = list(items)
        text = "\n".join(map(":".join, pairs))
        # LFs only between lines and no ':' in a name: the text is already what 1.0
        # can express.
        if (
            "\r" not in text
            and text.count("\n") == len(pairs) - 1
            and (text.count(":") == len(pairs) or ":" not in "".join([name for name, _ in pairs]))
        ):
            return text + "\n"
        return "".join([f"{escape_name(name, V1_0)}:{escape(value, V1_0)}\n" for name, value in pairs])
    raise ValueError(f"unknown STOMP version {version!r}")


def _check_content_length(length: str, actual: int) -> None:
    digits = length.strip(" \t")
    if not (digits.isascii() and digits.isdigit() and len(digits) < 16 and int(digits) == actual):
        raise ValueError(f"content-length header {length!r} does not match the {actual}-byte body")
