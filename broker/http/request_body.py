"""A request's JSON body, read within a deadline and checked: the admin API's one way
to take one."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from aiohttp import web

from broker.core.admin.errors import Invalid

#: Seconds a request's body may take to come in (the listeners' connect timeout).
BODY_TIMEOUT_KEY = web.AppKey("body_timeout", float)
#: Without the key (an app of a test's): as long as a POST may wait for its operation.
DEFAULT_TIMEOUT = 60.0


async def body_of(request: web.Request, allowed: set[str]) -> dict[str, Any]:
    """The request's JSON object.  Only ``application/json``: a cross-site HTML form
    cannot send that without a CORS preflight, which this server never grants."""
    if request.content_type != "application/json":
        raise Invalid("send the request body as JSON (Content-Type: application/json)")
    try:
        # A body sent a byte at a time must not hold a connection (and its handler) forever.
        async with asyncio.timeout(request.app.get(BODY_TIMEOUT_KEY, DEFAULT_TIMEOUT)):
            raw = await request.read()
    except TimeoutError:
        raise web.HTTPRequestTimeout() from None
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
