"""The broker's one HTTP server: JSON API, console, ``/health`` (and later ``/metrics``,
WebSocket STOMP), on aiohttp in the broker's own event loop.

Other parts add what they serve before ``start``: ``server.app.router.add_get(...)``
for a route, or ``server.app.add_subapp("/ws/", app)`` for a whole application; the
security middleware covers them too (``open_paths`` lists what it lets through).
"""

from __future__ import annotations

import json
import logging
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, cast

from aiohttp import web

from broker.http import AdminPortError, api, api_messages, feeds, jolokia, request_body
from broker.http.auth import Denied, HttpSecurity, check
from broker.http.operations import Operations
from broker.io.http_site import GatedSite, RequestLog, unavailable
from broker.io.limits import DEFAULT_MAX_FRAME_SIZE, ConnectionLimits
from broker.io.listener import OUT_OF_DESCRIPTORS, Listener, ListenError
from broker.io.logins import FailedLogins

if TYPE_CHECKING:
    import asyncio
    from collections.abc import Awaitable, Callable

    from broker.core.admin.service import AdminService
    from broker.io.descriptors import Descriptors
    from broker.io.verifier import Verifier

log = logging.getLogger("stompd.http")

CONSOLE_DIR = Path(__file__).parent / "console"
# The console is our own files only: no inline script, no framing (clickjacking of
# its purge buttons), no sniffing.
SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'",
    "Referrer-Policy": "no-referrer",
}


#: What a byte that is not UTF-8 decodes to (``_not_utf8``).
_SURROGATE = re.compile("[\ud800-\udfff]")

#: What a socket past maximumConnections reads, and one refused for want of descriptors.
_TOO_MANY = unavailable(
    "application/json",
    json.dumps(
        api.error_body(
            503, "too_many_connections", "too many connections (the admin server's maximumConnections)"
        )
    ).encode(),
)
_OUT_OF_ROOM = unavailable(
    "application/json", json.dumps(api.error_body(503, "too_many_connections", OUT_OF_DESCRIPTORS)).encode()
)

#: Where ``static_dir`` is served.
STATIC_PREFIX = "/static/"


class HttpServer:
    def __init__(
        self,
        ops: AdminService,
        security: HttpSecurity | None = None,
        static_dir: Path | None = None,
        verifier: Verifier | None = None,
        *,
        limits: ConnectionLimits | None = None,
        max_connections: int | None = None,
        descriptors: Descriptors | None = None,
        logins: FailedLogins | None = None,
        max_message: int = DEFAULT_MAX_FRAME_SIZE,
    ) -> None:
        self.security = security or HttpSecurity()
        #: <transportDefaults>: a request whose headers are not in by its connect timeout
        #: (and a body not in by as long again) is closed, as a silent STOMP client is.
        self.limits = limits or ConnectionLimits()
        #: <httpServer maximumConnections> (None: no limit), and the broker's descriptors.
        self.max_connections = max_connections
        self.descriptors = descriptors
        #: Wrong credentials, counted with the STOMP listeners' failed logins: past a few,
        #: the 401 waits (broker/io/logins.py).
        self.logins = logins if logins is not None else FailedLogins()
        self._site: GatedSite | None = None
        #: Where credentials are checked when users are configured: a hashed password
        #: costs a tenth of a second of CPU, which must not stop the loop (None: inline).
        self.verifier = verifier
        #: Paths answered without credentials or the loopback rule.
        self.open_paths: set[str] = {"/health"}
        #: Path prefixes answered likewise (the operator's own static files).
        self.open_prefixes: tuple[str, ...] = ()
        self.operations = Operations()
        # The largest body a route takes: a SEND's, a message of up to ``max_message``
        # bytes (the broker's largest frame); every other route takes request_body.MAX_BODY.
        send_limit = request_body.message_limit(max_message)
        self.app = web.Application(
            middlewares=[self._guard, api.json_errors],
            client_max_size=max(send_limit, request_body.MAX_BODY),
        )
        self.app[request_body.MAX_MESSAGE_KEY] = max_message
        self.app[api.OPS_KEY] = ops
        self.app[api.OPERATIONS_KEY] = self.operations
        self.app[request_body.BODY_TIMEOUT_KEY] = self.limits.connect_timeout
        self.app.add_routes(api.routes)
        self.app.add_routes(api_messages.routes)
        # ActiveMQ's XML feeds and Jolokia, where its monitoring tools look for them.
        self.app.add_routes(feeds.routes)
        self.app.add_routes(jolokia.routes)
        self.app.router.add_get("/health", api.health)
        self.app.router.add_get("/", _to_console)
        self.app.router.add_get("/console", _to_console)
        self.app.router.add_get("/console/", _console_index)
        self.app.router.add_static("/console/", CONSOLE_DIR)
        if static_dir is not None:
            # The operator's files (say, a web app that talks STOMP to /stomp): served to
            # whoever can reach the port, under the operator's own page policies.
            self.app.router.add_static(STATIC_PREFIX, static_dir)
            self.open_prefixes = (STATIC_PREFIX,)
        self.app.on_response_prepare.append(_add_security_headers)
        self._runner: web.AppRunner | None = None
        self.port = 0

    def add_websocket(
        self, path: str, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> None:
        """Serve a WebSocket endpoint that does its own authentication (STOMP's CONNECT)."""
        self.app.router.add_get(path, handler)
        self.open_paths.add(path)

    async def start(self, host: str, port: int) -> int:
        """Listen; returns the port actually bound (``port=0`` picks a free one)."""
        timeout = self.limits.connect_timeout
        # Requests still running at shutdown get a few seconds, not aiohttp's default minute.
        # keepalive_timeout: aiohttp closes a connection that has not sent a whole request's
        # headers by then (its default is an hour), and an idle one as long after its last.
        self._runner = web.AppRunner(
            self.app,
            access_log=None,
            handle_signals=False,
            shutdown_timeout=5.0,
            keepalive_timeout=timeout,
            logger=RequestLog(),
        )
        await self._runner.setup()
        listener = Listener("http", host, port, self.limits, self.max_connections)
        self._site = site = GatedSite(self._runner, listener, _TOO_MANY, self.descriptors, _OUT_OF_ROOM)
        try:
            await site.start()
        except ListenError as exc:
            await self._runner.cleanup()
            self._runner = None
            why = os.strerror(exc.errno) if exc.errno else str(exc)
            raise AdminPortError(exc.errno, f"cannot listen on {host}:{port} (admin HTTP): {why}") from None
        self.port = site.acceptor.port
        return self.port

    def hand_over(self, transport: asyncio.BaseTransport) -> None:
        """A /stomp WebSocket is a STOMP connection from now on: no longer one of the
        HTTP connections ``max_connections`` counts (its descriptor still is)."""
        if self._site is not None:
            self._site.hand_over(transport)

    async def stop(self) -> None:
        await self.operations.close()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    @web.middleware
    async def _guard(
        self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        garbled = _not_utf8(request)
        if garbled is not None:
            return web.json_response(
                api.error_body(400, "bad_request", f"the {garbled} header is not UTF-8"), status=400
            )
        if request.path in self.open_paths or request.path.startswith(self.open_prefixes):
            return await handler(request)
        peer = request.transport.get_extra_info("peername") if request.transport is not None else None
        address = peer[0] if isinstance(peer, tuple) else None
        user, denied = await self._check(
            address, request.headers.get("Host"), request.headers.get("Authorization")
        )
        if denied is None:
            # Who an admin SEND is authorized as (None: no users are configured).
            request[api.USER] = user
            if request.method not in ("GET", "HEAD"):
                # Who changed what, for the operator's log (moves, purges, closed connections).
                log.info("admin %s %s by %s from %s", request.method, request.path, user or "-", address)
            return await handler(request)
        if denied.failed_login is not None:
            delay = self.logins.failed(address, denied.failed_login)
            if delay > 0:
                # On the loop's timer: the request waits, the server serves the others.
                await self.logins.wait(delay)
        headers = {"WWW-Authenticate": 'Basic realm="stompd", charset="UTF-8"'} if denied.challenge else {}
        code = "unauthorized" if denied.status == 401 else "forbidden"
        return web.json_response(
            api.error_body(denied.status, code, denied.reason), status=denied.status, headers=headers
        )

    async def _check(
        self, address: str | None, host: str | None, authorization: str | None
    ) -> tuple[str | None, Denied | None]:
        security = self.security
        # With users, any request with credentials may need a hash checked: a worker
        # thread does it (a cached password comes back as fast, one thread hop later).
        if security.authenticator is None or authorization is None or self.verifier is None:
            return check(security, address, host, authorization)
        verdict = await self.verifier.run(lambda: check(security, address, host, authorization), lambda: True)
        return cast("tuple[str | None, Denied | None]", verdict)


def _not_utf8(request: web.Request) -> str | None:
    """The name of a header that is not UTF-8, if one is (None: all are).

    aiohttp decodes header bytes with ``surrogateescape``: a byte that is not UTF-8 becomes
    a lone surrogate, which no str operation minds but every encode refuses (a credential's
    base64, a name sent on, a log line).  Refused here, before anything reads them."""
    for name, value in request.headers.items():
        if _SURROGATE.search(value) is not None or _SURROGATE.search(name) is not None:
            return name
    return None


async def _to_console(request: web.Request) -> web.StreamResponse:
    raise web.HTTPFound("/console/")


async def _console_index(request: web.Request) -> web.StreamResponse:
    return web.FileResponse(CONSOLE_DIR / "index.html")


async def _add_security_headers(request: web.Request, response: web.StreamResponse) -> None:
    if request.path.startswith(STATIC_PREFIX):
        # Not ours: the console's page policy would forbid what an operator's app needs
        # (say, a WebSocket to another port); it can set its own in a <meta> tag.
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        return
    for name, value in SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)
