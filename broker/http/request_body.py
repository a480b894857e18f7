"""A request's JSON body, read within a deadline and a size limit and checked: the admin
API's one way to take one."""

from __future__ import annotations

import asyncio
import json
from typing import Any, Final

from aiohttp import web

from broker.core.admin.errors import AdminError, Invalid

#: Seconds a request's body may take to come in (the listeners' connect timeout).
BODY_TIMEOUT_KEY = web.AppKey("body_timeout", float)
#: Without the key (an app of a test's): as long as a POST may wait for its operation.
DEFAULT_TIMEOUT = 60.0
#: Request bodies are small JSON objects (a selector, a target); bigger is a mistake or
#: an attack.  A SEND's body is the exception: ``message_limit``.
MAX_BODY: Final = 64 * 1024
#: What a SEND's JSON may hold beyond its body: its headers, the field names.
SEND_ENVELOPE: Final = 64 * 1024
#: The largest message body the SEND route takes (the broker's largest maxFrameSize).
MAX_MESSAGE_KEY = web.AppKey("max_message", int)
#: A body over its limit is read (and dropped) up to this many times the limit before the
#: answer, so a client still writing it reads the 413 rather than a reset connection.
DRAIN_FACTOR: Final = 4


class BodyTooLarge(AdminError):
    """A request body over what the route takes (HTTP 413), the limit named."""

    code = "too_large"


def message_limit(max_frame_size: int) -> int:
    """The JSON a SEND may be: a body of ``max_frame_size`` bytes (the broker's largest
    frame: no listener would take a bigger message either) written in base64, the
    larger of the API's two encodings, plus the headers."""
    return (max_frame_size + 2) // 3 * 4 + SEND_ENVELOPE


async def body_of(
    request: web.Request, allowed: set[str], limit: int = MAX_BODY, what: str = ""
) -> dict[str, Any]:
    """The request's JSON object, of at most ``limit`` bytes (``what``: the limit's
    reason, said when it is passed).  Only ``application/json``: a cross-site HTML form
    cannot send that without a CORS preflight, which this server never grants."""
    if request.content_type != "application/json":
        raise Invalid("send the request body as JSON (Content-Type: application/json)")
    raw = await read_body(request, limit, what)
    try:
        body = json.loads(raw or b"{}")
    except ValueError as exc:
        raise Invalid(f"request body is not valid JSON: {exc}") from None
    if not isinstance(body, dict):
        raise Invalid("request body must be a JSON object")
    try:
        # JSON's \ud800 escapes can make a lone surrogate, which no destination, header
        # or body can hold (every encode of it fails).
        json.dumps(body, ensure_ascii=False).encode()
    except UnicodeEncodeError as exc:
        lone = exc.object[exc.start : exc.end]
        raise Invalid(f"request body has text that is not Unicode (a lone surrogate, {lone!a})") from None
    unknown = set(body) - allowed
    if unknown:
        raise Invalid(f"unknown field(s) {', '.join(sorted(unknown))}; expected {', '.join(sorted(allowed))}")
    return body


async def read_body(request: web.Request, limit: int = MAX_BODY, what: str = "") -> bytes:
    """The request's body, of at most ``limit`` bytes (else ``BodyTooLarge``), within the
    body deadline."""
    try:
        # A body sent a byte at a time must not hold a connection (and its handler) forever.
        async with asyncio.timeout(request.app.get(BODY_TIMEOUT_KEY, DEFAULT_TIMEOUT)):
            declared = request.content_length
            if declared is not None and declared > limit:
                await _drain(request, limit * DRAIN_FACTOR)
                raise _too_large(declared, limit, what)
            try:
                raw = await request.read()
            except web.HTTPRequestEntityTooLarge:
                # Chunked, past the application's own cap (the largest of the routes').
                raise _too_large(None, limit, what) from None
    except TimeoutError:
        raise web.HTTPRequestTimeout() from None
    if len(raw) > limit:
        raise _too_large(len(raw), limit, what)
    return raw


async def _drain(request: web.Request, most: int) -> None:
    """Read and drop up to ``most`` bytes of the body (none of it is kept)."""
    seen = 0
    while seen <= most:
        chunk = await request.content.readany()
        if not chunk:
            return
        seen += len(chunk)


def _too_large(size: int | None, limit: int, what: str) -> BodyTooLarge:
    given = f"of {size:,} bytes " if size is not None else ""
    why = f" ({what})" if what else ""
    return BodyTooLarge(f"request body {given}is over the admin server's limit of {limit:,} bytes{why}")
