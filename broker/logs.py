"""The broker's log: one record, one line, whatever a client put in it.

What a client chose reaches the log through the messages that mention it: a destination
name in a refusal, a client id, a login, an admin request's path, a header.  STOMP 1.1
and 1.2 unescape ``\\n`` in header values, and a URL's ``%0A`` decodes to a newline, so
without escaping a client could write a line of its own into the log ("... ERROR store
corrupt") or move a terminal's cursor with an ANSI sequence.

Escaping at each call site would be forgotten at the next one, so it is done where
every record's message is made: ``install`` sets a ``LogRecord`` factory whose
``getMessage`` escapes control characters (C0, DEL, C1, the Unicode line and paragraph
separators) and lone surrogates (what a header that is not UTF-8 decodes to), for every
logger and every handler, libraries' included.  The format string and the arguments are
escaped alike: the broker's own messages have no control characters.  A traceback
(``exc_info``) is left as it is: it is the broker's, several lines by nature.
"""

from __future__ import annotations

import logging
import re
from typing import Final

#: What is escaped: C0 controls, DEL, C1 controls, U+2028/U+2029 (line breaks to some
#: viewers), and lone surrogates (from bytes that are not UTF-8, decoded with
#: surrogateescape, which a strict UTF-8 handler could not even write).
_CONTROL: Final = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")
_NAMED: Final = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def escape(text: str) -> str:
    """``text`` with each control character written as its escape (``\\n``, ``\\x1b``,
    ``\\u2028``, ``\\udcff``), so that it stays on one line and prints as it is."""
    if _CONTROL.search(text) is None:
        return text
    return _CONTROL.sub(_escaped, text)


def _escaped(match: re.Match[str]) -> str:
    char = match.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


class OneLineRecord(logging.LogRecord):
    """A record whose message is escaped (``escape``) once the arguments are in."""

    def getMessage(self) -> str:
        return escape(super().getMessage())


def install() -> None:
    """Make every record of this process a ``OneLineRecord`` (the broker's own process:
    a broker embedded in another program leaves that program's logging alone)."""
    logging.setLogRecordFactory(OneLineRecord)
