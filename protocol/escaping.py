"""Header escaping per STOMP version ("Value Encoding", STOMP 1.1 and 1.2).

1.0 has no escaping.  1.1 escapes LF, ':' and '\\'; 1.2 also escapes CR.  Frames
whose command is in ``UNESCAPED_COMMANDS`` are never escaped, whatever the version;
callers pass ``"1.0"`` for them (``escape_mode`` does that choice).

Both directions have a fast path: most headers contain none of the special
characters, and ``in`` checks are far cheaper than building a new string.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Final

from protocol.errors import MalformedFrame
from protocol.frames import UNESCAPED_COMMANDS, V1_0, V1_1, V1_2

if TYPE_CHECKING:
    from collections.abc import Callable

_DECODE_1_1: Final = {"n": "\n", "c": ":", "\\": "\\"}
_DECODE_1_2: Final = {"n": "\n", "c": ":", "\\": "\\", "r": "\r"}
_DECODE_TABLES: dict[str, dict[str, str]] = {V1_1: _DECODE_1_1, V1_2: _DECODE_1_2}
# ``.?`` so that a trailing lone backslash matches too (with an empty group).
_ESCAPE_SEQUENCE: Final = re.compile(r"\\(.?)", re.DOTALL)


def escape_mode(command: str, version: str) -> str:
    """The version whose escaping applies to a frame's headers."""
    return V1_0 if command in UNESCAPED_COMMANDS else version


def escape(value: str, version: str) -> str:
    """Escape a header value (or, for 1.1+, a name; see ``escape_name``)."""
    # A replace() chain: on CPython it is several times faster than str.translate
    # with multi-character replacements, and returns ``value`` itself when nothing
    # matches.  The backslash goes first so that the escapes added later survive.
    if version == V1_2:
        if "\\" in value or ":" in value or "\n" in value or "\r" in value:
            return value.replace("\\", "\\\\").replace("\n", "\\n").replace(":", "\\c").replace("\r", "\\r")
        return value
    if version == V1_1:
        if "\\" in value or ":" in value or "\n" in value:
            return value.replace("\\", "\\\\").replace("\n", "\\n").replace(":", "\\c")
        return value
    if version == V1_0:
        # 1.0 cannot express a LF (or a CR before the LF) in a header.  Such headers
        # only reach a 1.0 peer when relayed from a 1.1+ peer; sent raw they would
        # let that peer inject header lines (even a content-length that
        # desynchronises the stream), so they become spaces.
        return value.replace("\n", " ").replace("\r", " ")
    raise ValueError(f"unknown STOMP version {version!r}")


def escape_name(name: str, version: str) -> str:
    """Escape a header name; differs from ``escape`` only for 1.0, where a ':' (which
    would end the name early) becomes '_'."""
    if version == V1_0:
        return name.replace(":", "_").replace("\n", " ").replace("\r", " ")
    return escape(name, version)


def _replacer(table: dict[str, str]) -> Callable[[re.Match[str]], str]:
    def replace(match: re.Match[str]) -> str:
        return table[match[1]]

    return replace


_REPLACERS: Final = {version: _replacer(table) for version, table in _DECODE_TABLES.items()}


def unescape(value: str, version: str) -> str:
    """Undo ``escape``.

    Raises ``MalformedFrame`` for an escape sequence the version does not define:
    STOMP 1.2 "Value Encoding" says undefined escapes "MUST be treated as a fatal
    protocol error".
    """
    if "\\" not in value or version == V1_0:
        return value
    replace = _REPLACERS.get(version)
    if replace is None:
        raise ValueError(f"unknown STOMP version {version!r}")
    try:
        return _ESCAPE_SEQUENCE.sub(replace, value)
    except KeyError as exc:
        sequence = "\\" + exc.args[0]
        defined = ", ".join(repr("\\" + key) for key in _DECODE_TABLES[version])
        if sequence == "\\":
            raise MalformedFrame(
                f"a header ends with a lone backslash; STOMP {version} defines only the escape "
                f"sequences {defined}"
            ) from None
        raise MalformedFrame(
            f"undefined escape sequence {sequence!r} in a header; STOMP {version} defines only {defined}"
        ) from None
