"""What the core knows of a connection, as the parts below the session see it.

``Outbox`` is the core's one way out to a connection (``broker.io.outbox.Outbox`` at the
edge, a list in unit tests).  ``Channel`` is a connection as a subscription sees it:
where its MESSAGE frames go and whether they may go now; ``session.Session`` is the
one implementation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from broker.core.base.clock import Clock


class Outbox(Protocol):
    """The core's way out to a connection: bytes, flow control, and closing."""

    def push(self, parts: tuple[bytes, ...]) -> None: ...

    def hold(self) -> None:
        """Keep what is pushed from now on until as many ``release`` calls (nested)."""

    def release(self) -> None: ...

    def drop_held(self) -> None:
        """Throw away what was pushed since the oldest hold: it will never be durable."""

    def pause_reading(self) -> None: ...

    def resume_reading(self) -> None: ...

    def fail(self, exc: BaseException) -> None:
        """Send the ERROR for ``exc`` and close (for errors found outside a frame's handling)."""

    def close(self) -> None: ...


class Channel(Protocol):
    """A connection as its subscriptions see it."""

    @property
    def id(self) -> str: ...

    @property
    def version(self) -> str:
        """The negotiated STOMP version: how MESSAGE frames are encoded."""
        ...

    @property
    def writable(self) -> bool:
        """False while more waits to be written to it than its high-water mark."""
        ...

    @property
    def outbox(self) -> Outbox: ...

    @property
    def clock(self) -> Clock: ...

    @property
    def client_id(self) -> str | None: ...

    @property
    def closing(self) -> bool: ...

    #: Fan-outs of its messages still under way (``topic.FanOut``).
    fanning: int
