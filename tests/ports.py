"""Free TCP ports for brokers the tests start as processes (which must be told a port)."""

from __future__ import annotations

import socket

#: Ports handed out in this run: the kernel may offer a released port again at once, and
#: two listeners of one broker (STOMP and WebSocket, say) must not be given the same one.
_GIVEN: set[int] = set()


def free_port() -> int:
    """A port nothing listens on now on 127.0.0.1, never one this run handed out before."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port: int = s.getsockname()[1]
        if port not in _GIVEN:
            _GIVEN.add(port)
            return port
