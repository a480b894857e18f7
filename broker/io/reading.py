"""Whether a connection is read: several reasons may stop it at once.

A slow password check, flow control (parked frames past their cap), the turn budget
(a connection whose frames have made much work already lets the others go first) and a
big frame on its way in that memory has no room for yet each pause reading for a reason
of their own; the transport is read again only once none
of them holds it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    import asyncio

LOGIN: Final = "login"
FLOW: Final = "flow"
TURN: Final = "turn"
MEMORY: Final = "memory"


class ReadGate:
    __slots__ = ("_transport", "_why")

    def __init__(self, transport: asyncio.Transport) -> None:
        self._transport = transport
        self._why: set[str] = set()

    @property
    def paused(self) -> bool:
        return bool(self._why)

    def pause(self, why: str) -> None:
        if not self._why:
            self._transport.pause_reading()
        self._why.add(why)

    def resume(self, why: str) -> None:
        if why not in self._why:
            return
        self._why.discard(why)
        if not self._why and not self._transport.is_closing():
            self._transport.resume_reading()
