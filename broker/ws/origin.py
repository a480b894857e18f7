"""Which web pages may open a STOMP WebSocket: the ``Origin`` check.

A browser lets any page open a WebSocket to any address and sends the user's network
position (and cookies) with it; only the ``Origin`` header it adds tells the broker
which site the page came from.  Without this check a page on another site could drive
a broker that the user's browser can reach (one on their loopback, or inside their
network) with whatever rights an anonymous STOMP client has.

- No ``Origin`` header: not a browser (stomp.js under Node, Java, Python clients):
  allowed; STOMP's own CONNECT login is what guards those.
- Allowed origins configured: the page's origin must be one of them (``*`` allows
  any).  Origins compare as scheme, host and port, with default ports filled in.
- None configured: same origin only, as browsers apply to everything else: the page's
  host and port must be the ones the request was sent to (the ``Host`` header).  On a
  loopback listener the ``Host`` must also be a loopback name, so that a page whose
  own name was rebound to 127.0.0.1 (DNS rebinding) is not taken for a local one.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from broker.io.loopback import host_is_loopback

ANY_ORIGIN = "*"
_DEFAULT_PORTS = {"http": 80, "ws": 80, "https": 443, "wss": 443}


class InvalidOrigin(ValueError):
    """An allowed-origins entry that is not ``scheme://host[:port]`` or ``*``."""


def normalize_origin(text: str) -> str:
    """``HTTPS://Example.com:443/`` -> ``https://example.com:443``; ``*`` stays."""
    text = text.strip()
    if text == ANY_ORIGIN:
        return text
    parts = urlsplit(text)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        raise InvalidOrigin(f"{text!r}: bad port") from None
    if scheme not in _DEFAULT_PORTS or not parts.hostname or parts.path not in ("", "/") or parts.query:
        raise InvalidOrigin(f"{text!r}: an origin is scheme://host[:port] (http or https), or *")
    host = parts.hostname.lower()
    if ":" in host:
        host = f"[{host}]"
    return f"{scheme}://{host}:{port or _DEFAULT_PORTS[scheme]}"


def _host_and_port(host_header: str, default_port: int) -> tuple[str, int] | None:
    parts = urlsplit("//" + host_header.strip())
    try:
        port = parts.port
    except ValueError:
        return None
    if not parts.hostname:
        return None
    return parts.hostname.lower(), port or default_port


def check_origin(
    origin: str | None,
    host_header: str | None,
    allowed: frozenset[str],
    *,
    secure: bool,
    local_loopback: bool,
) -> str | None:
    """Why a WebSocket upgrade from ``origin`` is refused, or None if it is allowed.

    ``allowed`` holds normalized origins (``normalize_origin``); ``secure`` says the
    request came over TLS (the ``Host`` header's default port is then 443);
    ``local_loopback`` that it arrived on a loopback address.
    """
    if origin is None:
        return None
    if ANY_ORIGIN in allowed:
        return None
    try:
        normalized = normalize_origin(origin)
    except InvalidOrigin:
        # "null" (a sandboxed frame, a file: page) and anything unparsable.
        normalized = None
    if allowed:
        if normalized in allowed:
            return None
        return f"origin {origin!r} is not an allowed origin"
    if normalized is None or not host_header:
        return f"origin {origin!r} is not this server's (no allowed origins are configured)"
    page = _host_and_port(normalized.split("://", 1)[1], 0)
    target = _host_and_port(host_header, 443 if secure else 80)
    if page is None or page != target:
        return (
            f"origin {origin!r} is not this server's ({host_header!r}); "
            "list the page's origin in the allowed origins to let it connect"
        )
    if local_loopback and not host_is_loopback(host_header):
        return f"Host {host_header!r} is not a loopback name on a loopback listener"
    return None
