"""Version and heart-beat negotiation for CONNECT/CONNECTED (pure functions)."""

from __future__ import annotations

from protocol.errors import MalformedFrame, UnsupportedVersion
from protocol.frames import SUPPORTED_VERSIONS, V1_0

_SUPPORTED_TEXT = ",".join(SUPPORTED_VERSIONS)


def negotiate_version(accept_version: str | None) -> str:
    """The version to speak, given the CONNECT frame's ``accept-version`` header.

    STOMP 1.2 "Protocol Negotiation": no header means the client speaks 1.0;
    otherwise the server picks the highest version both support.  The caller should
    send the ERROR frame for ``UnsupportedVersion`` with a ``version`` header
    listing ``SUPPORTED_VERSIONS``.
    """
    if accept_version is None:
        return V1_0
    offered = {part.strip() for part in accept_version.split(",")}
    for version in reversed(SUPPORTED_VERSIONS):
        if version in offered:
            return version
    raise UnsupportedVersion(
        f"None of the requested protocol versions ({accept_version[:128]}) is supported. "
        f"Supported protocol versions are {_SUPPORTED_TEXT}"
    )


def parse_heartbeat(value: str | None) -> tuple[int, int]:
    """Parse a ``heart-beat`` header ("cx,cy", milliseconds); absent means (0, 0)."""
    if value is None:
        return (0, 0)
    parts = value.split(",")
    if len(parts) == 2:
        first, second = parts[0].strip(), parts[1].strip()
        # isdigit() alone would let through non-ASCII digits and int()'s "1_000".
        if all(part.isascii() and part.isdigit() and len(part) < 16 for part in (first, second)):
            return (int(first), int(second))
    raise MalformedFrame(
        f"the heart-beat header {value[:64]!r} is not two non-negative integers separated by a comma"
    )


def negotiate_heartbeat(client: tuple[int, int], server: tuple[int, int]) -> tuple[int, int]:
    """(server sends every N ms, server expects to receive every M ms); 0 means never.

    STOMP 1.2 "Heart-beating": with client heart-beat (cx, cy) and server
    heart-beat (sx, sy), the server sends every max(sx, cy) ms unless either is 0,
    and expects to receive every max(sy, cx) ms unless either is 0.
    """
    client_x, client_y = client
    server_x, server_y = server
    send = 0 if server_x == 0 or client_y == 0 else max(server_x, client_y)
    receive = 0 if server_y == 0 or client_x == 0 else max(server_y, client_x)
    return (send, receive)
