"""Whether a peer or a Host header is this machine: the admin server's and the WebSocket
listeners' "loopback clients only" rules read it (broker/http/auth.py, broker/ws)."""

from __future__ import annotations

import ipaddress

_LOOPBACK_NAMES = frozenset({"localhost", "localhost."})


def is_loopback(host: str | None) -> bool:
    if not host:
        return False
    try:
        address = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback


def host_is_loopback(host_header: str | None) -> bool:
    if not host_header:
        # HTTP/1.0 clients may leave it out; then nothing was resolved by name.
        return True
    host = host_header.strip()
    if host.startswith("["):
        host = host[1 : host.find("]")] if "]" in host else host
    elif host.count(":") == 1:
        host = host.split(":", 1)[0]
    return host.lower() in _LOOPBACK_NAMES or is_loopback(host)
