"""What the broker's aiohttp servers (the admin server, ``ws://`` and ``wss://`` listeners)
share at the socket: how aiohttp's own complaints are logged.

Imported only by those servers, so that a broker serving no HTTP never loads aiohttp.
"""

from __future__ import annotations

import logging
from typing import Any

from aiohttp.http_exceptions import HttpProcessingError

#: aiohttp's server logger (what it says of requests it could not read).
_AIOHTTP = logging.getLogger("aiohttp.server")


class RequestLog(logging.LoggerAdapter):  # type: ignore[type-arg]
    """aiohttp's server logger for its request handlers.

    A request aiohttp cannot read (a broken request line, a header too long or not
    HTTP, a URL with bytes that are not allowed) is the client's mistake: aiohttp answers
    400 and closes, and logs it with a traceback, which would fill the log of a broker
    anyone can send junk to.  Here it is one line at INFO.  Anything else it logs with a
    traceback (a handler that failed) keeps it: that is the broker's bug."""

    def __init__(self) -> None:
        super().__init__(_AIOHTTP, {})

    def exception(self, msg: object, *args: object, exc_info: Any = True, **kwargs: Any) -> None:
        if isinstance(exc_info, HttpProcessingError):
            first = exc_info.message.strip().partition("\n")[0].rstrip(":")
            self.logger.info("%s: %s", str(msg) % args if args else msg, first)
            return
        self.logger.exception(msg, *args, exc_info=exc_info, **kwargs)
